//! The MCP tools a run can offer the model right now: the ready tools of
//! every manager given, each under a unique qualified name.
//!
//! A [`ToolSet`] is a snapshot taken per turn. Calls go to the server's
//! current connection, so a server restarted since the snapshot is used
//! transparently and a stopped one answers `mcp/server-not-ready`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use evoflux_core::Diagnostic;
use serde::Serialize;
use serde_json::Value;

use crate::codes;
use crate::definition::ServerOwner;
use crate::error::McpError;
use crate::manager::{McpManager, Slot};
use crate::naming::{NameOrigin, ToolIdentity, assign_names};
use crate::types::McpToolResult;

/// One tool as the model sees it, with where it comes from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpToolDescriptor {
    /// The model-visible name (`mcp__<server>__<tool>`, unique in the set).
    pub qualified_name: String,
    pub description: String,
    /// The tool's JSON Schema for its arguments.
    pub input_schema: Value,
    /// The server name within its manager.
    pub server: String,
    /// The tool name exactly as the server lists it.
    pub tool: String,
    pub owner: ServerOwner,
    /// Whether WebBridge conversations are offered its server's tools.
    #[serde(skip_serializing_if = "crate::definition::WebBridge::is_undeclared")]
    pub webbridge: crate::definition::WebBridge,
}

/// The ready MCP tools of a set of managers.
#[derive(Debug, Clone, Default)]
pub struct ToolSet {
    tools: Vec<McpToolDescriptor>,
    index: BTreeMap<String, usize>,
    targets: Vec<Arc<Slot>>,
    diagnostics: Vec<Diagnostic>,
}

impl ToolSet {
    /// The ready tools of `managers` (pass the global manager first, then
    /// the plugin managers in a stable order, so names stay stable across
    /// turns). `reserved` holds every name already taken by other tools
    /// (built-in and command tools), so MCP names never shadow them.
    pub fn assemble(managers: &[&McpManager], reserved: &BTreeSet<String>) -> ToolSet {
        let mut entries = Vec::new();
        for manager in managers {
            for slot in manager.slots() {
                let Some(tools) = slot.ready_tools() else {
                    continue;
                };
                let mut tools: Vec<_> = tools.iter().cloned().collect();
                tools.sort_by(|a, b| a.name.cmp(&b.name));
                for tool in tools {
                    entries.push((slot.clone(), tool));
                }
            }
        }
        let identities: Vec<ToolIdentity> = entries
            .iter()
            .map(|(slot, tool)| ToolIdentity {
                server: slot.definition.naming_key(),
                tool: tool.name.clone(),
            })
            .collect();
        let names = assign_names(&identities, reserved);
        let mut set = ToolSet::default();
        for ((slot, tool), (qualified_name, origin)) in entries.into_iter().zip(names) {
            match origin {
                NameOrigin::Plain => {}
                NameOrigin::Truncated | NameOrigin::Disambiguated => {
                    set.diagnostics.push(Diagnostic::info(
                        codes::TOOL_NAME_ADJUSTED,
                        format!(
                            "MCP tool `{}` of server `{}` ({}) is offered as `{qualified_name}`",
                            tool.name,
                            slot.definition.name,
                            slot.definition.owner.label()
                        ),
                    ));
                }
            }
            set.index.insert(qualified_name.clone(), set.tools.len());
            set.tools.push(McpToolDescriptor {
                qualified_name,
                description: tool
                    .description
                    .clone()
                    .or_else(|| tool.title.clone())
                    .unwrap_or_default(),
                input_schema: tool.input_schema.clone(),
                server: slot.definition.name.clone(),
                tool: tool.name.clone(),
                owner: slot.definition.owner.clone(),
                webbridge: slot.definition.webbridge,
            });
            set.targets.push(slot);
        }
        set
    }

    /// The tool definitions, in a stable order.
    pub fn tools(&self) -> &[McpToolDescriptor] {
        &self.tools
    }

    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    pub fn len(&self) -> usize {
        self.tools.len()
    }

    pub fn get(&self, qualified_name: &str) -> Option<&McpToolDescriptor> {
        self.index.get(qualified_name).map(|&i| &self.tools[i])
    }

    /// Names that needed a hash suffix (`mcp/tool-name-adjusted`).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// Executes a call. A tool that reports `isError` returns `Ok` with
    /// `is_error: true`; `Err` means the call itself failed (unknown tool,
    /// server not ready, timeout, transport or JSON-RPC error).
    pub async fn call_tool(
        &self,
        qualified_name: &str,
        args: Value,
        timeout: Duration,
    ) -> Result<McpToolResult, McpError> {
        self.call_tool_in(qualified_name, args, timeout, None).await
    }

    /// [`ToolSet::call_tool`] for a session: what the server sends during
    /// the call (progress, logs, sampling and elicitation requests) goes to
    /// `context`; without one, the server's requests are refused.
    pub async fn call_tool_in(
        &self,
        qualified_name: &str,
        args: Value,
        timeout: Duration,
        context: Option<crate::live::CallContext>,
    ) -> Result<McpToolResult, McpError> {
        let &i = self
            .index
            .get(qualified_name)
            .ok_or_else(|| McpError::UnknownTool(qualified_name.to_owned()))?;
        self.targets[i]
            .call(&self.tools[i].tool, args, timeout, context)
            .await
    }
}
