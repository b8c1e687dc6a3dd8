//! `[storage]`: the retention policy of the data directory — how long
//! sessions and their artifacts are kept. Only the user's and the admin's
//! files may set it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::layer::ConfigScope;
use crate::diagnostic::{Diagnostic, Diagnostics};

/// `[storage]`: the retention policy of the data directory. Unset keys
/// keep everything; only the user's and the admin's files may set it (a
/// repository deciding what of yours is deleted would be wrong).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageConfig {
    /// Sessions not changed for this many days are deleted with their
    /// children, journals and artifacts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_days: Option<u64>,
    /// When the sessions' files (journals, artifacts, Work folders) pass
    /// this many MiB, the least recently changed sessions are deleted until
    /// they fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_total_mib: Option<u64>,
}

impl StorageConfig {
    /// Whether no retention is configured (everything is kept).
    pub fn is_unset(&self) -> bool {
        self.max_age_days.is_none() && self.max_total_mib.is_none()
    }
}

/// `[storage]`: values of at least 1, and only in the user's or admin's
/// file.
pub(super) fn check_storage(
    path: &Path,
    scope: ConfigScope,
    storage: &StorageConfig,
    diags: &mut Diagnostics,
) {
    if let ConfigScope::Project(_) = scope {
        diags.push(
            Diagnostic::error(
                "config/project-storage",
                "a repository's config cannot set [storage]: what of your sessions is kept \
                 is yours to decide; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("storage"),
        );
        return;
    }
    for (field, value) in [
        ("storage.max_age_days", storage.max_age_days),
        ("storage.max_total_mib", storage.max_total_mib),
    ] {
        if value == Some(0) {
            diags.push(
                Diagnostic::error(
                    "config/storage-invalid",
                    format!("{field} must be at least 1; leave it out to keep everything"),
                )
                .with_file(path)
                .with_field(field),
            );
        }
    }
}
