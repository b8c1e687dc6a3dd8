//! `[teams]`: how deep delegation goes. A lead dispatches its members at
//! depth 1; a member may dispatch further, down to `max_depth`. A
//! repository's file may only lower it, as it may only lower `[limits]`:
//! each level multiplies what a task can cost.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Diagnostics};

/// The depth a tree of dispatches reaches when `[teams] max_depth` is not
/// set: a lead's member may hand work to one more level.
pub const DEFAULT_MAX_DEPTH: u32 = 2;

/// The deepest `[teams] max_depth` may be: every level is a whole child
/// session, so a deeper tree is a runaway, not a design.
pub const MAX_MAX_DEPTH: u32 = 8;

/// The code of an invalid `[teams] max_depth`.
pub const MAX_DEPTH_INVALID: &str = "config/teams-max-depth-invalid";

/// `[teams]`: how delegation is bounded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamsConfig {
    /// How many levels of child sessions a dispatch tree may have below
    /// the session the user started (1: only the lead dispatches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_depth: Option<u32>,
}

impl TeamsConfig {
    pub fn is_unset(&self) -> bool {
        self.max_depth.is_none()
    }

    /// The depth in effect: the configured one, else [`DEFAULT_MAX_DEPTH`].
    pub fn max_depth(&self) -> u32 {
        self.max_depth.unwrap_or(DEFAULT_MAX_DEPTH)
    }
}

/// `[teams]` as a file writes it: any integer, checked here so a negative
/// or huge value gets an error naming the key, not a type error.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub(super) struct TeamsFile {
    pub(super) max_depth: Option<i64>,
}

/// `[teams]`: a depth of at least 1 and at most [`MAX_MAX_DEPTH`].
pub(super) fn check_teams(path: &Path, file: TeamsFile, diags: &mut Diagnostics) -> TeamsConfig {
    let max_depth = file.max_depth.and_then(|depth| {
        let valid = u32::try_from(depth)
            .ok()
            .filter(|d| (1..=MAX_MAX_DEPTH).contains(d));
        if valid.is_none() {
            diags.push(
                Diagnostic::error(
                    MAX_DEPTH_INVALID,
                    format!(
                        "teams.max_depth must be a whole number from 1 (only the lead dispatches) \
                         to {MAX_MAX_DEPTH}, not {depth}; leave it out for the default of \
                         {DEFAULT_MAX_DEPTH}"
                    ),
                )
                .with_file(path)
                .with_field("teams.max_depth"),
            );
        }
        valid
    });
    TeamsConfig { max_depth }
}
