//! `[limits]`: what one session may spend, children included. A
//! repository's file may only lower it.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::price::Usd;

/// `[limits]`: bounds of a whole session, children included.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitsConfig {
    /// A session stops before a model call once it (with the sessions it
    /// dispatched) has cost this much. A repository's file can only lower
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<Usd>,
}

impl LimitsConfig {
    pub fn is_unset(&self) -> bool {
        self.max_cost_usd.is_none()
    }
}

/// `[limits]` as a file writes it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Deserialize)]
pub(super) struct LimitsFile {
    pub(super) max_cost_usd: Option<f64>,
}

/// `[limits]`: a spending limit above zero.
pub(super) fn check_limits(path: &Path, file: LimitsFile, diags: &mut Diagnostics) -> LimitsConfig {
    let max_cost_usd = file.max_cost_usd.and_then(|dollars| {
        let amount = Usd::from_dollars(dollars).filter(|a| *a > Usd::ZERO);
        if amount.is_none() {
            diags.push(
                Diagnostic::error(
                    "config/limit-invalid",
                    format!(
                        "limits.max_cost_usd must be an amount of US dollars above zero, not \
                         {dollars}; leave it out for no limit"
                    ),
                )
                .with_file(path)
                .with_field("limits.max_cost_usd"),
            );
        }
        amount
    });
    LimitsConfig { max_cost_usd }
}
