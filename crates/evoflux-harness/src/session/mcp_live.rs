//! What an MCP server sends during one of the session's tool calls, made
//! part of the session: progress and log messages become events on the
//! call (`tool_progress`, `tool_log`), a sampling request is put to the
//! user and answered by the session's model within its budget, and a form
//! (elicitation) is put to the user — both through the session's
//! [`Approver`], so the session host's broker shares them with every
//! client and a run nobody watches declines them with a reason.
//!
//! The connection keeps the call's [`CallListener`] only while the call
//! runs ([`evoflux_mcp::live`]); nothing here outlives the call except
//! the usage it recorded, which the harness adds to its ledger after.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use evoflux_core::ids::SessionId;
use evoflux_core::price::{Price, Usd};
use evoflux_mcp::live::{
    BoxFuture, CallContext, CallListener, ElicitationAnswer, ElicitationRequest, McpLog,
    McpLogLevel, McpProgress, SamplingAnswer, SamplingRequest, SamplingRole,
};
use evoflux_model::{Message, Provider, Request};
use evoflux_store::Store;

use super::Harness;
use crate::approval::{
    ApprovalDecision, ApprovalRequest, ApprovalSubject, Approver, Decided, ElicitationAsk, Elicited,
};
use crate::events::{
    CallPurpose, ElicitationAction, Event, EventSink, SamplingAsk, ServerLogLevel,
};

/// One MCP tool call's listener.
#[derive(Debug)]
pub(super) struct CallListenerOf {
    session_id: SessionId,
    /// The session whose tree `[limits] max_cost_usd` bounds.
    root: SessionId,
    call_id: String,
    tool: String,
    server: String,
    events: Arc<dyn EventSink>,
    approver: Arc<dyn Approver>,
    provider: Arc<dyn Provider>,
    model: String,
    price: Option<Price>,
    max_cost: Option<Usd>,
    store: Store,
    /// Requests of this call so far, for their ids.
    asked: AtomicU32,
    /// What sampling cost, for the session's ledger after the call.
    recorded: Mutex<Vec<evoflux_store::Usage>>,
    /// Set when the call is over (answered, or dropped with its cancelled
    /// turn): a request the server still has open says nothing more to
    /// the session's clients.
    ended: AtomicBool,
}

/// Marks the call's listener ended when the call is over, however it ends.
pub(super) struct CallOver(pub(super) Arc<CallListenerOf>);

impl Drop for CallOver {
    fn drop(&mut self) {
        self.0.ended.store(true, Ordering::SeqCst);
    }
}

impl Harness {
    /// The context of the MCP call `call_id` of `tool` on `server`.
    pub(super) fn mcp_call_context(
        &self,
        call_id: &str,
        tool: &str,
        server: &str,
    ) -> (CallContext, Arc<CallListenerOf>) {
        let listener = Arc::new(CallListenerOf {
            session_id: self.session.id,
            root: self.root,
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            server: server.to_owned(),
            events: Arc::clone(&self.recorder.events),
            approver: Arc::clone(&self.approver),
            provider: Arc::clone(&self.model.provider),
            model: self.model.name.clone(),
            price: self.model.price,
            max_cost: self.limits.max_cost,
            store: self.recorder.store.clone(),
            asked: AtomicU32::new(0),
            recorded: Mutex::new(Vec::new()),
            ended: AtomicBool::new(false),
        });
        let context = CallContext {
            owner: self.session.id.to_string(),
            listener: Arc::clone(&listener) as Arc<dyn CallListener>,
        };
        (context, listener)
    }

    /// Counts what the call's sampling cost in the session's ledger.
    pub(super) fn mcp_call_ended(&mut self, listener: &CallListenerOf) {
        let recorded =
            std::mem::take(&mut *listener.recorded.lock().unwrap_or_else(|p| p.into_inner()));
        for usage in &recorded {
            self.usage.recorded(usage);
        }
    }
}

const fn level(level: McpLogLevel) -> ServerLogLevel {
    match level {
        McpLogLevel::Debug => ServerLogLevel::Debug,
        McpLogLevel::Info => ServerLogLevel::Info,
        McpLogLevel::Notice => ServerLogLevel::Notice,
        McpLogLevel::Warning => ServerLogLevel::Warning,
        McpLogLevel::Error => ServerLogLevel::Error,
        McpLogLevel::Critical => ServerLogLevel::Critical,
        McpLogLevel::Alert => ServerLogLevel::Alert,
        McpLogLevel::Emergency => ServerLogLevel::Emergency,
    }
}

impl CallListenerOf {
    /// Emits `event` while the call runs.
    fn emit(&self, event: &Event) {
        if !self.ended.load(Ordering::SeqCst) {
            self.events.emit(event);
        }
    }

    fn next_id(&self, what: &str) -> String {
        let n = self.asked.fetch_add(1, Ordering::Relaxed) + 1;
        format!("{}:{what}-{n}", self.call_id)
    }

    /// Puts the sampling request to the user, as an approval.
    async fn approved(&self, request: &SamplingRequest) -> Result<(), String> {
        let id = self.next_id("sampling");
        let preview = request.preview();
        let ask = ApprovalRequest {
            session_id: self.session_id.to_string(),
            call_id: id.clone(),
            tool: self.tool.clone(),
            arguments: serde_json::to_value(request).unwrap_or_default(),
            subject: ApprovalSubject::Sampling {
                server: self.server.clone(),
                preview: preview.clone(),
                max_tokens: request.max_tokens,
            },
            workdir: None,
        };
        let decided = self.approver.approve(&ask);
        self.emit(&Event::ApprovalRequested {
            call_id: id.clone(),
            tool: self.tool.clone(),
            outside_sandbox: None,
            control: None,
            workdir: None,
            sampling: Some(SamplingAsk {
                tool_call_id: self.call_id.clone(),
                server: self.server.clone(),
                preview,
                max_tokens: request.max_tokens,
            }),
        });
        let Decided { decision, by } = decided.await;
        let reason = match &decision {
            ApprovalDecision::Denied { reason } => Some(reason.clone()),
            ApprovalDecision::Approved
            | ApprovalDecision::ApprovedForSession
            | ApprovalDecision::ApprovedForWorkspace => None,
        };
        self.emit(&Event::ApprovalDecided {
            call_id: id,
            decision: decision.kind(),
            reason: reason.clone(),
            by,
        });
        match reason {
            Some(reason) => Err(format!("the user did not allow sampling: {reason}")),
            None => Ok(()),
        }
    }

    /// Whether the call, priced at its worst, keeps the session within
    /// `[limits] max_cost_usd`.
    async fn within_budget(&self, request: &Request) -> Result<(), String> {
        match super::ledger::side_call_within_limit(
            &self.store,
            self.root,
            self.max_cost,
            self.price.as_ref(),
            request,
        )
        .await
        {
            Ok(true) => Ok(()),
            Ok(false) => Err(
                "answering would pass the session's cost limit ([limits] max_cost_usd)".to_owned(),
            ),
            Err(e) => Err(format!("the session's cost so far cannot be read: {e}")),
        }
    }

    async fn answer(&self, request: SamplingRequest) -> Result<SamplingAnswer, String> {
        self.approved(&request).await?;
        let mut messages = Vec::with_capacity(request.messages.len() + 1);
        if let Some(system) = &request.system_prompt {
            messages.push(Message::system(system.clone()));
        }
        for m in &request.messages {
            messages.push(match m.role {
                SamplingRole::User => Message::user(m.text.clone()),
                SamplingRole::Assistant => Message::assistant(m.text.clone()),
            });
        }
        let model_request = Request::new(&self.model, messages)
            .with_max_tokens(request.max_tokens)
            .with_purpose(CallPurpose::Sampling);
        self.within_budget(&model_request).await?;
        let answer = crate::side_call::collect(self.provider.stream(model_request)).await;
        for usage in answer.usage {
            let usage = super::model_call::call_usage(
                usage,
                &crate::hooks::ContextStats::default(),
                self.price.as_ref(),
            );
            if self.store.add_usage(self.session_id, usage).await.is_ok() {
                self.recorded
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(usage);
                self.emit(&Event::ModelCallCompleted {
                    model: self.model.clone(),
                    purpose: CallPurpose::Sampling,
                    usage,
                });
            }
        }
        if let Some(e) = answer.failure {
            return Err(format!("the session's model failed to answer: {e}"));
        }
        Ok(SamplingAnswer {
            text: answer.text,
            model: self.model.clone(),
        })
    }

    async fn form(&self, request: ElicitationRequest) -> ElicitationAnswer {
        let ask = ElicitationAsk {
            session_id: self.session_id.to_string(),
            id: self.next_id("elicitation"),
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
            server: self.server.clone(),
            message: request.message,
            schema: request.schema,
        };
        let answered = self.approver.elicit(&ask);
        self.emit(&Event::ElicitationRequested {
            id: ask.id.clone(),
            call_id: ask.call_id.clone(),
            server: ask.server.clone(),
            message: ask.message.clone(),
            schema: ask.schema.clone(),
        });
        let Elicited { answer, by } = answered.await;
        // An asker that let a wrong answer through: declined, saying why.
        let answer = match ask.check(&answer) {
            Ok(()) => answer,
            Err(why) => ElicitationAnswer::Decline {
                reason: Some(format!("the answer did not fit the form: {why}")),
            },
        };
        let action = match &answer {
            ElicitationAnswer::Accept { .. } => ElicitationAction::Accept,
            ElicitationAnswer::Decline { .. } => ElicitationAction::Decline,
            ElicitationAnswer::Cancel => ElicitationAction::Cancel,
        };
        self.emit(&Event::ElicitationAnswered {
            id: ask.id,
            action,
            by,
        });
        answer
    }
}

impl CallListener for CallListenerOf {
    fn progress(&self, progress: McpProgress) {
        self.emit(&Event::ToolProgress {
            call_id: self.call_id.clone(),
            progress: progress.progress,
            total: progress.total,
            message: progress.message,
        });
    }

    fn log(&self, log: McpLog) {
        self.emit(&Event::ToolLog {
            call_id: self.call_id.clone(),
            server: self.server.clone(),
            level: level(log.level),
            logger: log.logger,
            message: log.message,
        });
    }

    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<SamplingAnswer, String>> {
        Box::pin(async move {
            let answered = self.answer(request).await;
            if let Err(why) = &answered {
                self.emit(&Event::Warning {
                    code: "mcp/sampling-refused".to_owned(),
                    message: format!(
                        "the MCP server `{}` asked the session's model for an answer; refused: \
                         {why}",
                        self.server
                    ),
                });
            }
            answered
        })
    }

    fn elicit(&self, request: ElicitationRequest) -> BoxFuture<'_, ElicitationAnswer> {
        Box::pin(self.form(request))
    }
}
