//! Installation records: what the registry remembers about one installed,
//! linked or bundled plugin, and the capabilities a client may offer for it.
//!
//! Installation ids name folders (`installed/<id>`, `data/<id>`), so they
//! are validated as exactly 32 lowercase hex digits wherever they enter:
//! on the command line, in an API path and when the registry is read.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

use evoflux_core::hash::{ContentHash, sha256_hex};
use serde::{Deserialize, Serialize};

/// A registry key: 32 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct InstallationId(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a plugin installation id: expected 32 lowercase hex digits")]
pub struct InvalidInstallationId(pub String);

impl InstallationId {
    /// A fresh id for a new installation (a UUIDv7 without hyphens, so ids
    /// sort roughly by creation time).
    pub fn generate() -> InstallationId {
        InstallationId(uuid::Uuid::now_v7().simple().to_string())
    }

    /// The stable id of a release-bundled plugin: the same name always gets
    /// the same id, on every machine and in every release.
    pub fn builtin(name: &str) -> InstallationId {
        let digest = sha256_hex(format!("evoflux:builtin-plugin:{name}").as_bytes());
        InstallationId(digest.as_str()[..32].to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for InstallationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for InstallationId {
    type Err = InvalidInstallationId;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let ok = s.len() == 32
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if ok {
            Ok(InstallationId(s.to_owned()))
        } else {
            Err(InvalidInstallationId(s.to_owned()))
        }
    }
}

impl TryFrom<String> for InstallationId {
    type Error = InvalidInstallationId;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<InstallationId> for String {
    fn from(id: InstallationId) -> String {
        id.0
    }
}

/// Where an installation's files come from. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceType {
    /// Copied into `installed/<id>/<version-or-digest>/`; managed by evoflux.
    Installed,
    /// A developer folder used in place, never copied.
    Linked,
    /// Shipped with the release; virtual, never persisted.
    Builtin,
}

/// Who else manages an installation. Closed; an installation managed by
/// another system is read-only here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ManagedBy {
    Conductor,
}

/// One registry record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PluginInstallation {
    pub id: InstallationId,
    pub name: String,
    pub version: Option<String>,
    pub description: Option<String>,
    /// The plugin root (the folder holding `plugin.json`).
    pub root: PathBuf,
    pub source_type: SourceType,
    /// The source folder or archive it came from, or
    /// `evoflux://builtin/<dir>` for bundled plugins.
    pub source_ref: String,
    pub content_sha256: Option<ContentHash>,
    pub enabled: bool,
    #[serde(default)]
    pub managed_by: Option<ManagedBy>,
    #[serde(default)]
    pub managed_project_id: Option<String>,
    #[serde(default)]
    pub managed_resource_id: Option<String>,
    #[serde(default)]
    pub managed_version_id: Option<String>,
    /// ISO-8601 UTC.
    pub installed_at: String,
    /// ISO-8601 UTC.
    pub updated_at: String,
}

impl PluginInstallation {
    /// A new registry record for a package installed or linked now, not
    /// managed by anyone else.
    #[allow(clippy::too_many_arguments)]
    pub fn new_record(
        id: InstallationId,
        manifest: crate::manifest::PluginManifest,
        root: PathBuf,
        source_type: SourceType,
        source_ref: String,
        content_sha256: Option<ContentHash>,
        enabled: bool,
    ) -> Self {
        let now = utc_now();
        PluginInstallation {
            id,
            name: manifest.name,
            version: manifest.version,
            description: manifest.description,
            root,
            source_type,
            source_ref,
            content_sha256,
            enabled,
            managed_by: None,
            managed_project_id: None,
            managed_resource_id: None,
            managed_version_id: None,
            installed_at: now.clone(),
            updated_at: now,
        }
    }

    pub const fn is_builtin(&self) -> bool {
        match self.source_type {
            SourceType::Builtin => true,
            SourceType::Installed | SourceType::Linked => false,
        }
    }

    /// What a client may do with this installation. Derived from the
    /// source type and management, never from labels, so clients do not
    /// have to infer permissions.
    pub fn capabilities(&self) -> Capabilities {
        if self.managed_by.is_some() {
            return Capabilities::NONE;
        }
        match self.source_type {
            SourceType::Builtin => Capabilities::NONE,
            SourceType::Installed => Capabilities {
                editable: true,
                packable: true,
                updatable: true,
                can_disable: true,
                can_uninstall: true,
            },
            // A linked folder is updated by editing it.
            SourceType::Linked => Capabilities {
                editable: true,
                packable: true,
                updatable: false,
                can_disable: true,
                can_uninstall: true,
            },
        }
    }
}

/// The lifecycle operations a client may offer for an installation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    pub editable: bool,
    pub packable: bool,
    pub updatable: bool,
    pub can_disable: bool,
    pub can_uninstall: bool,
}

impl Capabilities {
    pub const NONE: Capabilities = Capabilities {
        editable: false,
        packable: false,
        updatable: false,
        can_disable: false,
        can_uninstall: false,
    };
}

/// The timestamp of bundled records: they have no install time of their own.
pub const EPOCH_TIMESTAMP: &str = "1970-01-01T00:00:00+00:00";

/// The current time as ISO-8601 UTC with microseconds
/// (`2026-05-01T12:00:00.123456+00:00`).
pub fn utc_now() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_utc(since.as_secs(), since.subsec_micros())
}

/// Formats seconds since the epoch (proleptic Gregorian, UTC).
fn format_utc(secs: u64, micros: u32) -> String {
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}+00:00",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        u32::try_from(m).unwrap_or(1),
        u32::try_from(d).unwrap_or(1),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_validated() {
        assert!("../escape".parse::<InstallationId>().is_err());
        assert!(
            "ABCDEF0123456789ABCDEF0123456789"
                .parse::<InstallationId>()
                .is_err()
        );
        assert!(
            "0123456789abcdef0123456789abcdef"
                .parse::<InstallationId>()
                .is_ok()
        );
        let fresh = InstallationId::generate();
        assert_eq!(fresh.as_str().parse::<InstallationId>(), Ok(fresh.clone()));
        let e = serde_json::from_value::<InstallationId>(serde_json::json!("../escape"));
        assert!(e.is_err());
    }

    #[test]
    fn builtin_ids_are_deterministic() {
        let a = InstallationId::builtin("evoflux-git-kit");
        assert_eq!(a, InstallationId::builtin("evoflux-git-kit"));
        assert_ne!(a, InstallationId::builtin("other"));
        assert_eq!(
            a.as_str(),
            &sha256_hex(b"evoflux:builtin-plugin:evoflux-git-kit").as_str()[..32]
        );
    }

    #[test]
    fn timestamps() {
        assert_eq!(format_utc(0, 0), "1970-01-01T00:00:00.000000+00:00");
        assert_eq!(
            format_utc(951_782_400 + 86_399, 5),
            "2000-02-29T23:59:59.000005+00:00"
        );
        assert_eq!(
            format_utc(1_767_225_600, 0),
            "2026-01-01T00:00:00.000000+00:00"
        );
        assert!(utc_now().ends_with("+00:00"));
    }

    #[test]
    fn bundled_capabilities_are_all_false() {
        let rec = PluginInstallation {
            id: InstallationId::builtin("x"),
            name: "x".into(),
            version: None,
            description: None,
            root: PathBuf::from("/x"),
            source_type: SourceType::Builtin,
            source_ref: "evoflux://builtin/x".into(),
            content_sha256: None,
            enabled: true,
            managed_by: None,
            managed_project_id: None,
            managed_resource_id: None,
            managed_version_id: None,
            installed_at: EPOCH_TIMESTAMP.into(),
            updated_at: EPOCH_TIMESTAMP.into(),
        };
        assert_eq!(rec.capabilities(), Capabilities::NONE);
        let linked = PluginInstallation {
            source_type: SourceType::Linked,
            ..rec
        };
        assert!(!linked.capabilities().updatable);
        assert!(linked.capabilities().can_uninstall);
    }
}
