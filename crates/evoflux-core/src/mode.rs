//! `AppMode`: the canonical runtime mode of a session.
//!
//! A request selects a mode once; after a session exists its persisted mode
//! is authoritative. Parsing is forgiving about case and surrounding
//! whitespace (users type `Coding` or ` work `) and strict about everything
//! else, so a typo never silently falls back to a default mode.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The two modes evoflux runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AppMode {
    /// General work: a per-session folder, no repository indexing.
    Work,
    /// Software work in one or more repositories.
    Coding,
}

impl AppMode {
    /// Every mode, in a fixed order.
    pub const ALL: [AppMode; 2] = [AppMode::Work, AppMode::Coding];

    /// The mode a new session opens in: the one `requested`, else Coding
    /// when workspaces are named (the folders the user named are where the
    /// agent is to work, and a Work session's workspace is its own folder),
    /// else Work. Every way of opening a session (the CLI, the server, a
    /// schedule) takes its mode from this one rule.
    pub const fn for_new_session(requested: Option<AppMode>, workspaces_named: bool) -> AppMode {
        match (requested, workspaces_named) {
            (Some(mode), _) => mode,
            (None, true) => AppMode::Coding,
            (None, false) => AppMode::Work,
        }
    }

    /// The canonical lowercase name.
    pub const fn as_str(self) -> &'static str {
        match self {
            AppMode::Work => "work",
            AppMode::Coding => "coding",
        }
    }
}

impl fmt::Display for AppMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode string that is neither `work` nor `coding`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{given}`: expected one of `work`, `coding`")]
pub struct ParseModeError {
    /// What the user wrote, untrimmed.
    pub given: String,
}

impl FromStr for AppMode {
    type Err = ParseModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        AppMode::ALL
            .into_iter()
            .find(|m| t.eq_ignore_ascii_case(m.as_str()))
            .ok_or_else(|| ParseModeError {
                given: s.to_owned(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_session_is_coding_when_workspaces_are_named_and_no_mode_is() {
        assert_eq!(AppMode::for_new_session(None, false), AppMode::Work);
        assert_eq!(AppMode::for_new_session(None, true), AppMode::Coding);
        assert_eq!(
            AppMode::for_new_session(Some(AppMode::Work), true),
            AppMode::Work
        );
        assert_eq!(
            AppMode::for_new_session(Some(AppMode::Coding), false),
            AppMode::Coding
        );
    }

    #[test]
    fn parses_case_insensitively_and_trimmed() {
        assert_eq!("work".parse::<AppMode>(), Ok(AppMode::Work));
        assert_eq!("  Coding\n".parse::<AppMode>(), Ok(AppMode::Coding));
        assert_eq!("WORK".parse::<AppMode>(), Ok(AppMode::Work));
    }

    #[test]
    fn rejects_anything_else_naming_accepted_values() {
        for bad in ["", "code", "work mode", "wörk", "coding!"] {
            let err = bad.parse::<AppMode>().unwrap_err();
            assert_eq!(err.given, bad);
            let msg = err.to_string();
            assert!(msg.contains("`work`") && msg.contains("`coding`"), "{msg}");
        }
    }

    #[test]
    fn display_round_trips_and_serde_is_lowercase() {
        for m in AppMode::ALL {
            assert_eq!(m.to_string().parse::<AppMode>(), Ok(m));
        }
        assert_eq!(
            serde_json::to_string(&AppMode::Coding).unwrap(),
            "\"coding\""
        );
        assert_eq!(
            serde_json::from_str::<AppMode>("\"work\"").unwrap(),
            AppMode::Work
        );
    }
}
