//! Deferred tools and `connection_search`.
//!
//! An agent granted a large MCP server would otherwise send every one of
//! its tools, schemas included, in every request. The tools a session may
//! hold back form one catalog ([`Deferrable`]): its granted MCP tools and
//! the built-in tools whose handler joins them
//! (`Offering::DeferredWithConnections`: `browser`, large and needed in few
//! turns). When the catalog is over the budget in
//! [`evoflux_graph::tool::builtin::connection_search`], none of it is
//! sent: the session offers `connection_search` instead, which searches
//! the catalog's names and descriptions and activates the exact tools the
//! model picks. The activated set is one durable record per session (the
//! store's `connection_tools`, a built-in recorded under
//! [`BUILTIN_OWNER`]), read back on resume; nothing rebuilds it from the
//! transcript. Under the budget, every tool is sent directly as before.
//!
//! This module holds the rules (the catalog's entries and identities, the
//! budget, the scoring, the call's arguments) and the tool's handler, whose
//! offering (`Offering::WhileToolsHeldBack`) says when the model sees it;
//! the session applies them in `session::mcp` (`Harness::connection_search`),
//! which holds tools back only when the session has a tool so offered. Its
//! definition is [`evoflux_graph::tool::builtin::connection_search`].

use evoflux_graph::tool::ToolDefinition;
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

/// The owner label the store records an activated built-in tool under
/// (`connection_tools.owner`), with an empty `server` and the tool's name.
/// An MCP server's owner label is `global` or `plugin:<name>`
/// ([`evoflux_mcp::ServerOwner::label`]), so it never collides; the
/// existing columns hold it, and no migration is needed.
pub const BUILTIN_OWNER: &str = "builtin";

/// One tool of the catalog a session may hold back.
#[derive(Debug, Clone, Copy)]
pub struct Deferrable<'a> {
    /// The model-visible name.
    pub name: &'a str,
    pub description: &'a str,
    pub input_schema: &'a Value,
    pub origin: Origin<'a>,
}

/// Where a [`Deferrable`] comes from. Closed.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A tool of a granted MCP server.
    Mcp(&'a McpToolDescriptor),
    /// A built-in tool of the session whose handler joins the catalog
    /// (`Offering::DeferredWithConnections`).
    Builtin,
}

impl<'a> Deferrable<'a> {
    pub fn mcp(tool: &'a McpToolDescriptor) -> Deferrable<'a> {
        Deferrable {
            name: &tool.qualified_name,
            description: &tool.description,
            input_schema: &tool.input_schema,
            origin: Origin::Mcp(tool),
        }
    }

    pub fn builtin(definition: &'a ToolDefinition) -> Deferrable<'a> {
        Deferrable {
            name: &definition.name,
            description: &definition.description,
            input_schema: &definition.input_schema,
            origin: Origin::Builtin,
        }
    }

    /// The name its source lists it by: an MCP tool's name on its server,
    /// a built-in's own name.
    pub fn own_name(&self) -> &'a str {
        match self.origin {
            Origin::Mcp(tool) => &tool.tool,
            Origin::Builtin => self.name,
        }
    }

    /// The MCP server it belongs to; `None` for a built-in.
    pub fn server(&self) -> Option<&'a str> {
        match self.origin {
            Origin::Mcp(tool) => Some(&tool.server),
            Origin::Builtin => None,
        }
    }

    /// Its stable identity, as the store records an activation.
    pub fn identity(&self) -> ConnectionTool {
        match self.origin {
            Origin::Mcp(tool) => ConnectionTool {
                owner: tool.owner.label(),
                server: tool.server.clone(),
                tool: tool.tool.clone(),
            },
            Origin::Builtin => ConnectionTool {
                owner: BUILTIN_OWNER.to_owned(),
                server: String::new(),
                tool: self.name.to_owned(),
            },
        }
    }
}

/// The bytes `tools` add to a request: each definition as JSON.
pub fn definition_bytes<'a>(tools: impl IntoIterator<Item = &'a Deferrable<'a>>) -> usize {
    tools
        .into_iter()
        .map(|t| {
            // The schema's own JSON; the name and description around it.
            t.name.len() + t.description.len() + t.input_schema.to_string().len() + 64
        })
        .sum()
}

/// Whether `catalog` (the granted MCP tools and the deferrable built-ins)
/// is too large to send up front.
pub fn over_budget(catalog: &[Deferrable<'_>]) -> bool {
    catalog.len() > limits::DEFER_OVER_TOOLS || definition_bytes(catalog) > limits::DEFER_OVER_BYTES
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
pub fn score(tool: &Deferrable<'_>, query: &str, query_words: &[String]) -> u32 {
    let query = query.trim();
    if query.eq_ignore_ascii_case(tool.name) || query.eq_ignore_ascii_case(tool.own_name()) {
        return u32::MAX;
    }
    let name = words(tool.own_name());
    let description = words(tool.description);
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
pub fn search<'a>(tools: &[Deferrable<'a>], query: &str, limit: usize) -> Vec<Deferrable<'a>> {
    let query_words = words(query);
    let mut scored: Vec<(u32, Deferrable<'a>)> = tools
        .iter()
        .map(|t| (score(t, query, &query_words), *t))
        .filter(|(s, _)| *s > 0)
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(b.1.name)));
    scored.into_iter().take(limit).map(|(_, t)| t).collect()
}

/// One search result as the model sees it: no schema (it arrives with the
/// definition once the tool is activated), a short description, and the
/// server of an MCP tool (a built-in has none).
pub fn result_entry(tool: &Deferrable<'_>, active: bool) -> Value {
    let mut description: String = tool
        .description
        .chars()
        .take(limits::DESCRIPTION_CHARS)
        .collect();
    if description.len() < tool.description.len() {
        description.push('…');
    }
    let mut entry = json!({
        "name": tool.name,
        "description": description,
        "active": active,
    });
    if let Some(server) = tool.server() {
        entry["server"] = Value::from(server);
    }
    entry
}

/// The description `connection_search` carries in a session: the
/// compiled one, the servers whose tools it reaches, with their tool
/// counts, and the built-in tools it reaches. It changes only when those
/// do, so the request prefix stays stable while tools are activated.
pub fn bound_description(base: &str, reach: &Reach) -> String {
    let listed: Vec<String> = reach
        .servers
        .iter()
        .map(|(server, n)| format!("`{server}` ({n} tools)"))
        .collect();
    let mut out = format!("{base} Servers: {}.", listed.join(", "));
    if !reach.builtins.is_empty() {
        let builtins: Vec<String> = reach.builtins.iter().map(|n| format!("`{n}`")).collect();
        out.push_str(&format!(
            " Also these built-in tools: {}.",
            builtins.join(", ")
        ));
    }
    out
}

/// What `connection_search` reaches in a session, for its description.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// Each granted server with its tool count, by name.
    pub servers: Vec<(String, usize)>,
    /// The deferrable built-in tools, by name.
    pub builtins: Vec<String>,
}

impl Reach {
    pub fn of(catalog: &[Deferrable<'_>]) -> Reach {
        let mut servers: std::collections::BTreeMap<String, usize> = Default::default();
        let mut builtins = Vec::new();
        for t in catalog {
            match t.server() {
                Some(server) => *servers.entry(server.to_owned()).or_default() += 1,
                None => builtins.push(t.name.to_owned()),
            }
        }
        builtins.sort();
        Reach {
            servers: servers.into_iter().collect(),
            builtins,
        }
    }
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
        let all = [
            Deferrable::mcp(&a),
            Deferrable::mcp(&b),
            Deferrable::mcp(&c),
        ];
        let got: Vec<&str> = search(&all, "issue", 10)
            .iter()
            .map(|t| t.own_name())
            .collect();
        assert_eq!(got, ["create_issue", "list_tickets"]);
        assert!(search(&all, "nothing here", 10).is_empty());
        // The exact name wins over any word score.
        let got = search(&all, "mcp__big__weather", 1);
        assert_eq!(got[0].own_name(), "weather");
        assert_eq!(search(&all, "issue", 1).len(), 1);
    }

    fn builtin(name: &str, description: &str) -> ToolDefinition {
        let mut def = evoflux_graph::tool::builtin::framework_tool("browser")
            .expect("browser is a framework tool");
        def.name = name.to_owned();
        def.description = description.to_owned();
        def
    }

    #[test]
    fn a_builtin_is_searched_and_recorded_apart_from_every_server() {
        let mcp = tool("open_page", "Opens a page in the remote viewer.");
        let def = builtin("browser", "Drive a real web browser: click, screenshot.");
        let all = [Deferrable::mcp(&mcp), Deferrable::builtin(&def)];
        let got = search(&all, "browser", 10);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].name, "browser");
        assert_eq!(search(&all, "screenshot", 10)[0].name, "browser");
        let entry = result_entry(&got[0], false);
        assert_eq!(entry["name"], "browser");
        assert!(entry.get("server").is_none(), "{entry}");
        assert_eq!(result_entry(&all[0], true)["server"], "big");
        let id = Deferrable::builtin(&def).identity();
        assert_eq!(id.owner, BUILTIN_OWNER);
        assert_eq!((id.server.as_str(), id.tool.as_str()), ("", "browser"));
        assert_ne!(Deferrable::mcp(&mcp).identity().owner, BUILTIN_OWNER);
        let reach = Reach::of(&all);
        assert_eq!(reach.servers, [("big".to_owned(), 1)]);
        assert_eq!(reach.builtins, ["browser"]);
        let d = bound_description("Find tools.", &reach);
        assert!(
            d.contains("`big` (1 tools)") && d.contains("`browser`"),
            "{d}"
        );
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
        let entries = |tools: &[McpToolDescriptor]| -> usize {
            let all: Vec<Deferrable<'_>> = tools.iter().map(Deferrable::mcp).collect();
            usize::from(over_budget(&all))
        };
        let small: Vec<McpToolDescriptor> =
            (0..3).map(|i| tool(&format!("t{i}"), "short")).collect();
        assert_eq!(entries(&small), 0);
        let many: Vec<McpToolDescriptor> = (0..=limits::DEFER_OVER_TOOLS)
            .map(|i| tool(&format!("t{i}"), "short"))
            .collect();
        assert_eq!(entries(&many), 1);
        let big = tool("huge", &"x".repeat(limits::DEFER_OVER_BYTES));
        assert_eq!(entries(std::slice::from_ref(&big)), 1);
        // A deferrable built-in counts in the one budget: the last tool
        // over the count.
        let at_limit: Vec<McpToolDescriptor> = (0..limits::DEFER_OVER_TOOLS)
            .map(|i| tool(&format!("t{i}"), "short"))
            .collect();
        assert_eq!(entries(&at_limit), 0);
        let def = builtin("browser", "A browser.");
        let mut all: Vec<Deferrable<'_>> = at_limit.iter().map(Deferrable::mcp).collect();
        all.push(Deferrable::builtin(&def));
        assert!(over_budget(&all));
    }

    #[test]
    fn results_cut_long_descriptions() {
        let t = tool("a", &"d".repeat(1000));
        let v = result_entry(&Deferrable::mcp(&t), false);
        let d = v["description"].as_str().unwrap();
        assert_eq!(d.chars().count(), limits::DESCRIPTION_CHARS + 1);
        assert!(d.ends_with('…'));
    }
}
