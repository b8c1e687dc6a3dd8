//! The MCP prompts a run can offer the user as slash commands: the ready
//! prompts of every manager given, each under a unique name
//! `mcp__<server>__<prompt>` from the same naming rule as tools
//! ([`crate::naming`]), so what the user types reads like the tools the
//! model calls. A [`PromptSet`] is a snapshot; expansion goes to the
//! server's current connection.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::definition::ServerOwner;
use crate::error::McpError;
use crate::manager::{McpManager, Slot};
use crate::naming::{ToolIdentity, assign_names};
use crate::types::{McpPromptArgument, McpPromptResult, McpResource, McpResourceContents};

/// One prompt as the user invokes it, with where it comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct McpPromptDescriptor {
    /// `mcp__<server>__<prompt>`, unique in the set.
    pub qualified_name: String,
    pub description: String,
    /// The declared arguments, in the server's order.
    pub arguments: Vec<McpPromptArgument>,
    /// The server name within its manager.
    pub server: String,
    /// The prompt name exactly as the server lists it.
    pub prompt: String,
    pub owner: ServerOwner,
    /// Whether WebBridge conversations are offered its server's prompts.
    #[serde(skip_serializing_if = "crate::definition::WebBridge::is_undeclared")]
    pub webbridge: crate::definition::WebBridge,
}

/// The ready prompts of a set of managers.
#[derive(Debug, Clone, Default)]
pub struct PromptSet {
    prompts: Vec<McpPromptDescriptor>,
    index: BTreeMap<String, usize>,
    targets: Vec<Arc<Slot>>,
}

impl PromptSet {
    /// The ready prompts of `managers` (global first, as for tools, so
    /// names stay stable).
    pub fn assemble(managers: &[&McpManager]) -> PromptSet {
        let mut entries = Vec::new();
        for manager in managers {
            for slot in manager.slots() {
                let Some(prompts) = slot.ready_prompts() else {
                    continue;
                };
                let mut prompts: Vec<_> = prompts.iter().cloned().collect();
                prompts.sort_by(|a, b| a.name.cmp(&b.name));
                for prompt in prompts {
                    entries.push((slot.clone(), prompt));
                }
            }
        }
        let identities: Vec<ToolIdentity> = entries
            .iter()
            .map(|(slot, prompt)| ToolIdentity {
                server: slot.definition.naming_key(),
                tool: prompt.name.clone(),
            })
            .collect();
        let names = assign_names(&identities, &BTreeSet::new());
        let mut set = PromptSet::default();
        for ((slot, prompt), (qualified_name, _)) in entries.into_iter().zip(names) {
            set.index.insert(qualified_name.clone(), set.prompts.len());
            set.prompts.push(McpPromptDescriptor {
                qualified_name,
                description: prompt
                    .description
                    .clone()
                    .or_else(|| prompt.title.clone())
                    .unwrap_or_default(),
                arguments: prompt.arguments.clone(),
                server: slot.definition.name.clone(),
                prompt: prompt.name.clone(),
                owner: slot.definition.owner.clone(),
                webbridge: slot.definition.webbridge,
            });
            set.targets.push(slot);
        }
        set
    }

    /// The prompts, in a stable order.
    pub fn prompts(&self) -> &[McpPromptDescriptor] {
        &self.prompts
    }

    pub fn get(&self, qualified_name: &str) -> Option<&McpPromptDescriptor> {
        self.index.get(qualified_name).map(|&i| &self.prompts[i])
    }

    /// Expands a prompt (`prompts/get`) with `args` keyed by the declared
    /// argument names.
    pub async fn get_prompt(
        &self,
        qualified_name: &str,
        args: Map<String, Value>,
        timeout: Duration,
    ) -> Result<McpPromptResult, McpError> {
        let &i = self
            .index
            .get(qualified_name)
            .ok_or_else(|| McpError::UnknownTool(qualified_name.to_owned()))?;
        let prompt = &self.prompts[i].prompt;
        self.targets[i].get_prompt(prompt, args, timeout).await
    }
}

impl McpManager {
    /// Reads `uri` from server `server` of this manager.
    pub async fn read_resource(
        &self,
        server: &str,
        uri: &str,
        timeout: Duration,
    ) -> Result<Vec<McpResourceContents>, McpError> {
        self.slot_of(server)?.read_resource(uri, timeout).await
    }

    /// The resources server `server` of this manager lists.
    pub async fn list_resources(
        &self,
        server: &str,
        timeout: Duration,
    ) -> Result<Vec<McpResource>, McpError> {
        self.slot_of(server)?.list_resources(timeout).await
    }
}
