//! `registry.json`: the user's managed installations.
//!
//! `{"version": 1, "installations": [...], "kept_data": [...]}`, written
//! with sorted keys, two-space indent and a trailing newline, atomically
//! (temp file, fsync, rename) and only while holding the cross-process lock
//! beside it. `kept_data` names the `data/<id>` folders that outlived their
//! installation (an uninstall that kept `PLUGIN_DATA`), so a reinstall of
//! the same plugin can reattach them; it is written only when it is not
//! empty, so a registry without kept data reads the same in older builds.
//!
//! Reads come in two strengths. [`Registry::read`] is for listings: a
//! missing file is empty and a malformed one is reported and treated as
//! empty. Mutations go through [`Registry::lock`], whose strict read fails
//! on a malformed file, so a registry evoflux cannot read is never
//! overwritten. Records that claim `source_type: builtin` are ignored (with
//! a warning) on read, so they disappear at the next write, and are
//! rejected on write: bundled plugins are virtual release records.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use evoflux_core::Diagnostic;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_core::lock::FileLock;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::PluginError;
use crate::installation::{InstallationId, PluginInstallation};

/// The format version this build reads and writes.
pub const REGISTRY_VERSION: u64 = 1;
/// Largest registry read (2 MiB).
pub const MAX_REGISTRY_BYTES: u64 = 2 * 1024 * 1024;
/// How long a mutation waits for another process to finish its own.
pub const LOCK_WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RegistryFile {
    version: u64,
    installations: Vec<Value>,
    #[serde(default)]
    kept_data: Vec<KeptData>,
}

/// The data folder of an uninstalled installation, kept on request (the
/// default): `data/<id>/` with its `PLUGIN_DATA` and credentials.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeptData {
    /// The installation id the folder belonged to (and is named after).
    pub id: InstallationId,
    /// The plugin's manifest name: a new installation of this name
    /// reattaches the folder.
    pub name: String,
    pub version: Option<String>,
    /// ISO-8601 UTC.
    pub kept_at: String,
}

/// A lenient read: what a listing shows.
#[derive(Debug, Clone, Default)]
pub struct RegistryRead {
    pub installations: Vec<PluginInstallation>,
    /// Data folders kept after uninstalls, oldest first.
    pub kept_data: Vec<KeptData>,
    /// A malformed registry (error) or ignored builtin records (warnings).
    pub diagnostics: Vec<Diagnostic>,
}

/// The registry file of one data dir.
#[derive(Debug, Clone)]
pub struct Registry {
    path: PathBuf,
    lock_wait: Duration,
}

impl Registry {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Registry {
            path: path.into(),
            lock_wait: LOCK_WAIT,
        }
    }

    /// Overrides how long [`lock`](Self::lock) waits.
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads for display: never fails, reports instead.
    pub fn read(&self) -> RegistryRead {
        match self.read_strict() {
            Ok(read) => read,
            Err(e) => RegistryRead {
                installations: Vec::new(),
                kept_data: Vec::new(),
                diagnostics: vec![e.to_diagnostic()],
            },
        }
    }

    /// Reads for a mutation: a malformed file is an error.
    pub fn read_strict(&self) -> Result<RegistryRead, PluginError> {
        let malformed = |reason: String| PluginError::RegistryMalformed {
            path: self.path.clone(),
            reason,
        };
        let file = match fs::File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(RegistryRead::default()),
            Err(e) => return Err(PluginError::io("read", &self.path)(e)),
        };
        let mut bytes = Vec::new();
        file.take(MAX_REGISTRY_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(PluginError::io("read", &self.path))?;
        if bytes.len() as u64 > MAX_REGISTRY_BYTES {
            return Err(malformed(format!(
                "it is larger than {} MiB",
                MAX_REGISTRY_BYTES / 1024 / 1024
            )));
        }
        let doc: RegistryFile =
            serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
        if doc.version != REGISTRY_VERSION {
            return Err(malformed(format!(
                "version {} is not supported (this evoflux reads version {REGISTRY_VERSION})",
                doc.version
            )));
        }
        let mut out = RegistryRead::default();
        for (i, raw) in doc.installations.into_iter().enumerate() {
            if raw.get("source_type").and_then(Value::as_str) == Some("builtin") {
                out.diagnostics.push(
                    Diagnostic::warning(
                        "plugin/registry-builtin-ignored",
                        format!(
                            "installation {i} claims `source_type: builtin`; bundled plugins are never persisted, so it is ignored and dropped at the next write"
                        ),
                    )
                    .with_file(&self.path)
                    .with_field(format!("installations.{i}")),
                );
                continue;
            }
            let record: PluginInstallation = serde_json::from_value(raw)
                .map_err(|e| malformed(format!("installation {i}: {e}")))?;
            if out.installations.iter().any(|r| r.id == record.id) {
                return Err(malformed(format!(
                    "installation id `{}` appears twice",
                    record.id
                )));
            }
            out.installations.push(record);
        }
        for kept in &doc.kept_data {
            if out.installations.iter().any(|r| r.id == kept.id) {
                return Err(malformed(format!(
                    "kept data `{}` belongs to an installation that still exists",
                    kept.id
                )));
            }
        }
        out.kept_data = doc.kept_data;
        Ok(out)
    }

    /// Takes the cross-process lock and reads strictly. The guard is the
    /// only way to write.
    pub fn lock(&self) -> Result<RegistryGuard<'_>, PluginError> {
        if let Some(dir) = self.path.parent() {
            evoflux_core::private::create_private_dir(dir)
                .map_err(PluginError::io("create", dir))?;
        }
        let lock = FileLock::acquire(&self.path, self.lock_wait)?;
        let read = self.read_strict()?;
        Ok(RegistryGuard {
            registry: self,
            _lock: lock,
            installations: read.installations,
            kept_data: read.kept_data,
        })
    }
}

/// The registry, locked for one mutation.
#[derive(Debug)]
pub struct RegistryGuard<'a> {
    registry: &'a Registry,
    _lock: FileLock,
    installations: Vec<PluginInstallation>,
    kept_data: Vec<KeptData>,
}

impl RegistryGuard<'_> {
    /// The records as of the locked read (or the last commit).
    pub fn installations(&self) -> &[PluginInstallation] {
        &self.installations
    }

    pub fn find(&self, id: &InstallationId) -> Option<&PluginInstallation> {
        self.installations.iter().find(|r| &r.id == id)
    }

    /// The kept data folders as of the locked read (or the last commit).
    pub fn kept_data(&self) -> &[KeptData] {
        &self.kept_data
    }

    /// Writes `installations` atomically, the kept data unchanged. Builtin
    /// records are refused.
    pub fn commit(&mut self, installations: Vec<PluginInstallation>) -> Result<(), PluginError> {
        let kept = self.kept_data.clone();
        self.commit_with_kept(installations, kept)
    }

    /// Writes `installations` and `kept_data` atomically, in one write.
    /// Builtin records are refused, and so is kept data of an installation
    /// that is still listed.
    pub fn commit_with_kept(
        &mut self,
        installations: Vec<PluginInstallation>,
        kept_data: Vec<KeptData>,
    ) -> Result<(), PluginError> {
        if let Some(b) = installations.iter().find(|r| r.is_builtin()) {
            return Err(PluginError::BuiltinPersisted(b.id.clone()));
        }
        if let Some(k) = kept_data
            .iter()
            .find(|k| installations.iter().any(|r| r.id == k.id))
        {
            return Err(PluginError::RegistryMalformed {
                path: self.registry.path.clone(),
                reason: format!(
                    "kept data `{}` would belong to an installation that still exists",
                    k.id
                ),
            });
        }
        let text = render(&installations, &kept_data)?;
        let path = &self.registry.path;
        write_atomic(path, text.as_bytes(), AtomicOptions::default()).map_err(|e| {
            PluginError::Io {
                action: "write",
                path: path.clone(),
                source: e.source,
            }
        })?;
        self.installations = installations;
        self.kept_data = kept_data;
        Ok(())
    }
}

/// The file text: sorted keys, two-space indent, trailing newline.
fn render(
    installations: &[PluginInstallation],
    kept_data: &[KeptData],
) -> Result<String, PluginError> {
    let mut doc = serde_json::json!({
        "version": REGISTRY_VERSION,
        "installations": installations,
    });
    if !kept_data.is_empty() {
        doc["kept_data"] = serde_json::json!(kept_data);
    }
    let text = serde_json::to_string_pretty(&sorted(doc)).map_err(|e| PluginError::Io {
        action: "serialize",
        path: PathBuf::from("registry.json"),
        source: io::Error::other(e),
    })?;
    Ok(text + "\n")
}

/// `value` with every object's keys in sorted order (whatever map type
/// `serde_json` was built with).
fn sorted(value: Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = Map::new();
            for (k, v) in entries {
                out.insert(k, sorted(v));
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::installation::{EPOCH_TIMESTAMP, InstallationId, SourceType};

    fn record(source_type: SourceType) -> PluginInstallation {
        PluginInstallation {
            id: InstallationId::generate(),
            name: "demo".into(),
            version: Some("1.0.0".into()),
            description: None,
            root: PathBuf::from("/tmp/demo"),
            source_type,
            source_ref: "/src/demo".into(),
            content_sha256: None,
            enabled: false,
            managed_by: None,
            managed_project_id: None,
            managed_resource_id: None,
            managed_version_id: None,
            installed_at: EPOCH_TIMESTAMP.into(),
            updated_at: EPOCH_TIMESTAMP.into(),
        }
    }

    #[test]
    fn missing_registry_is_empty_and_writes_are_sorted() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::new(dir.path().join("agent-plugins/registry.json"));
        assert!(reg.read_strict().unwrap().installations.is_empty());
        let rec = record(SourceType::Installed);
        reg.lock().unwrap().commit(vec![rec.clone()]).unwrap();
        let text = fs::read_to_string(reg.path()).unwrap();
        assert!(text.ends_with("}\n"));
        assert!(text.starts_with("{\n  \"installations\": [\n    {\n      \"content_sha256\""));
        assert_eq!(reg.read().installations, [rec]);
    }

    #[test]
    fn builtin_records_are_ignored_on_read_and_refused_on_write() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::new(dir.path().join("registry.json"));
        let mut builtin = serde_json::to_value(record(SourceType::Builtin)).unwrap();
        builtin["id"] = serde_json::json!("../escape");
        let kept = record(SourceType::Linked);
        fs::write(
            reg.path(),
            serde_json::to_vec(&serde_json::json!({
                "version": 1,
                "installations": [builtin, kept],
            }))
            .unwrap(),
        )
        .unwrap();
        let read = reg.read();
        assert_eq!(read.installations, std::slice::from_ref(&kept));
        assert_eq!(read.diagnostics[0].code, "plugin/registry-builtin-ignored");
        let mut guard = reg.lock().unwrap();
        let err = guard.commit(vec![record(SourceType::Builtin)]).unwrap_err();
        assert_eq!(err.code(), "plugin/registry-builtin-record");
        assert!(err.to_string().contains("cannot be persisted"));
        // The next write drops the hand-written builtin record.
        guard.commit(vec![kept]).unwrap();
        drop(guard);
        assert!(!fs::read_to_string(reg.path()).unwrap().contains("builtin"));
    }

    #[test]
    fn malformed_registry_is_reported_and_never_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::new(dir.path().join("registry.json"));
        for bad in [
            "{not json",
            r#"{"version": 2, "installations": []}"#,
            r#"{"version": 1, "installations": [], "extra": 1}"#,
            r#"{"version": 1, "installations": [{"id": "../escape"}]}"#,
        ] {
            fs::write(reg.path(), bad).unwrap();
            let read = reg.read();
            assert!(read.installations.is_empty());
            assert_eq!(
                read.diagnostics[0].code, "plugin/registry-malformed",
                "{bad}"
            );
            let err = reg.lock().unwrap_err();
            assert_eq!(err.code(), "plugin/registry-malformed");
            assert!(err.to_string().contains("repair"), "{err}");
            assert_eq!(fs::read_to_string(reg.path()).unwrap(), bad);
        }
    }
}
