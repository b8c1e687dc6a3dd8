//! Approvals: an orthogonal gate on any executable tool, never a
//! request-input operation.
//!
//! A tool whose policy is `always` asks the [`Approver`] before each call.
//! Interactive front ends ask the user; a non-interactive run denies with
//! a message the model can read, so it can choose another way.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

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
