//! `code_context`'s handler: navigates the session's repositories through
//! its code index, on a blocking thread; a symbol the schema refused as
//! prose gets the index's own refusal, with names it knows, as a hint. Its
//! definition is [`evoflux_graph::tool::builtin::code_context`].

use evoflux_model::ToolCall;
use serde_json::Value;

use super::{BuiltinTool, Handled, file_result};
use crate::error::HarnessError;
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct CodeContext;

impl BuiltinTool for CodeContext {
    // No gap: every Coding session has its repositories to navigate; the
    // index persists when the session knows a cache dir.

    /// For a call the schema refused because its symbol is prose: the
    /// service's own refusal, with the index's names among its words, so
    /// the model can retry with one of them.
    fn argument_hint<'a>(
        &'a self,
        session: &'a Harness,
        arguments: &'a Value,
    ) -> Handled<'a, Option<String>> {
        Box::pin(async move {
            let Some(nav) = session.code_navigator() else {
                return Ok(None);
            };
            let Some(symbol) = arguments
                .get("symbol")
                .and_then(Value::as_str)
                .filter(|s| !evoflux_core::code_operation::is_symbol(s))
            else {
                return Ok(None);
            };
            let args = serde_json::json!({"operation": "definition", "symbol": symbol});
            let out = tokio::task::spawn_blocking(move || nav.run(&args))
                .await
                .map_err(|e| HarnessError::Join(e.to_string()))?;
            Ok(out.is_error.then_some(out.text))
        })
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            let Some(nav) = session.code_navigator() else {
                return Ok(ToolResult::error(format!(
                    "`{}` navigates the repositories of a Coding session; this session has none.",
                    call.name
                )));
            };
            let args = call.arguments.clone();
            let out = tokio::task::spawn_blocking(move || nav.run(&args))
                .await
                .map_err(|e| HarnessError::Join(e.to_string()))?;
            Ok(file_result(out))
        })
    }
}
