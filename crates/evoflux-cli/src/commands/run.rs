//! `evoflux run`: one task from the command line, run as one turn on the
//! session host until it ends, a signal stops it or the session's lease is
//! lost. `sessions resume` drives its turn the same way ([`one_turn`]).
//!
//! What the command line's front ends share — opening a session, the event
//! printers, the approval and trust prompts, signals — is in
//! [`crate::frontend`]; `evoflux chat` is in [`super::chat`], `evoflux
//! sessions` in [`super::sessions`]. The loop itself lives in
//! `evoflux-harness`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Args;
use evoflux_harness::{
    Harness, HarnessError, HostError, HostOptions, HostWiring, ProcessRuntime, Session,
    SessionHost, SessionLease, TurnEnd, TurnOptions, TurnOutcome, TurnStatus,
};

use crate::frontend::printer::event_sink;
use crate::frontend::runtime;
use crate::frontend::session::{
    CliFront, OpenLease, SessionArgs, non_interactive, open, process_runtime, release,
};
use crate::frontend::signals::shutdown_signal;
use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub session: SessionArgs,
    /// A JSON Schema file: the run must end with a result matching it
    /// (delivered by the model through `final_output`, printed as JSON).
    #[arg(long, value_name = "FILE")]
    pub output_schema: Option<PathBuf>,
    /// The task. With --session, a new message or the answer to the
    /// agent's open question.
    pub task: String,
}

pub fn run(out: &Output, args: &RunArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let schema = match args.output_schema.as_deref().map(read_schema).transpose() {
            Ok(schema) => schema,
            Err(diagnostic) => {
                out.diagnostics(&evoflux_core::Diagnostics::from(vec![*diagnostic]));
                return Ok(Exit::Invalid);
            }
        };
        let wiring = non_interactive(event_sink(out));
        let processes = process_runtime(out)?;
        let (harness, lease) = match open(
            out,
            &args.session,
            wiring.events(),
            wiring.approver(),
            &processes,
            OpenLease::Take("evoflux run"),
        )
        .await?
        {
            Ok(opened) => opened,
            Err(exit) => return Ok(exit),
        };
        one_turn(
            out,
            (harness, wiring),
            &args.session,
            lease,
            &processes,
            Some(&args.task),
            TurnOptions {
                output_schema: schema,
                ..TurnOptions::default()
            },
        )
        .await
    })
}

/// Runs one non-interactive turn on the session host, under the session's
/// `lease` (held since the session opened), until it ends, Ctrl-C/SIGTERM
/// arrives or the lease is lost — both cancel through the host — then
/// stops everything the session started (no command process or MCP server
/// outlives evoflux) and releases the lease.
pub(crate) async fn one_turn(
    out: &Output,
    opened: (Harness, HostWiring),
    args: &SessionArgs,
    lease: Option<SessionLease>,
    processes: &ProcessRuntime,
    input: Option<&str>,
    options: TurnOptions,
) -> anyhow::Result<Exit> {
    let (harness, wiring) = opened;
    let session = harness.session().clone();
    let host = SessionHost::start(
        harness,
        wiring,
        Arc::new(CliFront::new(out, args, processes)?),
        // The lease is this process's for as long as it runs.
        HostOptions::default(),
    );
    let ended = match host.submit(input.map(str::to_owned), options).await {
        Ok(turn) => {
            let lost = lease.as_ref().map(SessionLease::lost);
            let lost = async move {
                match lost {
                    Some(lost) => lost.await,
                    None => std::future::pending().await,
                }
            };
            tokio::pin!(lost);
            let ended = turn.ended();
            tokio::pin!(ended);
            let mut stopped = None;
            loop {
                tokio::select! {
                    ended = &mut ended => break ended.map(|end| (end, stopped)),
                    () = shutdown_signal(), if stopped.is_none() => {
                        stopped = Some(Stopped::Interrupted);
                        host.cancel();
                    }
                    () = &mut lost, if stopped.is_none() => {
                        stopped = Some(Stopped::LeaseLost);
                        host.cancel();
                    }
                }
            }
        }
        Err(e) => Err(e),
    };
    host.close().await;
    processes.shutdown().await;
    release(lease).await;
    let id = session.id;
    Ok(match ended {
        Ok((TurnEnd::Completed(outcome), _)) => finish(out, &session, Ok(outcome)),
        Err(HostError::Turn(e)) => finish(out, &session, Err(e)),
        Err(e) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            Exit::Failure
        }
        Ok((TurnEnd::Cancelled, Some(Stopped::LeaseLost))) => {
            out.failure(&anyhow::anyhow!(
                "the turn was stopped: another process took session {id} after this one \
                 could not renew its lease [{}]",
                evoflux_harness::lease::LEASE_LOST
            ));
            Exit::Failure
        }
        Ok((TurnEnd::Cancelled, _)) => {
            eprintln!("interrupted; the session is saved: evoflux sessions resume {id}");
            Exit::Interrupted
        }
    })
}

/// Why [`one_turn`] stopped a turn before its end.
#[derive(Debug, Clone, Copy)]
enum Stopped {
    Interrupted,
    LeaseLost,
}

/// Reads `--output-schema`: a file that cannot be read or is not JSON is
/// the user's input to fix (exit 3), named with what to do.
fn read_schema(path: &Path) -> Result<serde_json::Value, Box<evoflux_core::Diagnostic>> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Box::new(
            evoflux_core::Diagnostic::error(
                "run/output-schema-unreadable",
                format!("cannot read the output schema: {e}; give the path of a JSON Schema file"),
            )
            .with_file(path)
            .with_field("--output-schema"),
        )
    })?;
    serde_json::from_str(&text).map_err(|e| {
        Box::new(
            evoflux_core::Diagnostic::error(
                "run/output-schema-invalid",
                format!("the output schema is not valid JSON ({e}); give a JSON Schema document"),
            )
            .with_file(path)
            .with_line(u32::try_from(e.line()).unwrap_or(u32::MAX))
            .with_field("--output-schema"),
        )
    })
}

/// Prints what the user needs after a turn and picks the exit code:
/// 0 completed, 1 failed or stopped by a limit (or a dispatched worker's
/// result missed its contract), 4 waiting for an answer.
fn finish(out: &Output, session: &Session, outcome: Result<TurnOutcome, HarnessError>) -> Exit {
    match outcome {
        Ok(o) => {
            if o.status == TurnStatus::Completed
                && !out.json
                && let Some(output) = &o.output
            {
                println!(
                    "{}",
                    serde_json::to_string_pretty(output).unwrap_or_default()
                );
            }
            if o.status == TurnStatus::WaitingForInput {
                if !out.json {
                    eprintln!(
                        "session {} is waiting for your answer: evoflux sessions resume {} \"<answer>\"",
                        session.id, session.id
                    );
                }
                return Exit::Waiting;
            }
            // What the turn's end means is the harness's to say.
            let diags = o.diagnostics();
            if diags.is_empty() {
                return Exit::Ok;
            }
            out.diagnostics(&diags);
            if !out.json {
                let id = session.id;
                match o.status {
                    TurnStatus::LimitReached => {
                        eprintln!("continue with `evoflux sessions resume {id}`");
                    }
                    TurnStatus::Completed if !o.unmet_contracts.is_empty() => {
                        eprintln!("`evoflux sessions show <session>` shows what a worker did");
                    }
                    TurnStatus::Completed
                    | TurnStatus::WaitingForInput
                    | TurnStatus::CostLimitReached
                    | TurnStatus::OutputMissing => {}
                }
            }
            Exit::Failure
        }
        // The event stream has shown the error.
        Err(_) => Exit::Failure,
    }
}
