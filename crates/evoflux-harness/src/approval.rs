//! Approvals: an orthogonal gate on any executable tool, never a
//! request-input operation.
//!
//! A tool whose policy is `always` asks the [`Approver`] before each call.
//! Interactive front ends ask the user; a non-interactive run denies with
//! a message the model can read, so it can choose another way.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use std::collections::BTreeMap;

use evoflux_core::config::{Approval, HarnessConfig};
use serde_json::Value;

/// The user's approval settings for a session: `[approval]` of the user
/// and admin config (which replaces a tool's own policy) and the floors of
/// the session's repositories (which only raise it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApprovalPolicy {
    pub set: BTreeMap<String, Approval>,
    pub floor: BTreeMap<String, Approval>,
}

impl ApprovalPolicy {
    pub fn from_config(config: &HarnessConfig) -> ApprovalPolicy {
        ApprovalPolicy {
            set: config.approval.clone(),
            floor: config.approval_floor.clone(),
        }
    }

    /// The policy of `tool`, whose own policy is `own`: what the user set
    /// (else its own), raised to any repository's floor.
    pub fn for_tool(&self, tool: &str, own: Approval) -> Approval {
        let chosen = self.set.get(tool).copied().unwrap_or(own);
        self.floor
            .get(tool)
            .map_or(chosen, |floor| chosen.max(*floor))
    }

    /// Every tool name the settings mention.
    pub fn tools(&self) -> impl Iterator<Item = &str> {
        self.set.keys().chain(self.floor.keys()).map(String::as_str)
    }
}

/// What is being approved.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    Approved,
    Denied { reason: String },
}

pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = ApprovalDecision> + Send + 'a>>;

/// Decides approvals for a session.
pub trait Approver: Send + Sync + fmt::Debug {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a>;
}

/// The approver of runs nobody watches: every approval is denied, with a
/// reason that tells the model why.
#[derive(Debug, Default, Clone, Copy)]
pub struct NonInteractive;

impl Approver for NonInteractive {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let reason = format!(
            "`{}` needs the user's approval and this run is non-interactive, so it was denied. \
             Do the task without it, or tell the user it needs their approval in an interactive session.",
            request.tool
        );
        Box::pin(async move { ApprovalDecision::Denied { reason } })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_floor_only_raises_and_the_users_setting_replaces_the_tools_own() {
        let policy = ApprovalPolicy {
            set: BTreeMap::from([("shell".to_owned(), Approval::Always)]),
            floor: BTreeMap::from([
                ("shell".to_owned(), Approval::Never),
                ("write".to_owned(), Approval::Always),
            ]),
        };
        assert_eq!(policy.for_tool("shell", Approval::Never), Approval::Always);
        assert_eq!(policy.for_tool("write", Approval::Never), Approval::Always);
        assert_eq!(
            policy.for_tool("read", Approval::OnRequest),
            Approval::OnRequest
        );
        let relaxed = ApprovalPolicy {
            set: BTreeMap::from([("deploy".to_owned(), Approval::Never)]),
            floor: BTreeMap::new(),
        };
        assert_eq!(
            relaxed.for_tool("deploy", Approval::Always),
            Approval::Never
        );
    }
}
