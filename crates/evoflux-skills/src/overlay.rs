//! The runtime-preference overlay, `skill-settings.json`.
//!
//! Users switch a skill's Work/Coding availability, catalog auto-discovery
//! and manual invocation in Settings. Those preferences are theirs, not the
//! bundle's: they live in one file in the config dir, keyed by an opaque
//! identity of the exact discovered variant, and editing them never touches
//! a bundle file (which is how built-in, admin and symlinked bundles stay
//! byte-for-byte read-only while their preferences stay editable).
//!
//! The file is bounded, written by atomic replace at mode 0600 under a
//! cross-process lock, and read-modify-written strictly: a malformed or
//! unsupported file is ignored on read (bundle defaults apply) but every
//! write refuses to overwrite it, so a user's hand-edited file is never
//! silently lost.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::atomic::{AtomicOptions, AtomicWriteError, write_atomic};
use evoflux_core::hash::sha256_hex;
use evoflux_core::lock::{FileLock, LockError};
use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::bundle::{RuntimePrefs, SkillRecord};
use crate::modes::ModeSet;
use crate::name::BundleName;
use crate::origin::SkillOrigin;

/// The overlay's file name in the config dir.
pub const SETTINGS_FILE: &str = "skill-settings.json";
/// Largest overlay file (1 MiB).
pub const MAX_SETTINGS_BYTES: u64 = 1024 * 1024;
/// Most records in the overlay.
pub const MAX_SETTINGS_RECORDS: usize = 5_000;
/// The only supported format version.
pub const SETTINGS_VERSION: u64 = 1;
const ID_PREFIX: &str = "skill_";
const ID_HEX: usize = 32;

/// The opaque identity of one discovered skill variant:
/// `skill_` + 32 hex digits of SHA-256 over source, root identity and stem.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SettingsId(String);

impl SettingsId {
    /// The identity of the bundle `bundle` found through `origin`. Project
    /// and custom roots include their absolute root path, so same-name
    /// skills in two repositories never share preferences; portable sources
    /// do not, so upgrades and moved homes keep them.
    pub fn for_variant(origin: &SkillOrigin, bundle: &BundleName) -> SettingsId {
        let material = format!(
            "{}\0{}\0{}",
            origin.source.label(),
            origin.root_identity(),
            bundle.stem()
        );
        let mut hex = sha256_hex(material.as_bytes()).as_str().to_owned();
        hex.truncate(ID_HEX);
        SettingsId(format!("{ID_PREFIX}{hex}"))
    }

    /// Accepts exactly `skill_` + 32 lowercase hex digits.
    pub fn parse(s: &str) -> Option<SettingsId> {
        let hex = s.strip_prefix(ID_PREFIX)?;
        let ok = hex.len() == ID_HEX
            && hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        ok.then(|| SettingsId(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SettingsId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One stored record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredPrefs {
    /// The skill's name when saved, for people reading the file.
    pub name: String,
    /// The source label when saved, for people reading the file.
    pub source: String,
    pub modes: ModeSet,
    pub allow_implicit_invocation: bool,
    pub user_invocable: bool,
}

impl StoredPrefs {
    pub fn prefs(&self) -> RuntimePrefs {
        RuntimePrefs {
            modes: self.modes,
            allow_implicit_invocation: self.allow_implicit_invocation,
            user_invocable: self.user_invocable,
        }
    }
}

/// The state of the overlay file when read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreStatus {
    /// No file: every skill uses its bundle defaults.
    Missing,
    /// A well-formed file.
    Loaded,
    /// A file that is not a supported overlay; ignored on read, and writes
    /// refuse until the user repairs or removes it.
    Malformed { reason: String },
}

/// One read of the overlay; discovery takes one per pass.
#[derive(Debug, Clone)]
pub struct OverlaySnapshot {
    pub path: PathBuf,
    pub status: StoreStatus,
    pub records: BTreeMap<SettingsId, StoredPrefs>,
    /// Records that could not be used, by their key, with the reason.
    pub invalid: BTreeMap<String, String>,
}

impl OverlaySnapshot {
    /// An overlay with no records (no file).
    pub fn empty(path: impl Into<PathBuf>) -> Self {
        OverlaySnapshot {
            path: path.into(),
            status: StoreStatus::Missing,
            records: BTreeMap::new(),
            invalid: BTreeMap::new(),
        }
    }

    pub fn get(&self, id: &SettingsId) -> Option<&StoredPrefs> {
        self.records.get(id)
    }

    /// Store-level diagnostics (a malformed file), for `info` and Settings.
    pub fn diagnostics(&self) -> Diagnostics {
        let mut out = Diagnostics::new();
        match &self.status {
            StoreStatus::Missing | StoreStatus::Loaded => {}
            StoreStatus::Malformed { reason } => out.push(
                Diagnostic::warning(
                    "skill/settings-store-malformed",
                    format!(
                        "{reason}; skill preferences use bundle defaults and cannot be saved \
                         until you back up, then repair or remove this file"
                    ),
                )
                .with_file(&self.path),
            ),
        }
        out
    }
}

/// Applies the overlay to a record: the last metadata layer, applied to
/// every record (valid or not) before mode-aware selection. Bundled skills
/// can only be narrowed: their code-owned modes are never widened.
pub fn apply_overlay(record: &mut SkillRecord, snapshot: &OverlaySnapshot) {
    if let Some(reason) = snapshot.invalid.get(record.settings_id.as_str()) {
        record.diagnostics.push(
            Diagnostic::warning(
                "skill/runtime-settings-invalid",
                format!(
                    "the saved preferences for this skill are invalid ({reason}); bundle \
                     defaults apply. Save the preferences again or reset them"
                ),
            )
            .with_file(&snapshot.path)
            .with_field(format!("skills.{}", record.settings_id)),
        );
    }
    record.prefs = record.defaults;
    record.settings_overridden = false;
    if let Some(stored) = snapshot.get(&record.settings_id) {
        record.prefs = clamp(record, stored.prefs());
        record.settings_overridden = true;
    }
    record.settings_editable = record.valid;
}

fn clamp(record: &SkillRecord, mut prefs: RuntimePrefs) -> RuntimePrefs {
    if let Some(code) = record.origin.source.code_modes() {
        prefs.modes = prefs.modes.intersect(code);
    }
    prefs
}

/// A change to some of the preferences; `None` keeps the current value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct PrefsPatch {
    pub modes: Option<ModeSet>,
    pub allow_implicit_invocation: Option<bool>,
    pub user_invocable: Option<bool>,
}

/// Why a preference write failed. The file is untouched in every case.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error(
        "{} is malformed ({reason}); it was left unchanged. Back it up, then repair or remove it before saving skill preferences",
        path.display()
    )]
    Malformed { path: PathBuf, reason: String },
    #[error(
        "skill `{name}` is invalid, so its runtime preferences cannot be edited; repair the bundle first"
    )]
    NotEditable { name: String },
    #[error("the overlay would exceed its limit ({what}); reset preferences you no longer need")]
    TooLarge { what: String },
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Write(#[from] AtomicWriteError),
    #[error("cannot access {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl SettingsError {
    pub fn code(&self) -> &'static str {
        match self {
            SettingsError::Malformed { .. } => "skill/settings-store-malformed",
            SettingsError::NotEditable { .. } => "skill/settings-not-editable",
            SettingsError::TooLarge { .. } => "skill/settings-too-large",
            SettingsError::Lock(_) => "skill/settings-locked",
            SettingsError::Write(_) | SettingsError::Io { .. } => "skill/settings-write-failed",
        }
    }
}

/// The overlay file and how to reach it.
#[derive(Debug, Clone)]
pub struct SkillSettingsStore {
    path: PathBuf,
    lock_wait: Duration,
}

/// The whole file read strictly: its skills map, or why it is unusable.
enum Raw {
    Missing,
    Skills(Map<String, Value>),
    Malformed(String),
}

impl SkillSettingsStore {
    /// The overlay in `config_dir`.
    pub fn in_config_dir(config_dir: &Path) -> Self {
        Self::at(config_dir.join(SETTINGS_FILE))
    }

    pub fn at(path: impl Into<PathBuf>) -> Self {
        SkillSettingsStore {
            path: path.into(),
            lock_wait: Duration::from_secs(10),
        }
    }

    #[must_use]
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads the overlay. Never fails: an unreadable or malformed file
    /// yields an empty snapshot with a `Malformed` status.
    pub fn read(&self) -> OverlaySnapshot {
        let mut snap = OverlaySnapshot::empty(&self.path);
        match self.read_raw() {
            Ok(Raw::Missing) => {}
            Ok(Raw::Malformed(reason)) => snap.status = StoreStatus::Malformed { reason },
            Err(e) => {
                snap.status = StoreStatus::Malformed {
                    reason: format!("cannot read it: {e}"),
                };
            }
            Ok(Raw::Skills(skills)) => {
                snap.status = StoreStatus::Loaded;
                for (key, value) in skills {
                    let Some(id) = SettingsId::parse(&key) else {
                        snap.invalid
                            .insert(key, "the key is not a skill identity".to_owned());
                        continue;
                    };
                    match serde_json::from_value::<StoredPrefs>(value) {
                        Ok(p) => {
                            snap.records.insert(id, p);
                        }
                        Err(e) => {
                            snap.invalid.insert(key, e.to_string());
                        }
                    }
                }
            }
        }
        snap
    }

    fn read_raw(&self) -> io::Result<Raw> {
        let file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Raw::Missing),
            Err(e) => return Err(e),
        };
        let mut bytes = Vec::new();
        file.take(MAX_SETTINGS_BYTES + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_SETTINGS_BYTES {
            return Ok(Raw::Malformed(format!(
                "it is larger than {} MiB",
                MAX_SETTINGS_BYTES / (1024 * 1024)
            )));
        }
        let value: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => return Ok(Raw::Malformed(format!("it is not valid JSON ({e})"))),
        };
        let Value::Object(mut top) = value else {
            return Ok(Raw::Malformed("it is not a JSON object".to_owned()));
        };
        match top.get("version").and_then(Value::as_u64) {
            Some(SETTINGS_VERSION) => {}
            _ => {
                return Ok(Raw::Malformed(format!(
                    "unsupported version {} (expected {SETTINGS_VERSION})",
                    top.get("version")
                        .map_or("(none)".to_owned(), Value::to_string)
                )));
            }
        }
        let skills = match top.remove("skills") {
            None => Map::new(),
            Some(Value::Object(m)) => m,
            Some(_) => return Ok(Raw::Malformed("`skills` is not an object".to_owned())),
        };
        if skills.len() > MAX_SETTINGS_RECORDS {
            return Ok(Raw::Malformed(format!(
                "it has {} records (limit {MAX_SETTINGS_RECORDS})",
                skills.len()
            )));
        }
        Ok(Raw::Skills(skills))
    }

    /// Changes some preferences of `record` and returns the effective ones.
    /// The record's bundle files are never written.
    pub fn set(
        &self,
        record: &SkillRecord,
        patch: PrefsPatch,
    ) -> Result<RuntimePrefs, SettingsError> {
        if !record.settings_editable {
            return Err(SettingsError::NotEditable {
                name: record.name.clone(),
            });
        }
        self.modify(|skills| {
            let current = skills
                .get(record.settings_id.as_str())
                .and_then(|v| serde_json::from_value::<StoredPrefs>(v.clone()).ok())
                .map_or(record.defaults, |s| s.prefs());
            let mut next = RuntimePrefs {
                modes: patch.modes.unwrap_or(current.modes),
                allow_implicit_invocation: patch
                    .allow_implicit_invocation
                    .unwrap_or(current.allow_implicit_invocation),
                user_invocable: patch.user_invocable.unwrap_or(current.user_invocable),
            };
            next = clamp(record, next);
            let stored = StoredPrefs {
                name: record.name.clone(),
                source: record.origin.source.label(),
                modes: next.modes,
                allow_implicit_invocation: next.allow_implicit_invocation,
                user_invocable: next.user_invocable,
            };
            let value = serde_json::to_value(&stored).map_err(|e| SettingsError::Io {
                path: PathBuf::new(),
                source: io::Error::other(e),
            })?;
            skills.insert(record.settings_id.as_str().to_owned(), value);
            Ok(next)
        })
    }

    /// Removes the preferences of one variant so its bundle defaults apply
    /// again. Returns whether a record existed.
    pub fn reset(&self, id: &SettingsId) -> Result<bool, SettingsError> {
        self.modify(|skills| Ok(skills.remove(id.as_str()).is_some()))
    }

    /// Locked read-modify-write. Refuses malformed files; deletes the file
    /// when the last record goes.
    fn modify<T>(
        &self,
        change: impl FnOnce(&mut Map<String, Value>) -> Result<T, SettingsError>,
    ) -> Result<T, SettingsError> {
        let io_err = |source| SettingsError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir).map_err(io_err)?;
        }
        let lock = FileLock::acquire(&self.path, self.lock_wait)?;
        let _ = fs::set_permissions(lock.path(), fs::Permissions::from_mode(0o600));
        let mut skills = match self.read_raw().map_err(io_err)? {
            Raw::Missing => Map::new(),
            Raw::Skills(m) => m,
            Raw::Malformed(reason) => {
                return Err(SettingsError::Malformed {
                    path: self.path.clone(),
                    reason,
                });
            }
        };
        let out = change(&mut skills)?;
        if skills.is_empty() {
            match fs::remove_file(&self.path) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(io_err(e)),
            }
            return Ok(out);
        }
        if skills.len() > MAX_SETTINGS_RECORDS {
            return Err(SettingsError::TooLarge {
                what: format!("{MAX_SETTINGS_RECORDS} records"),
            });
        }
        let mut top = Map::new();
        top.insert("skills".to_owned(), Value::Object(skills));
        top.insert("version".to_owned(), Value::from(SETTINGS_VERSION));
        let text = serde_json::to_string_pretty(&sorted(Value::Object(top)))
            .map_err(|e| io_err(io::Error::other(e)))?
            + "\n";
        if text.len() as u64 > MAX_SETTINGS_BYTES {
            return Err(SettingsError::TooLarge {
                what: "1 MiB".to_owned(),
            });
        }
        write_atomic(&self.path, text.as_bytes(), AtomicOptions::SECRET)?;
        drop(lock);
        Ok(out)
    }
}

/// Rebuilds every object with keys inserted in sorted order, so the output
/// is sorted whether or not the JSON map keeps insertion order.
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let ordered: BTreeMap<String, Value> = map.into_iter().collect();
            Value::Object(ordered.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::origin::{CompatDir, SkillSource};

    #[test]
    fn identity_shape_and_root_sensitivity() {
        let stem = BundleName::single("review").unwrap();
        let a = SettingsId::for_variant(
            &SkillOrigin::new(
                SkillSource::Project(CompatDir::Agents),
                "/repo-a/.agents/skills",
            ),
            &stem,
        );
        let b = SettingsId::for_variant(
            &SkillOrigin::new(
                SkillSource::Project(CompatDir::Agents),
                "/repo-b/.agents/skills",
            ),
            &stem,
        );
        assert_ne!(a, b);
        assert!(SettingsId::parse(a.as_str()).is_some());
        assert_eq!(a.as_str().len(), 6 + 32);
        // Portable sources ignore the root.
        let u1 = SettingsId::for_variant(
            &SkillOrigin::new(
                SkillSource::User(CompatDir::Agents),
                "/home/a/.agents/skills",
            ),
            &stem,
        );
        let u2 = SettingsId::for_variant(
            &SkillOrigin::new(
                SkillSource::User(CompatDir::Agents),
                "/home/b/.agents/skills",
            ),
            &stem,
        );
        assert_eq!(u1, u2);
        for bad in [
            "skill_",
            "skill_XYZ",
            "review",
            "skill_0123456789abcdef0123456789ABCDEF",
        ] {
            assert!(SettingsId::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn sorted_output_is_sorted() {
        let v = serde_json::json!({"b": 1, "a": {"z": 1, "c": [ {"y": 1, "x": 2} ]}});
        assert_eq!(
            serde_json::to_string(&sorted(v)).unwrap(),
            r#"{"a":{"c":[{"x":2,"y":1}],"z":1},"b":1}"#
        );
    }
}
