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
    /// The preset the user switched the session to, over the rest
    /// ([`ApprovalMode`]); shared by every clone, so a session's children
    /// follow a switch as it happens.
    pub mode: ModeSwitch,
    /// Claude Code's permission rules ([`crate::permission_rules`], whose
    /// docs say how they meet the settings above).
    pub rules: crate::permission_rules::PermissionRules,
}

impl ApprovalPolicy {
    pub fn from_config(config: &HarnessConfig) -> ApprovalPolicy {
        ApprovalPolicy {
            set: config.approval.clone(),
            floor: config.approval_floor.clone(),
            mode: ModeSwitch::default(),
            rules: Default::default(),
        }
    }

    /// The same settings with Claude Code's permission rules.
    pub fn with_rules(self, rules: crate::permission_rules::PermissionRules) -> ApprovalPolicy {
        ApprovalPolicy { rules, ..self }
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

/// A preset a user switches a running session to (an editor's session
/// modes over ACP), over `[approval]`: the settings say what asks, the
/// mode says how much the user wants to be asked right now. Closed; each
/// mode is decided by a tool's action class, never its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApprovalMode {
    /// As `[approval]` and the tools' own policies say.
    #[default]
    Ask,
    /// File edits run without asking (`write`-class tools); everything
    /// else as `[approval]` says. Changes to the agent's own controls and
    /// commands outside the sandbox still ask.
    AutoEdit,
    /// Nothing changes: tools that write or run something are refused
    /// with a reason the model reads, except shell commands that only
    /// read ([`crate::safe_command::is_read_only`]), inside the sandbox.
    /// MCP tools are `execute`-class (a server can do anything), so they
    /// are refused too.
    ReadOnly,
}

impl ApprovalMode {
    pub const ALL: [ApprovalMode; 3] = [
        ApprovalMode::Ask,
        ApprovalMode::AutoEdit,
        ApprovalMode::ReadOnly,
    ];

    /// The stable id front ends exchange (`ask`, `auto-edit`, `read-only`).
    pub const fn id(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "ask",
            ApprovalMode::AutoEdit => "auto-edit",
            ApprovalMode::ReadOnly => "read-only",
        }
    }

    pub fn from_id(id: &str) -> Option<ApprovalMode> {
        ApprovalMode::ALL.into_iter().find(|m| m.id() == id)
    }

    pub const fn title(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "Ask",
            ApprovalMode::AutoEdit => "Auto-edit",
            ApprovalMode::ReadOnly => "Read-only",
        }
    }

    pub const fn description(self) -> &'static str {
        match self {
            ApprovalMode::Ask => "Ask before what your [approval] settings say asks",
            ApprovalMode::AutoEdit => {
                "Edit files without asking; commands still ask as [approval] says"
            }
            ApprovalMode::ReadOnly => {
                "Read and answer only: no file changes, only read-only commands"
            }
        }
    }

    /// The policy a call of a tool of `class` runs under in this mode,
    /// `approval` being what the settings say; `Err` is the refusal the
    /// model reads. `shell` is the call's command and whether it asks to
    /// run outside the sandbox.
    pub fn applied(
        self,
        tool: &str,
        class: evoflux_graph::tool::ActionClass,
        approval: Approval,
        shell: Option<(&str, bool)>,
    ) -> Result<Approval, String> {
        use evoflux_graph::tool::ActionClass as C;
        match self {
            ApprovalMode::Ask => Ok(approval),
            ApprovalMode::AutoEdit => match class {
                C::Write | C::Artifact => Ok(Approval::Never),
                C::Read | C::Execute | C::Verify | C::Dispatch | C::Ask | C::Network => {
                    Ok(approval)
                }
            },
            ApprovalMode::ReadOnly => {
                let refused = || {
                    Err(format!(
                        "`{tool}` changes files or runs commands, and the user switched this \
                         session to read-only: read and answer, or say what you would change \
                         (the user can switch the mode)."
                    ))
                };
                match (class, shell) {
                    (C::Read | C::Network | C::Ask | C::Dispatch, _) => Ok(approval),
                    (C::Execute, Some((command, false)))
                        if crate::safe_command::is_read_only(command) =>
                    {
                        Ok(approval)
                    }
                    (C::Execute | C::Verify | C::Write | C::Artifact, _) => refused(),
                }
            }
        }
    }
}

/// A session's [`ApprovalMode`], switched by its front end while the
/// session runs and read at each call; clones share it.
#[derive(Debug, Clone, Default)]
pub struct ModeSwitch(std::sync::Arc<std::sync::Mutex<ApprovalMode>>);

impl ModeSwitch {
    pub fn get(&self) -> ApprovalMode {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set(&self, mode: ApprovalMode) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = mode;
    }
}

/// Two switches are equal when they hold the same mode now.
impl PartialEq for ModeSwitch {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Eq for ModeSwitch {}

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
    /// The MCP server `server`, during the call, asks the session's model
    /// for an answer (`sampling/createMessage`): `preview` is its system
    /// prompt and last message. Asked every time.
    Sampling {
        server: String,
        preview: String,
        max_tokens: u32,
    },
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
            ApprovalSubject::Sampling { .. } => Remember::Never,
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

pub use evoflux_mcp::live::ElicitationAnswer;

/// An MCP server's form for the user (`elicitation/create`), asked during
/// one of the session's tool calls. It goes through the session's
/// [`Approver`], like an approval: the session host's broker shares it
/// with every client, a terminal or an editor asks it itself, and a run
/// nobody watches declines it.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationAsk {
    pub session_id: String,
    /// This request (`<tool call>:elicitation-<n>`), what clients answer by.
    pub id: String,
    /// The tool call during which the server asks.
    pub call_id: String,
    /// The model-visible tool of that call.
    pub tool: String,
    pub server: String,
    pub message: String,
    /// The restricted JSON Schema of the answer (an object of string,
    /// number, integer, boolean and enum properties).
    pub schema: Value,
}

impl ElicitationAsk {
    /// Checks an answer against the schema, as every front end must before
    /// it answers: the error names each field that does not fit.
    pub fn check(&self, answer: &ElicitationAnswer) -> Result<(), String> {
        match answer {
            ElicitationAnswer::Accept { content } => {
                evoflux_mcp::live::validate_elicitation(&self.schema, content)
            }
            ElicitationAnswer::Decline { .. } | ElicitationAnswer::Cancel => Ok(()),
        }
    }
}

/// An elicitation's answer and who gave it.
#[derive(Debug, Clone, PartialEq)]
pub struct Elicited {
    pub answer: ElicitationAnswer,
    pub by: DecidedBy,
}

pub type ElicitationFuture<'a> = Pin<Box<dyn Future<Output = Elicited> + Send + 'a>>;

/// Decides approvals for a session.
pub trait Approver: Send + Sync + fmt::Debug {
    /// Asks for a decision on `request`. The session calls this, then
    /// announces the request (`approval_requested`), then awaits the
    /// future: an approver that others decide through (the session host's
    /// broker) registers the call here, before returning, so a decision
    /// made the moment the event is seen finds it; one that asks someone
    /// itself (a prompt) does so in the future, after the event.
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a>;

    /// Asks the user to fill in an MCP server's form; called, announced
    /// (`elicitation_requested`) and awaited like [`Approver::approve`].
    /// An approver that cannot show a form declines, saying why (the
    /// server reads it).
    fn elicit<'a>(&'a self, request: &'a ElicitationAsk) -> ElicitationFuture<'a> {
        let _ = request;
        Box::pin(async {
            Elicited {
                answer: ElicitationAnswer::Decline {
                    reason: Some(
                        "this evoflux front end cannot show a form; ask in the chat or the web UI"
                            .to_owned(),
                    ),
                },
                by: DecidedBy::Policy,
            }
        })
    }
}

/// The approver of runs nobody watches: every approval is denied, with a
/// reason that tells the model why.
#[derive(Debug, Default, Clone, Copy)]
pub struct NonInteractive;

impl Approver for NonInteractive {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        let reason = match &request.subject {
            ApprovalSubject::Sampling { server, .. } => format!(
                "the MCP server `{server}` asked the session's model for an answer (sampling), \
                 which needs the user's approval, and this run is non-interactive, so it was \
                 denied"
            ),
            ApprovalSubject::Call
            | ApprovalSubject::OutsideSandbox { .. }
            | ApprovalSubject::Control { .. } => format!(
                "`{}` needs the user's approval and this run is non-interactive, so it was \
                 denied. Do the task without it, or tell the user it needs their approval in an \
                 interactive session.",
                request.tool
            ),
        };
        Box::pin(async move {
            Decided {
                decision: ApprovalDecision::Denied { reason },
                by: DecidedBy::Policy,
            }
        })
    }

    fn elicit<'a>(&'a self, request: &'a ElicitationAsk) -> ElicitationFuture<'a> {
        let reason = format!(
            "the MCP server `{}` asked the user to fill in a form, and this run is \
             non-interactive, so nobody can answer; it was declined",
            request.server
        );
        Box::pin(async move {
            Elicited {
                answer: ElicitationAnswer::Decline {
                    reason: Some(reason),
                },
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
            ..ApprovalPolicy::default()
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
            ..ApprovalPolicy::default()
        };
        assert_eq!(
            relaxed.for_tool("deploy", Approval::Always),
            Approval::Never
        );
    }

    #[test]
    fn a_mode_decides_by_action_class() {
        use evoflux_graph::tool::ActionClass as C;
        let ask = ApprovalMode::Ask;
        assert_eq!(
            ask.applied("write", C::Write, Approval::Always, None),
            Ok(Approval::Always)
        );
        let auto = ApprovalMode::AutoEdit;
        assert_eq!(
            auto.applied("write", C::Write, Approval::Always, None),
            Ok(Approval::Never)
        );
        assert_eq!(
            auto.applied("shell", C::Execute, Approval::Always, Some(("make", false))),
            Ok(Approval::Always)
        );
        let ro = ApprovalMode::ReadOnly;
        assert!(ro.applied("edit", C::Write, Approval::Never, None).is_err());
        assert!(
            ro.applied(
                "shell",
                C::Execute,
                Approval::Never,
                Some(("rm -rf x", false))
            )
            .is_err()
        );
        assert_eq!(
            ro.applied("shell", C::Execute, Approval::Never, Some(("ls", false))),
            Ok(Approval::Never)
        );
        assert!(
            ro.applied("shell", C::Execute, Approval::Never, Some(("ls", true)))
                .is_err()
        );
        assert_eq!(
            ro.applied("read", C::Read, Approval::Never, None),
            Ok(Approval::Never)
        );
        for mode in ApprovalMode::ALL {
            assert_eq!(ApprovalMode::from_id(mode.id()), Some(mode));
        }
        // Clones share the switch.
        let policy = ApprovalPolicy::default();
        let child = policy.clone();
        policy.mode.set(ApprovalMode::ReadOnly);
        assert_eq!(child.mode.get(), ApprovalMode::ReadOnly);
    }
}
