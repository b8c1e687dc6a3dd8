//! `[store]`: which database holds the sessions, and where their artifacts
//! are kept for every replica. Only the user's and the admin's files may
//! set it: a repository naming a database would receive every transcript.

use serde::{Deserialize, Serialize};

/// `[store]`: the session database. Unset, sessions live in the data
/// directory's SQLite file; `url = "postgres://…"` puts them on a
/// PostgreSQL server that several `evoflux serve` replicas share. Only the
/// user's or the admin's file may set it: a repository naming a database
/// would receive every transcript.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoreConfig {
    /// The database URL (`postgres://user@host:5432/db`). Checked when the
    /// store opens; `EVOFLUX_DATABASE_URL` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Where sessions' artifacts are kept for every replica:
    /// `s3://bucket/prefix` (endpoint and credentials from the `AWS_*`
    /// variables) or `file:///dir`. Unset, only in the data directory.
    /// `EVOFLUX_ARTIFACTS_URL` overrides it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifacts: Option<String>,
}

impl StoreConfig {
    pub fn is_unset(&self) -> bool {
        self.url.is_none() && self.artifacts.is_none()
    }
}
