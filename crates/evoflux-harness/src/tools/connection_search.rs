//! Deferred MCP tools and `connection_search`.
//!
//! An agent granted a large MCP server would otherwise send every one of
//! its tools, schemas included, in every request. When the granted tools
//! are over the budget in [`evoflux_graph::tool::builtin::connection_search`], none of them is
//! sent: the session offers `connection_search` instead, which searches
//! their names and descriptions and activates the exact tools the model
//! picks. The activated set is one durable record per session (the store's
//! `connection_tools`), read back on resume; nothing rebuilds it from the
//! transcript. Under the budget, the tools are sent directly as before.
//!
//! This module holds the rules (the budget, the scoring, the call's
//! arguments) and the tool's handler, whose offering
//! (`Offering::WhileToolsHeldBack`) says when the model sees it; the
//! session applies them to its MCP state in `session::mcp`
//! (`Harness::connection_search`), which holds tools back only when the
//! session has a tool so offered. Its definition is
//! [`evoflux_graph::tool::builtin::connection_search`].

use evoflux_graph::tool::builtin::connection_search as limits;
use evoflux_mcp::McpToolDescriptor;
use evoflux_model::ToolCall;
use evoflux_store::ConnectionTool;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{BuiltinTool, Handled, Offering};
use crate::events::ToolResult;
use crate::session::Harness;

#[derive(Debug)]
pub(super) struct ConnectionSearch;

impl BuiltinTool for ConnectionSearch {
    fn offering(&self) -> Offering {
        Offering::WhileToolsHeldBack
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(session.connection_search(call))
    }
}

/// The stable identity of an MCP tool, as the store records it.
pub fn identity(tool: &McpToolDescriptor) -> ConnectionTool {
    ConnectionTool {
        owner: tool.owner.label(),
        server: tool.server.clone(),
        tool: tool.tool.clone(),
    }
}

/// The bytes `tools` add to a request: each definition as JSON.
pub fn definition_bytes<'a>(tools: impl IntoIterator<Item = &'a McpToolDescriptor>) -> usize {
    tools
        .into_iter()
        .map(|t| {
            // The schema's own JSON; the name and description around it.
            t.qualified_name.len() + t.description.len() + t.input_schema.to_string().len() + 64
        })
        .sum()
}

/// Whether `tools` (the granted MCP tools) are too many to send up front.
pub fn over_budget(tools: &[&McpToolDescriptor]) -> bool {
    tools.len() > limits::DEFER_OVER_TOOLS
        || definition_bytes(tools.iter().copied()) > limits::DEFER_OVER_BYTES
}

/// One `connection_search` call's arguments (already checked against the
/// tool's schema).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchCall {
    #[serde(default)]
    pub query: Option<String>,
    #[serde(default)]
    pub server: Option<String>,
    #[serde(default)]
    pub activate: Vec<String>,
    #[serde(default)]
    pub limit: Option<u64>,
}

impl SearchCall {
    pub fn parse(arguments: &Value) -> Result<SearchCall, String> {
        let call: SearchCall = serde_json::from_value(arguments.clone())
            .map_err(|e| format!("invalid arguments for connection_search: {e}"))?;
        if call.query.is_none() && call.activate.is_empty() {
            return Err(
                "connection_search needs `query` (keywords to search for) or `activate` \
                 (names of tools from earlier results to turn on)"
                    .to_owned(),
            );
        }
        Ok(call)
    }

    pub fn limit(&self) -> usize {
        let n = self
            .limit
            .unwrap_or(limits::DEFAULT_RESULTS)
            .min(limits::MAX_RESULTS);
        usize::try_from(n).unwrap_or(usize::MAX)
    }
}

/// Lower-case words of `text`: runs of letters and digits, with
/// `camelCase` split at the case change, so `createIssue`, `create_issue`
/// and `create-issue` all give `create`, `issue`.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut prev_lower = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if c.is_uppercase() && prev_lower && !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            prev_lower = c.is_lowercase() || c.is_ascii_digit();
            current.extend(c.to_lowercase());
        } else {
            prev_lower = false;
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
        }
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// How well `tool` matches the query's words: a word in the tool's name
/// counts three, one in its description one; a word matches a word that
/// starts with it (`issue` matches `issues`). The whole query equal to the
/// tool's name wins outright.
pub fn score(tool: &McpToolDescriptor, query: &str, query_words: &[String]) -> u32 {
    let query = query.trim();
    if query.eq_ignore_ascii_case(&tool.qualified_name) || query.eq_ignore_ascii_case(&tool.tool) {
        return u32::MAX;
    }
    let name = words(&tool.tool);
    let description = words(&tool.description);
    let hit = |set: &[String], w: &str| set.iter().any(|s| s.starts_with(w));
    query_words
        .iter()
        .map(|w| {
            let mut s = 0;
            if hit(&name, w) {
                s += 3;
            }
            if hit(&description, w) {
                s += 1;
            }
            s
        })
        .sum()
}

/// The best matches of `query` among `tools`, best first, ties by name;
/// tools that match no word are left out.
pub fn search<'a>(
    tools: &[&'a McpToolDescriptor],
    query: &str,
    limit: usize,
) -> Vec<&'a McpToolDescriptor> {
    let query_words = words(query);
    let mut scored: Vec<(u32, &McpToolDescriptor)> = tools
        .iter()
        .map(|t| (score(t, query, &query_words), *t))
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then_with(|| a.1.qualified_name.cmp(&b.1.qualified_name))
    });
    scored.into_iter().take(limit).map(|(_, t)| t).collect()
}

/// One search result as the model sees it: no schema (it arrives with the
/// definition once the tool is activated), a short description.
pub fn result_entry(tool: &McpToolDescriptor, active: bool) -> Value {
    let mut description: String = tool
        .description
        .chars()
        .take(limits::DESCRIPTION_CHARS)
        .collect();
    if description.len() < tool.description.len() {
        description.push('…');
    }
    json!({
        "name": tool.qualified_name,
        "server": tool.server,
        "description": description,
        "active": active,
    })
}

/// The description `connection_search` carries in a session: the
/// compiled one and the servers whose tools it reaches, with their tool
/// counts. It changes only when the set of servers does, so the request
/// prefix stays stable while tools are activated.
pub fn bound_description(base: &str, servers: &[(String, usize)]) -> String {
    let listed: Vec<String> = servers
        .iter()
        .map(|(server, n)| format!("`{server}` ({n} tools)"))
        .collect();
    format!("{base} Servers: {}.", listed.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use evoflux_mcp::ServerOwner;

    fn tool(name: &str, description: &str) -> McpToolDescriptor {
        McpToolDescriptor {
            qualified_name: format!("mcp__big__{name}"),
            description: description.to_owned(),
            input_schema: json!({"type": "object"}),
            server: "big".into(),
            tool: name.into(),
            owner: ServerOwner::Global {
                source: None,
                layer: None,
            },
            webbridge: evoflux_mcp::WebBridge::Undeclared,
        }
    }

    #[test]
    fn words_split_snake_kebab_and_camel_case() {
        assert_eq!(words("createIssue"), ["create", "issue"]);
        assert_eq!(words("create_issue-now"), ["create", "issue", "now"]);
        assert_eq!(
            words("List GitHub PRs v2"),
            ["list", "git", "hub", "prs", "v2"]
        );
    }

    #[test]
    fn names_weigh_more_than_descriptions_and_prefixes_match() {
        let a = tool("create_issue", "Open a new ticket.");
        let b = tool("list_tickets", "Lists issues of a repository.");
        let c = tool("weather", "Today's forecast.");
        let all = [&a, &b, &c];
        let got: Vec<&str> = search(&all, "issue", 10)
            .iter()
            .map(|t| t.tool.as_str())
            .collect();
        assert_eq!(got, ["create_issue", "list_tickets"]);
        assert!(search(&all, "nothing here", 10).is_empty());
        // The exact name wins over any word score.
        let got = search(&all, "mcp__big__weather", 1);
        assert_eq!(got[0].tool, "weather");
        assert_eq!(search(&all, "issue", 1).len(), 1);
    }

    #[test]
    fn calls_need_a_query_or_names_to_activate() {
        assert!(SearchCall::parse(&json!({})).is_err());
        assert!(SearchCall::parse(&json!({"server": "big"})).is_err());
        let c = SearchCall::parse(&json!({"query": "x", "limit": 500})).unwrap();
        assert_eq!(c.limit(), limits::MAX_RESULTS as usize);
        let c = SearchCall::parse(&json!({"activate": ["a"]})).unwrap();
        assert_eq!(c.limit(), limits::DEFAULT_RESULTS as usize);
    }

    #[test]
    fn the_budget_counts_tools_and_bytes() {
        let small: Vec<McpToolDescriptor> =
            (0..3).map(|i| tool(&format!("t{i}"), "short")).collect();
        let refs: Vec<&McpToolDescriptor> = small.iter().collect();
        assert!(!over_budget(&refs));
        let many: Vec<McpToolDescriptor> = (0..=limits::DEFER_OVER_TOOLS)
            .map(|i| tool(&format!("t{i}"), "short"))
            .collect();
        let refs: Vec<&McpToolDescriptor> = many.iter().collect();
        assert!(over_budget(&refs));
        let big = tool("huge", &"x".repeat(limits::DEFER_OVER_BYTES));
        assert!(over_budget(&[&big]));
    }

    #[test]
    fn results_cut_long_descriptions() {
        let t = tool("a", &"d".repeat(1000));
        let v = result_entry(&t, false);
        let d = v["description"].as_str().unwrap();
        assert_eq!(d.chars().count(), limits::DESCRIPTION_CHARS + 1);
        assert!(d.ends_with('…'));
    }
}
