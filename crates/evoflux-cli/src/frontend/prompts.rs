//! The questions a front end puts to the person at the terminal: whether to
//! trust a repository on the first chat in it, and whether a tool that
//! needs approval may run (the question, the answers it accepts and what
//! each answer decides), read from stdin.

use std::io::{BufRead as _, Write as _};

use evoflux_harness::approval::{
    ApprovalSubject, DecidedBy, ElicitationAnswer, ElicitationAsk, Elicited, Remember,
};
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

    fn elicit<'a>(
        &'a self,
        request: &'a ElicitationAsk,
    ) -> evoflux_harness::approval::ElicitationFuture<'a> {
        Box::pin(fill_form(request, |prompt| async move {
            eprint!("{prompt}");
            let _ = std::io::stderr().flush();
            match read_line().await {
                Ok(Some(line)) => Typed::Line(line),
                Ok(None) | Err(_) => Typed::Eof,
            }
        }))
    }
}

/// What the person typed at one of a form's questions.
pub(crate) enum Typed {
    Line(String),
    /// Ctrl-C: the form is cancelled.
    Interrupted,
    /// The end of input: nobody answers.
    Eof,
}

/// Walks an MCP server's form field by field, reading each answer with
/// `read` (which shows the prompt it is given): `y` fills it in, `n`
/// declines; a field that does not take what was typed is asked again.
pub(crate) async fn fill_form<F, Fut>(request: &ElicitationAsk, mut read: F) -> Elicited
where
    F: FnMut(String) -> Fut,
    Fut: std::future::Future<Output = Typed>,
{
    let by_user = |answer| Elicited {
        answer,
        by: DecidedBy::User,
    };
    let cancelled = || by_user(ElicitationAnswer::Cancel);
    eprintln!(
        "the MCP server `{}` asks (during `{}`): {}",
        request.server, request.tool, request.message
    );
    match read("fill in its form? [y]es / [n]o, decline: ".to_owned()).await {
        Typed::Line(a) if matches!(a.trim(), "y" | "Y" | "yes") => {}
        Typed::Line(_) => return by_user(ElicitationAnswer::Decline { reason: None }),
        Typed::Interrupted | Typed::Eof => return cancelled(),
    }
    let mut content = serde_json::Map::new();
    for field in evoflux_mcp::live::form_fields(&request.schema) {
        loop {
            let typed = match read(format!("  {}", field.prompt())).await {
                Typed::Line(line) => line,
                Typed::Interrupted | Typed::Eof => return cancelled(),
            };
            match field.read(&typed) {
                Ok(Some(value)) => {
                    content.insert(field.name.clone(), value);
                    break;
                }
                Ok(None) => break,
                Err(why) => eprintln!("  {why}; try again (Ctrl-C cancels the form)"),
            }
        }
    }
    let answer = ElicitationAnswer::Accept { content };
    match request.check(&answer) {
        Ok(()) => by_user(answer),
        Err(why) => {
            eprintln!("  the answer does not fit the form: {why}; it was declined");
            by_user(ElicitationAnswer::Decline {
                reason: Some(format!("the user's answer did not fit the form: {why}")),
            })
        }
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
        ApprovalSubject::Sampling {
            server,
            preview,
            max_tokens,
        } => format!(
            "let the MCP server `{server}` (during `{}`) ask the model, up to {max_tokens} \
             tokens?\n  {}\n{options}",
            request.tool,
            clip(preview, 600).replace('\n', "\n  ")
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

/// The refusal a user's "no" (or no answer) gives the model (or, for
/// sampling, the server).
pub(crate) fn denied(request: &ApprovalRequest) -> ApprovalDecision {
    ApprovalDecision::Denied {
        reason: match &request.subject {
            ApprovalSubject::Sampling { server, .. } => {
                format!("The user denied the MCP server `{server}`'s sampling request.")
            }
            ApprovalSubject::Call
            | ApprovalSubject::OutsideSandbox { .. }
            | ApprovalSubject::Control { .. } => format!("The user denied `{}`.", request.tool),
        },
    }
}

#[cfg(test)]
mod form_tests {
    use super::*;

    fn ask() -> ElicitationAsk {
        ElicitationAsk {
            session_id: "s".into(),
            id: "c1:elicitation-1".into(),
            call_id: "c1".into(),
            tool: "mcp__every__signup".into(),
            server: "every".into(),
            message: "Tell us about you".into(),
            schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "age": {"type": "integer", "minimum": 1},
                    "name": {"type": "string"},
                    "pet": {"type": "string", "enum": ["cat", "dog"]}
                },
                "required": ["name"]
            }),
        }
    }

    /// Answers the form's questions from `typed`, in order.
    async fn answered(typed: &[&str]) -> Elicited {
        let lines = std::sync::Mutex::new(
            typed
                .iter()
                .map(|t| (*t).to_owned())
                .collect::<std::collections::VecDeque<_>>(),
        );
        let request = ask();
        fill_form(&request, |_prompt| {
            let next = lines.lock().unwrap().pop_front();
            async move {
                match next {
                    Some(l) if l == "^C" => Typed::Interrupted,
                    Some(l) => Typed::Line(l),
                    None => Typed::Eof,
                }
            }
        })
        .await
    }

    #[tokio::test]
    async fn a_form_is_filled_field_by_field_and_a_wrong_answer_is_asked_again() {
        // Fields in name order: age, name, pet.
        let got = answered(&["y", "old", "", "", "Ada", "2"]).await;
        assert_eq!(got.by, DecidedBy::User);
        assert_eq!(
            got.answer,
            ElicitationAnswer::Accept {
                content: serde_json::json!({"name": "Ada", "pet": "dog"})
                    .as_object()
                    .cloned()
                    .unwrap()
            }
        );
        assert_eq!(
            answered(&["n"]).await.answer,
            ElicitationAnswer::Decline { reason: None }
        );
        assert_eq!(
            answered(&["y", "^C"]).await.answer,
            ElicitationAnswer::Cancel
        );
        // An answer the schema refuses (age below its minimum) is declined.
        let got = answered(&["y", "0", "Ada", ""]).await;
        assert!(
            matches!(&got.answer, ElicitationAnswer::Decline { reason: Some(r) } if r.contains("age")),
            "{got:?}"
        );
    }

    #[test]
    fn a_sampling_request_is_asked_with_its_server_and_preview() {
        let request = ApprovalRequest {
            session_id: "s".into(),
            call_id: "c1:sampling-1".into(),
            tool: "mcp__every__sum".into(),
            arguments: serde_json::json!({}),
            subject: ApprovalSubject::Sampling {
                server: "every".into(),
                preview: "system: Be brief.\nuser: Sum it up".into(),
                max_tokens: 40,
            },
            workdir: None,
        };
        let q = approval_question(&request);
        assert!(q.contains("MCP server `every`"), "{q}");
        assert!(q.contains("up to 40 tokens"), "{q}");
        assert!(q.contains("\n  user: Sum it up"), "{q}");
        assert!(q.ends_with("[y]es, this once / [N]o"), "{q}");
        assert!(matches!(
            approval_answer(&request, "s"),
            ApprovalDecision::Denied { reason } if reason.contains("sampling request")
        ));
    }
}
