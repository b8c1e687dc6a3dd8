//! The chat reading a pipe (or with `--json`): a line-per-message reader
//! for scripts. One message per line, approvals answered by the next line,
//! an empty line or the end of input ends the chat; Ctrl-C or SIGTERM
//! stops the running turn and ends it too.

use std::io::Write as _;
use std::sync::Arc;

use evoflux_harness::host::BoxFuture;
use evoflux_harness::{EventSink, Harness, Holder, TurnOutcome};

use super::{ChatArgs, Console, CtrlC, Hosted, Said, open_hosted};
use crate::frontend::printer::event_sink;
use crate::frontend::prompts::{AskApprover, ask_trust, read_line};
use crate::frontend::runtime;
use crate::frontend::session::process_runtime;
use crate::output::{Exit, Output};

/// `evoflux chat` reading a pipe.
pub(super) fn chat(out: &Output, args: &ChatArgs) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let events = event_sink(out);
        let processes = process_runtime(out)?;
        if args.session.session.is_none()
            && let Err(exit) = ask_trust(out, &args.session).await?
        {
            return Ok(exit);
        }
        let holder = Holder::process("evoflux chat");
        let live = match open_hosted(
            out,
            &args.session,
            Arc::clone(&events),
            Arc::new(AskApprover),
            &processes,
            &holder,
        )
        .await?
        {
            Ok(live) => live,
            Err(exit) => return Ok(exit),
        };
        let question = live
            .with(|harness: &mut Harness| {
                Box::pin(async move { harness.pending_question().await.ok().flatten() })
                    as BoxFuture<'_, Option<evoflux_harness::PendingQuestion>>
            })
            .await?;
        if let Some(q) = question {
            eprintln!("The agent asked: {}", q.question);
        }
        eprintln!(
            "Type a message; `!command` runs a shell command; an empty line or Ctrl-D ends the chat."
        );
        super::run(&mut Pipe { events }, live, &processes).await
    })
}

/// The chat reading a pipe, as the loop sees it ([`Console`]).
pub(super) struct Pipe {
    /// JSON lines with `--json`, text otherwise.
    events: Arc<dyn EventSink>,
}

impl Console for Pipe {
    /// A script has no prompt to return to: Ctrl-C ends the chat.
    const CTRL_C: CtrlC = CtrlC::EndsChat;

    fn events(&self) -> &dyn EventSink {
        self.events.as_ref()
    }

    async fn next(&mut self, _live: &mut Hosted) -> anyhow::Result<Said> {
        eprint!("> ");
        let _ = std::io::stderr().flush();
        let Some(line) = read_line().await? else {
            return Ok(Said::End);
        };
        let line = line.trim_end_matches(['\n', '\r']).to_owned();
        if line.trim().is_empty() {
            return Ok(Said::End);
        }
        Ok(Said::Message(line))
    }

    async fn completed(&mut self, _live: &Hosted, _outcome: TurnOutcome) {}

    fn stopped(&self) {
        eprintln!("interrupted");
    }
}
