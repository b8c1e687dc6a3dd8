//! Approvals: an orthogonal gate on any executable tool, never a
//! request-input operation.
//!
//! A tool whose policy is `always` asks the [`Approver`] before each call.
//! Interactive front ends ask the user; a non-interactive run denies with
//! a message the model can read, so it can choose another way.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use std::collections::BTreeMap;

use evoflux_core::config::{Approval, HarnessConfig};
use serde_json::Value;

/// Whether a call runs, is put to the user, or is refused, before any
/// "always" answer the user gave is consulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    Run,
    /// Ask; `remembered` says an earlier "always" answer may stand in.
    Ask {
        remembered: bool,
    },
    Refuse(String),
}

/// The gate for one call of a tool whose effective policy is `policy`.
/// `shell` is the command for a `shell` call, with whether the model asks
/// to run it outside the sandbox.
pub fn gate(policy: Approval, shell: Option<(&str, bool)>) -> Gate {
    match (policy, shell) {
        (Approval::Never, Some((_, true))) => Gate::Refuse(
            "Commands in this session always run in the sandbox: running one outside it needs \
             the user's `shell = \"on-request\"` (or \"always\") in [approval]. Run it inside \
             the sandbox, or tell the user what it needs."
                .to_owned(),
        ),
        // Outside the sandbox: asked every time, never remembered.
        (Approval::OnRequest | Approval::Always, Some((_, true))) => {
            Gate::Ask { remembered: false }
        }
        (Approval::Always, Some((command, false)))
            if crate::safe_command::is_read_only(command) =>
        {
            Gate::Run
        }
        (Approval::Always, _) => Gate::Ask { remembered: true },
        (Approval::Never | Approval::OnRequest, _) => Gate::Run,
    }
}

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
}

/// What is being approved.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub session_id: String,
    pub call_id: String,
    pub tool: String,
    pub arguments: Value,
    pub subject: ApprovalSubject,
    /// The absolute folder the call's command would run in, for a tool
    /// that runs a command (`shell`, a command tool); `None` for every
    /// other tool, and when the folder the call names is not one it
    /// could run in (the call then fails without running).
    pub workdir: Option<PathBuf>,
}

/// What the user is asked to allow. Closed: a front end words each case and
/// offers the "always" answers [`ApprovalSubject::remember`] allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalSubject {
    /// A call of a tool whose policy asks.
    Call,
    /// Running this one shell command outside the sandbox, for the model's
    /// stated reason.
    OutsideSandbox { justification: String },
    /// A `write` or `edit` of one of the agent's own controls (`path`,
    /// which is `control`), which takes effect from the next session.
    Control { path: String, control: String },
}

/// Which "always" answers a front end may offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Remember {
    /// This call only.
    Never,
    /// Also "always for this session".
    Session,
    /// Also "always for this session" and "always in this workspace".
    SessionOrWorkspace,
}

impl ApprovalSubject {
    pub const fn remember(&self) -> Remember {
        match self {
            ApprovalSubject::Call => Remember::SessionOrWorkspace,
            ApprovalSubject::OutsideSandbox { .. } => Remember::Never,
            ApprovalSubject::Control { .. } => Remember::Session,
        }
    }
}

/// The answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApprovalDecision {
    /// This call only.
    Approved,
    /// This call, and the same tool (for a shell command, the same
    /// program) for the rest of the session, resumed or not.
    ApprovedForSession,
    /// Like [`ApprovalDecision::ApprovedForSession`], and for every later
    /// session in the same workspace.
    ApprovedForWorkspace,
    Denied {
        reason: String,
    },
}

impl ApprovalDecision {
    pub const fn kind(&self) -> DecisionKind {
        match self {
            ApprovalDecision::Approved => DecisionKind::Approved,
            ApprovalDecision::ApprovedForSession => DecisionKind::ApprovedForSession,
            ApprovalDecision::ApprovedForWorkspace => DecisionKind::ApprovedForWorkspace,
            ApprovalDecision::Denied { .. } => DecisionKind::Denied,
        }
    }
}

pub use evoflux_protocol::events::{DecidedBy, DecisionKind};

/// A decision and who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    pub decision: ApprovalDecision,
    pub by: DecidedBy,
}

impl Decided {
    pub fn by_user(decision: ApprovalDecision) -> Decided {
        Decided {
            decision,
            by: DecidedBy::User,
        }
    }
}

pub type ApprovalFuture<'a> = Pin<Box<dyn Future<Output = Decided> + Send + 'a>>;

/// Decides approvals for a session.
pub trait Approver: Send + Sync + fmt::Debug {
    /// Asks for a decision on `request`. The session calls this, then
    /// announces the request (`approval_requested`), then awaits the
    /// future: an approver that others decide through (the session host's
    /// broker) registers the call here, before returning, so a decision
    /// made the moment the event is seen finds it; one that asks someone
    /// itself (a prompt) does so in the future, after the event.
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
        Box::pin(async move {
            Decided {
                decision: ApprovalDecision::Denied { reason },
                by: DecidedBy::Policy,
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_follows_the_policy_safe_commands_and_escalation() {
        assert_eq!(
            gate(Approval::Always, Some(("git rev-parse HEAD", false))),
            Gate::Run
        );
        // `git status` runs the repository's `core.fsmonitor`.
        assert_eq!(
            gate(Approval::Always, Some(("git status", false))),
            Gate::Ask { remembered: true }
        );
        assert_eq!(
            gate(Approval::Always, Some(("cargo test", false))),
            Gate::Ask { remembered: true }
        );
        assert_eq!(gate(Approval::Always, None), Gate::Ask { remembered: true });
        assert_eq!(
            gate(Approval::Never, Some(("cargo test", false))),
            Gate::Run
        );
        assert_eq!(
            gate(Approval::OnRequest, Some(("cargo test", false))),
            Gate::Run
        );
        assert_eq!(
            gate(Approval::OnRequest, Some(("ls", true))),
            Gate::Ask { remembered: false }
        );
        assert!(matches!(
            gate(Approval::Never, Some(("ls", true))),
            Gate::Refuse(_)
        ));
    }

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
