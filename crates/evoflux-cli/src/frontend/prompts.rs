//! The questions a front end puts to the person at the terminal: whether to
//! trust a repository on the first chat in it, and whether a tool that
//! needs approval may run (the question, the answers it accepts and what
//! each answer decides), read from stdin.

use std::io::{BufRead as _, Write as _};

use evoflux_harness::approval::{ApprovalSubject, Remember};
use evoflux_harness::{ApprovalDecision, ApprovalRequest, Approver, Decided};

use super::printer::clip;
use super::session::SessionArgs;
use crate::commands::{app_context, resolve_dirs, trust};
use crate::output::{Exit, Output};

/// On the first chat in an untrusted repository that holds command tools,
/// MCP servers, channels or schedules: asks whether to trust it.
pub(crate) async fn ask_trust(
    out: &Output,
    args: &SessionArgs,
) -> anyhow::Result<Result<(), Exit>> {
    let dirs = match resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = app_context(&dirs)?;
    let Some(question) = app.trust_question(&args.sources.workspaces)? else {
        return Ok(Ok(()));
    };
    // What trusting it grants is listed, and exactly that is recorded.
    let review = app.trust_review(&question.workspace)?;
    eprint!(
        "{} {}: {} of its sources would run commands or servers for you and wait ({}).\n{}Trust \
         this repository? [y/N] ",
        question.repository.display(),
        match question.since_trust {
            true => "changed since you trusted it",
            false => "is not trusted, so evoflux only reads it",
        },
        question.withheld.len(),
        clip(&question.withheld.join(", "), 200),
        trust::render_review(&review)
    );
    let _ = std::io::stderr().flush();
    if let Some(answer) = read_line().await?
        && matches!(answer.trim(), "y" | "Y" | "yes")
    {
        app.grant(&review)?;
        eprintln!("trusted {}", question.repository.display());
    }
    Ok(Ok(()))
}

/// One line from stdin (with its newline), `None` at the end of input.
pub(crate) async fn read_line() -> anyhow::Result<Option<String>> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) => Ok(None),
            Ok(_) => Ok(Some(line)),
            Err(e) => Err(anyhow::anyhow!("cannot read stdin: {e}")),
        }
    })
    .await?
}

/// Asks on stdin before a tool that needs approval runs (`evoflux chat`
/// reading a pipe).
#[derive(Debug)]
pub(crate) struct AskApprover;

impl Approver for AskApprover {
    fn approve<'a>(
        &'a self,
        request: &'a ApprovalRequest,
    ) -> evoflux_harness::approval::ApprovalFuture<'a> {
        Box::pin(async move {
            eprint!("{} ", approval_question(request));
            let _ = std::io::stderr().flush();
            let decision = match read_line().await {
                Ok(Some(answer)) => approval_answer(request, &answer),
                _ => denied(request),
            };
            Decided::by_user(decision)
        })
    }
}

/// The question a terminal asks before `request` runs, with the answers it
/// accepts (those its subject may remember).
pub(crate) fn approval_question(request: &ApprovalRequest) -> String {
    let what = clip(&request.arguments.to_string(), 200);
    let options = match request.subject.remember() {
        Remember::Never => "[y]es, this once / [N]o",
        Remember::Session => "[y]es / [s] always this session / [N]o",
        Remember::SessionOrWorkspace => {
            "[y]es / [s] always this session / [w] always in this workspace / [N]o"
        }
    };
    match &request.subject {
        ApprovalSubject::Call => format!("approve `{}` with {what}?\n{options}", request.tool),
        ApprovalSubject::OutsideSandbox { justification } => format!(
            "run `{}` OUTSIDE the sandbox with {what}?\n  the agent says: {justification}\n{options}",
            request.tool
        ),
        ApprovalSubject::Control { path, control } => format!(
            "let `{}` change `{path}`, {control} (it takes effect from the next session)?\n{options}",
            request.tool
        ),
    }
}

/// The decision a typed answer to [`approval_question`] means; anything
/// else denies.
pub(crate) fn approval_answer(request: &ApprovalRequest, answer: &str) -> ApprovalDecision {
    match (answer.trim(), request.subject.remember()) {
        ("y" | "Y" | "yes", _) => ApprovalDecision::Approved,
        ("s" | "S", Remember::Session | Remember::SessionOrWorkspace) => {
            ApprovalDecision::ApprovedForSession
        }
        ("w" | "W", Remember::SessionOrWorkspace) => ApprovalDecision::ApprovedForWorkspace,
        _ => denied(request),
    }
}

/// The refusal a user's "no" (or no answer) gives the model.
pub(crate) fn denied(request: &ApprovalRequest) -> ApprovalDecision {
    ApprovalDecision::Denied {
        reason: format!("The user denied `{}`.", request.tool),
    }
}
