//! One turn: the user's message or answer in, model calls and tool calls
//! until the model is done, asks, or a limit stops it.

use evoflux_model::{Message, ToolCall};
use serde_json::{Value, json};

use super::router::CallOutcome;
use super::{Harness, PendingQuestion, TurnEnd, TurnOptions, TurnOutcome, UnmetContract};
use crate::error::HarnessError;
use crate::events::{Event, ToolResult, ToolStatus, TurnStatus};
use crate::prepared::PreparedKind;
use crate::terminal::{FINAL_OUTPUT, TerminalOutput};

/// What the running turn carries between its model calls and tool calls.
#[derive(Debug, Default)]
pub(super) struct TurnState {
    /// The user message that opened the current turn, until its first
    /// model call takes it.
    pub(super) input: Option<String>,
    /// Dispatches of the current turn that missed their contracts.
    pub(super) unmet: Vec<UnmetContract>,
    /// The user asked to compact: the next model call compacts whatever
    /// the threshold says.
    pub(super) compact_next: bool,
    /// Model calls the running model loop made, which bound a child's.
    pub(super) model_calls_used: u32,
    /// Tool calls the running model loop made, which bound a child's.
    pub(super) tool_calls_used: u32,
}

impl Harness {
    /// Runs one turn. `input` is the user's message — or, when the agent
    /// asked a question, the answer to it. `None` continues an interrupted
    /// turn without a new message.
    pub async fn turn(
        &mut self,
        input: Option<&str>,
        options: TurnOptions,
    ) -> Result<TurnOutcome, HarnessError> {
        // Only a view's alignment depends on it: never fails the turn.
        let after_entry = self
            .recorder
            .store
            .transcript_last_seq(self.session.id)
            .await
            .ok();
        self.emit(&Event::TurnStarted {
            session_id: self.session.id.to_string(),
            input: input.map(str::to_owned),
            after_entry,
        });
        self.usage
            .start_turn(&self.recorder.store, self.session.id)
            .await?;
        let result = self.turn_inner(input, options).await;
        match &result {
            Ok(outcome) => {
                let (usage, session_usage) = self
                    .usage
                    .end_turn(&self.recorder.store, self.session.id)
                    .await?;
                self.emit(&Event::TurnCompleted {
                    status: outcome.status,
                    text: outcome.text.clone(),
                    output: outcome.output.clone(),
                    usage,
                    session_usage,
                });
                // In the background, never failing the turn.
                self.title_after_first_turn(&outcome.text).await;
            }
            Err(e) => self.fail_turn(e.code(), &e.to_string()).await,
        }
        result
    }

    /// Ends the running turn on an error: `error`, then `turn_failed`
    /// with what the turn used, so every client sees the turn end.
    pub(crate) async fn fail_turn(&mut self, code: &str, message: &str) {
        self.emit(&Event::Error {
            code: code.to_owned(),
            message: message.to_owned(),
        });
        let (usage, session_usage) = self
            .usage
            .end_turn(&self.recorder.store, self.session.id)
            .await
            .unwrap_or_default();
        self.emit(&Event::TurnFailed {
            code: code.to_owned(),
            usage,
            session_usage,
        });
    }

    /// Runs one turn unless `cancel` resolves first. Cancelling stops the
    /// session's commands while the turn still waits on them, then drops
    /// the turn where it stood (as a kill would stop it: the next turn
    /// closes the calls it left open) and emits `turn_cancelled`. Every
    /// front end cancels through this one path.
    pub async fn turn_or_cancel(
        &mut self,
        input: Option<&str>,
        options: TurnOptions,
        cancel: impl std::future::Future<Output = ()>,
    ) -> Result<TurnEnd, HarnessError> {
        let processes = self.commands.processes.clone();
        let id = self.session.id;
        let ended = {
            let turn = self.turn(input, options);
            tokio::pin!(turn);
            tokio::pin!(cancel);
            tokio::select! {
                biased;
                () = &mut cancel => {
                    if let Some(processes) = &processes {
                        processes.terminate_session(id).await;
                    }
                    None
                }
                result = &mut turn => Some(result),
            }
        };
        match ended {
            Some(result) => result.map(TurnEnd::Completed),
            None => {
                self.close_cancelled().await;
                self.emit(&Event::TurnCancelled {
                    session_id: id.to_string(),
                });
                Ok(TurnEnd::Cancelled)
            }
        }
    }

    /// What a cancelled turn left open, closed now rather than at the next
    /// turn: an approval it waited on is decided `denied` by the
    /// cancellation, and every call of its last answer without a result
    /// gets one (stored for the model, `tool_ended` with `status:
    /// cancelled` for the clients). A store that cannot be written leaves
    /// the calls to the next turn, which closes them as interrupted.
    async fn close_cancelled(&mut self) {
        let waiting = self
            .awaiting_approval
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(call_id) = waiting {
            self.emit(&Event::ApprovalDecided {
                call_id,
                decision: crate::approval::DecisionKind::Denied,
                reason: Some("the turn was cancelled".to_owned()),
                by: crate::approval::DecidedBy::Cancellation,
            });
        }
        let open = match self
            .recorder
            .store
            .open_pending_inputs(self.session.id)
            .await
        {
            Ok(open) => open,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read a cancelled turn's open questions");
                return;
            }
        };
        for call in self.unanswered_calls(&open) {
            let result = ToolResult::error(
                "The user cancelled the turn while this call ran (or before it started); \
                 it was stopped. Run it again only if the user asks.",
            );
            if let Err(e) = self
                .recorder
                .record_as(&call, result, ToolStatus::Cancelled)
                .await
            {
                tracing::warn!(error = %e, "cannot record a cancelled call; the next turn closes it");
                return;
            }
        }
        if let Err(e) = self
            .usage
            .end_turn(&self.recorder.store, self.session.id)
            .await
        {
            tracing::warn!(error = %e, "cannot total a cancelled turn's usage");
        }
    }

    pub(super) async fn turn_inner(
        &mut self,
        input: Option<&str>,
        options: TurnOptions,
    ) -> Result<TurnOutcome, HarnessError> {
        let mut terminal = options.output_schema.map(TerminalOutput::new).transpose()?;
        let media = options.media;
        // Media without text is still a message: never dropped.
        let input = match (input, media.is_empty()) {
            (None, false) => Some(""),
            (input, _) => input,
        };
        let open = self
            .recorder
            .store
            .open_pending_inputs(self.session.id)
            .await?;
        self.close_interrupted_calls(&open).await?;
        match (open.first(), input) {
            (Some(pending), Some(answer)) => {
                self.recorder
                    .store
                    .answer_pending_input(self.session.id, pending.id, &json!({"text": answer}))
                    .await?;
                if terminal.is_none()
                    && let Some(schema) = &pending.request.output_schema
                {
                    terminal = Some(TerminalOutput::new(schema.clone())?);
                }
                // Only the id and name identify the call being answered.
                let call = ToolCall {
                    id: pending.tool_call_id.clone(),
                    name: pending.request.tool.clone(),
                    arguments: Value::Object(serde_json::Map::new()),
                };
                self.recorder
                    .record(
                        &call,
                        ToolResult {
                            media,
                            ..ToolResult::ok(format!("The user answered: {answer}"))
                        },
                    )
                    .await?;
                if let Some(next) = open.get(1) {
                    let q = PendingQuestion::of(next);
                    return Ok(self.waiting(q));
                }
            }
            (Some(pending), None) => {
                let q = PendingQuestion::of(pending);
                return Ok(self.waiting(q));
            }
            (None, Some(text)) => {
                // A prompt command and `@server:uri` resources are expanded
                // before anything reads the message (skills included).
                let text = self.expand_input(text).await?;
                self.turn.input = Some(text.clone());
                let m = Message::user_with_media(text, media);
                self.recorder.append(m, None).await?;
            }
            (None, None) => {
                if matches!(
                    self.recorder.messages.last(),
                    None | Some(Message::Assistant { .. })
                ) {
                    return Err(HarnessError::NothingToContinue {
                        session: self.session.id,
                    });
                }
            }
        }
        self.run_model_loop(terminal).await
    }

    /// The turn's end when `[limits] max_cost_usd` is reached: the session
    /// the user started, with every session it dispatched, has cost the
    /// limit, so no further model call starts.
    async fn cost_limit_reached(&mut self) -> Result<Option<TurnOutcome>, HarnessError> {
        let Some(limit) = self.limits.max_cost else {
            return Ok(None);
        };
        // A child's limit is its lead's tree, which siblings spend too.
        let spent = if self.root == self.session.id {
            self.usage
                .tree(&self.recorder.store, self.session.id)
                .await?
        } else {
            self.recorder.store.tree_usage(self.root).await?
        };
        if spent.cost_usd < limit {
            return Ok(None);
        }
        Ok(Some(TurnOutcome {
            status: TurnStatus::CostLimitReached,
            text: format!(
                "This session has cost {} with the sessions it dispatched, which reaches its \
                 limit of {limit} ([limits] max_cost_usd in config.toml); no further model call \
                 was made. Raise the limit to go on.",
                spent.cost_label()
            ),
            output: None,
            question: None,
            unmet_contracts: Vec::new(),
        }))
    }

    pub(super) fn waiting(&self, question: PendingQuestion) -> TurnOutcome {
        self.emit(&Event::InputRequested {
            call_id: question.call_id.clone(),
            question: question.question.clone(),
            options: question.options.clone(),
        });
        TurnOutcome {
            status: TurnStatus::WaitingForInput,
            text: String::new(),
            output: None,
            question: Some(question),
            unmet_contracts: Vec::new(),
        }
    }

    /// Tool calls of the last assistant message that never got a result
    /// and are not waiting for the user: the process stopped mid-call.
    pub(super) async fn close_interrupted_calls(
        &mut self,
        open: &[evoflux_store::PendingInput],
    ) -> Result<(), HarnessError> {
        let missing = self.unanswered_calls(open);
        for call in missing {
            // A dispatch re-attaches to the child it opened (a finished one
            // answers, an unfinished one continues); it never runs twice.
            let dispatch = match self.tools.get(&call.name).map(|t| &t.kind) {
                Some(PreparedKind::Dispatch(targets)) => Some(targets.clone()),
                _ => None,
            };
            let result = match dispatch {
                Some(targets) => self.dispatch(&call, &targets).await?,
                None => ToolResult::error(
                    "This call was interrupted before it finished (the process stopped). \
                     Run it again if it is still needed.",
                ),
            };
            self.recorder.record(&call, result).await?;
        }
        Ok(())
    }

    /// Calls of the last answer with tool calls that have no result and
    /// do not wait for the user.
    fn unanswered_calls(&self, open: &[evoflux_store::PendingInput]) -> Vec<ToolCall> {
        let Some(last_assistant) = self.recorder.messages.iter().rposition(
            |m| matches!(m, Message::Assistant { tool_calls, .. } if !tool_calls.is_empty()),
        ) else {
            return Vec::new();
        };
        let Message::Assistant { tool_calls, .. } = &self.recorder.messages[last_assistant] else {
            return Vec::new();
        };
        let answered: Vec<&str> = self.recorder.messages[last_assistant..]
            .iter()
            .filter_map(|m| match m {
                Message::Tool { tool_call_id, .. } => Some(tool_call_id.as_str()),
                Message::System { .. } | Message::User { .. } | Message::Assistant { .. } => None,
            })
            .collect();
        tool_calls
            .iter()
            .filter(|c| !answered.contains(&c.id.as_str()))
            .filter(|c| !open.iter().any(|p| p.tool_call_id == c.id))
            .cloned()
            .collect()
    }

    pub(super) async fn run_model_loop(
        &mut self,
        terminal: Option<TerminalOutput>,
    ) -> Result<TurnOutcome, HarnessError> {
        self.turn.unmet.clear();
        let mut outcome = self.model_loop(terminal).await?;
        outcome.unmet_contracts = std::mem::take(&mut self.turn.unmet);
        Ok(outcome)
    }

    async fn model_loop(
        &mut self,
        terminal: Option<TerminalOutput>,
    ) -> Result<TurnOutcome, HarnessError> {
        self.mcp_for_turn().await;
        let mut reminders = 0;
        self.turn.tool_calls_used = 0;
        let mut last_text = String::new();
        // The previous call paused: this one continues its answer.
        let mut resumed = false;
        for made in 1..=self.limits.model_calls_per_turn {
            self.turn.model_calls_used = made;
            // A paused answer must stay the last message for the provider
            // to go on with it; notices wait for the call after.
            if !resumed {
                self.deliver_exit_notices(false).await?;
            }
            if let Some(stop) = self.cost_limit_reached().await? {
                return Ok(stop);
            }
            self.mcp_granted_by_skill().await;
            let mut answer = self.call_model(terminal.as_ref()).await?;
            let calls = std::mem::take(&mut answer.calls);
            if !answer.text.is_empty() {
                if resumed {
                    last_text.push_str(&answer.text);
                } else {
                    last_text = std::mem::take(&mut answer.text);
                }
            }
            resumed = answer.paused && calls.is_empty();
            if calls.is_empty() {
                // The provider's own search loop paused: the answer so far
                // is the last message, and the next call goes on with it.
                if answer.paused {
                    continue;
                }
                // A command started with notify_on_exit wakes the turn
                // when it ends, instead of the model polling for it.
                if self.deliver_exit_notices(true).await? {
                    continue;
                }
                // The lead paused: its background tasks' answers arrive.
                if self.deliver_tasks().await? {
                    continue;
                }
                if terminal.is_some() {
                    if reminders < self.limits.output_reminders {
                        reminders += 1;
                        let m = Message::user(format!(
                            "[evoflux] This turn must end with a structured result: call `{FINAL_OUTPUT}` with arguments that match its schema."
                        ));
                        self.recorder.append(m, None).await?;
                        continue;
                    }
                    return Ok(TurnOutcome {
                        status: TurnStatus::OutputMissing,
                        text: last_text,
                        output: None,
                        question: None,
                        unmet_contracts: Vec::new(),
                    });
                }
                return Ok(TurnOutcome {
                    status: TurnStatus::Completed,
                    text: last_text,
                    output: None,
                    question: None,
                    unmet_contracts: Vec::new(),
                });
            }
            let mut questions = Vec::new();
            let mut output = None;
            for call in calls {
                if self.turn.tool_calls_used >= self.limits.tool_calls_per_turn {
                    let r = ToolResult::error(format!(
                        "The limit of {} tool calls per turn is reached; finish with what you have.",
                        self.limits.tool_calls_per_turn
                    ));
                    self.recorder.record(&call, r).await?;
                    continue;
                }
                self.turn.tool_calls_used += 1;
                self.emit(&Event::ToolStarted {
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                // Arguments that are not JSON are the model's mistake: it
                // reads why and calls again; the turn goes on.
                if let Some(bad) = answer.malformed(&call.id) {
                    let r = ToolResult::error(format!(
                        "The arguments of this `{}` call are not valid JSON ({}): {}\nCall the tool again with a JSON object that matches its schema.",
                        call.name, bad.error, bad.raw_arguments
                    ));
                    self.recorder.record(&call, r).await?;
                    continue;
                }
                match self.handle_call(&call, terminal.as_ref()).await? {
                    CallOutcome::Result(mut result) => {
                        if let Some(tool) = self.tools.get(&call.name) {
                            self.pipeline.after_tool(
                                &self.ctx(),
                                &call,
                                &tool.definition,
                                &mut result,
                            );
                        }
                        self.recorder.record(&call, result).await?;
                    }
                    CallOutcome::Final(value) => {
                        self.recorder
                            .record(&call, ToolResult::ok("Result accepted."))
                            .await?;
                        output = Some(value);
                    }
                    CallOutcome::Question(q) => questions.push(q),
                }
            }
            if let Some(output) = output {
                return Ok(TurnOutcome {
                    status: TurnStatus::Completed,
                    text: last_text,
                    output: Some(output),
                    question: None,
                    unmet_contracts: Vec::new(),
                });
            }
            if let Some(q) = questions.into_iter().next() {
                return Ok(self.waiting(q));
            }
        }
        Ok(TurnOutcome {
            status: TurnStatus::LimitReached,
            text: last_text,
            output: None,
            question: None,
            unmet_contracts: Vec::new(),
        })
    }
}
