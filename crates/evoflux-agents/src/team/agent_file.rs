//! The EvoFlux agent dialect: forgiving, user-owned Markdown.
//!
//! Known keys are typed and checked; an unknown key is a warning
//! (`agent/key-unknown`, naming the key and the file) and is otherwise
//! ignored at run time (and kept byte-for-byte by the
//! [`form`](super::form) serializer), so a file written for a newer
//! evoflux still loads. A type error in a known
//! key makes the file malformed; every problem in a file is reported, not
//! just the first.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use evoflux_core::config::ModelRef;
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use yaml_serde::{Mapping, Value};

use crate::closed::closed_enum;
use crate::name::is_valid_agent_name;

/// A team agent's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Lead,
    Member,
}

impl Role {
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Lead => "lead",
            Role::Member => "member",
        }
    }
}

impl FromStr for Role {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "lead" => Ok(Role::Lead),
            "member" => Ok(Role::Member),
            _ => Err(()),
        }
    }
}

/// The placeholder seeds use for "the harness's default model".
pub const MODEL_PLACEHOLDER: &str = "__PROVIDER_MODEL__";

/// A `model:` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSetting {
    /// `provider:model`.
    Model(ModelRef),
    /// [`MODEL_PLACEHOLDER`]: use the harness default.
    HarnessDefault,
}

impl std::fmt::Display for ModelSetting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelSetting::Model(m) => m.fmt(f),
            ModelSetting::HarnessDefault => f.write_str(MODEL_PLACEHOLDER),
        }
    }
}

impl Serialize for ModelSetting {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ModelSetting {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ModelSetting::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("`{s}` is not provider:model")))
    }
}

impl ModelSetting {
    /// `provider:model`, [`MODEL_PLACEHOLDER`], or a Claude alias
    /// (`sonnet`, `opus`, `haiku`, `inherit`; [`super::claude::MODEL_ALIASES`]).
    pub fn parse(s: &str) -> Option<ModelSetting> {
        if s.trim() == MODEL_PLACEHOLDER {
            return Some(ModelSetting::HarnessDefault);
        }
        match super::claude::model_alias(s) {
            Some(super::claude::ModelAlias::Inherit) => Some(ModelSetting::HarnessDefault),
            Some(super::claude::ModelAlias::Model(m)) => m.parse().ok().map(ModelSetting::Model),
            None => s.parse().ok().map(ModelSetting::Model),
        }
    }

    /// The model reference, or `None` for the harness default.
    pub fn model(&self) -> Option<&ModelRef> {
        match self {
            ModelSetting::Model(m) => Some(m),
            ModelSetting::HarnessDefault => None,
        }
    }
}

/// One team agent file, parsed but not yet merged with its profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RawAgentConfig {
    pub name: String,
    pub mode: AppMode,
    pub role: Role,
    pub description: Option<String>,
    pub model: Option<ModelSetting>,
    pub fallback_model: Option<ModelSetting>,
    pub thinking_level: Option<String>,
    pub responses_api: Option<bool>,
    /// When not empty, exactly the tools the agent gets (besides the
    /// implicit ones): a listed `tools:` restricts, as in Claude Code.
    /// Claude tool names are already translated ([`super::claude`]).
    pub tools: Vec<String>,
    /// Tools added to the agent's defaults (the mode tier, or `tools:`).
    pub tools_add: Vec<String>,
    /// Tools removed from the result (implicit tools cannot be removed).
    pub tools_opt_out: Vec<String>,
    /// Explicitly assigned skills: the one unconditional preload path.
    pub skills: Vec<String>,
    /// MCP servers; each grants all of its tools. `None` when the file
    /// has no `mcp:` (then a mode's default lead gets `[mcp]
    /// default_grant`); `Some` is exactly the list written, even empty.
    pub mcp: Option<Vec<String>>,
    /// For a member, the lead it belongs to; `None` binds it to the mode's
    /// default lead.
    pub lead: Option<String>,
    /// The body with HTML comments removed and trimmed: the user's extra
    /// prompt, empty when there is none.
    pub extra_prompt: String,
}

closed_enum!(
    /// A key the runtime reads from an agent file; everything else is
    /// ignored and preserved. The one list of them: the parser and the
    /// Form view ([`form`](super::form)) match on it exhaustively, and its
    /// order is the order a Form save writes the keys in and the order the
    /// `agent/key-unknown` warning lists them in.
    AgentKey {
        Name => "name",
        Role => "role",
        Description => "description",
        Model => "model",
        FallbackModel => "fallback_model",
        ThinkingLevel => "thinking_level",
        ResponsesApi => "responses_api",
        Tools => "tools",
        ToolsAdd => "tools_add",
        ToolsOptOut => "tools_opt_out",
        Skills => "skills",
        Mcp => "mcp",
        Lead => "lead",
    }
);

/// The text of every [`AgentKey`], in its order.
pub const KNOWN_KEYS: [&str; AgentKey::ALL.len()] = {
    let mut keys = [""; AgentKey::ALL.len()];
    let mut i = 0;
    while i < keys.len() {
        keys[i] = AgentKey::ALL[i].as_str();
        i += 1;
    }
    keys
};

/// Removes `<!-- … -->` comments (seeds explain themselves in one) and
/// trims. An unterminated comment runs to the end of the text, as in HTML.
pub fn strip_html_comments(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    while let Some(start) = rest.find("<!--") {
        out.push_str(&rest[..start]);
        match rest[start + 4..].find("-->") {
            Some(end) => rest = &rest[start + 4 + end + 3..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out.trim().to_owned()
}

struct FieldReader<'a> {
    file: &'a Path,
    mapping: &'a Mapping,
    diags: Diagnostics,
}

impl FieldReader<'_> {
    fn bad(&mut self, field: AgentKey, msg: String) {
        self.diags.push(
            Diagnostic::error("agent/field-invalid", msg)
                .with_file(self.file)
                .with_field(field.as_str()),
        );
    }

    fn string(&mut self, key: AgentKey) -> Option<String> {
        match self.mapping.get(key.as_str())? {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            _ => {
                self.bad(key, format!("`{key}` must be a string"));
                None
            }
        }
    }

    fn boolean(&mut self, key: AgentKey) -> Option<bool> {
        match self.mapping.get(key.as_str())? {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            _ => {
                self.bad(key, format!("`{key}` must be true or false"));
                None
            }
        }
    }

    /// A tool list: a YAML list or Claude's comma-separated string, with
    /// Claude tool names translated ([`super::claude::translate_tools`]).
    fn tool_list(&mut self, key: AgentKey) -> Vec<String> {
        let names = match self.mapping.get(key.as_str()) {
            Some(Value::String(s)) => super::claude::split_comma_list(s),
            _ => self.list(key),
        };
        super::claude::translate_tools(names, self.file, key.as_str(), &mut self.diags)
    }

    fn list(&mut self, key: AgentKey) -> Vec<String> {
        match self.mapping.get(key.as_str()) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Sequence(items)) => {
                let mut out = Vec::new();
                for item in items {
                    match item {
                        Value::String(s) if !s.trim().is_empty() => out.push(s.trim().to_owned()),
                        _ => {
                            self.bad(key, format!("`{key}` must be a list of non-empty names"));
                            return Vec::new();
                        }
                    }
                }
                out
            }
            Some(_) => {
                self.bad(
                    key,
                    format!("`{key}` must be a list, such as `[read, grep]`"),
                );
                Vec::new()
            }
        }
    }
}

/// Parses one agent file. `name` is the file stem (the slot name). All of
/// the file's problems are pushed to `diags`; `None` means the file is
/// malformed.
pub fn parse_agent(
    file: &Path,
    name: &str,
    mode: AppMode,
    text: &str,
    diags: &mut Diagnostics,
) -> Option<RawAgentConfig> {
    let doc = match evoflux_core::frontmatter::parse_file(file, text) {
        Ok(doc) => doc,
        Err(d) => {
            diags.push(d);
            return None;
        }
    };
    if !doc.has_front_matter {
        diags.push(
            Diagnostic::error(
                "agent/frontmatter-missing",
                "an agent file starts with `---`, its settings (at least `role:`), and `---`",
            )
            .with_file(file),
        );
        return None;
    }
    let mut r = FieldReader {
        file,
        mapping: &doc.mapping,
        diags: Diagnostics::new(),
    };
    for key in doc.mapping.keys() {
        let key = match key {
            Value::String(k) => k.clone(),
            other => yaml_serde::to_string(other)
                .map(|k| k.trim().to_owned())
                .unwrap_or_default(),
        };
        if AgentKey::parse(&key).is_none() {
            r.diags.push(
                Diagnostic::warning(
                    "agent/key-unknown",
                    format!(
                        "`{key}` is not an agent setting and is ignored; the settings are: {}",
                        KNOWN_KEYS.join(", ")
                    ),
                )
                .with_file(file)
                .with_field(key),
            );
        }
    }
    let declared_name = r.string(AgentKey::Name);
    if let Some(declared) = &declared_name
        && declared != name
    {
        r.diags.push(
            Diagnostic::error(
                "agent/name-mismatch",
                format!("`name: {declared}` must equal the file name `{name}`"),
            )
            .with_file(file)
            .with_field(AgentKey::Name.as_str()),
        );
    }
    if !is_valid_agent_name(name) {
        r.diags.push(
            Diagnostic::error(
                "agent/name-invalid",
                format!(
                    "agent name `{name}` must start with a letter or digit and use only letters, \
                     digits, `.`, `_` and `-` (at most 64 characters)"
                ),
            )
            .with_file(file),
        );
    }
    let role = match r.string(AgentKey::Role) {
        None => Role::Member,
        Some(s) => match s.trim().parse() {
            Ok(role) => role,
            Err(()) => {
                r.diags.push(
                    Diagnostic::error(
                        "agent/role-invalid",
                        format!("`role: {s}` must be `lead` or `member`"),
                    )
                    .with_file(file)
                    .with_field(AgentKey::Role.as_str()),
                );
                Role::Member
            }
        },
    };
    let model_field = |r: &mut FieldReader<'_>, key: AgentKey| {
        let s = r.string(key)?;
        match ModelSetting::parse(&s) {
            Some(m) => Some(m),
            None => {
                r.diags.push(
                    Diagnostic::error(
                        "agent/model-invalid",
                        format!(
                            "`{key}: {s}` is not a model: write `provider:model`, such as \
                             `openai:gpt-4o-mini`, a Claude alias (`sonnet`, `opus`, `haiku`, \
                             `inherit`), or `{MODEL_PLACEHOLDER}` for the default"
                        ),
                    )
                    .with_file(file)
                    .with_field(key.as_str()),
                );
                None
            }
        }
    };
    let model = model_field(&mut r, AgentKey::Model);
    let fallback_model = model_field(&mut r, AgentKey::FallbackModel);
    let description = r
        .string(AgentKey::Description)
        .filter(|d| !d.trim().is_empty());
    let thinking_level = r
        .string(AgentKey::ThinkingLevel)
        .filter(|d| !d.trim().is_empty());
    let responses_api = r.boolean(AgentKey::ResponsesApi);
    let tools = r.tool_list(AgentKey::Tools);
    let tools_add = r.tool_list(AgentKey::ToolsAdd);
    let tools_opt_out = r.tool_list(AgentKey::ToolsOptOut);
    let skills = r.list(AgentKey::Skills);
    let mcp = r
        .mapping
        .contains_key(AgentKey::Mcp.as_str())
        .then(|| r.list(AgentKey::Mcp));
    let lead = r.string(AgentKey::Lead).map(|l| l.trim().to_owned());
    if let Some(l) = &lead
        && !is_valid_agent_name(l)
    {
        r.bad(
            AgentKey::Lead,
            format!("`lead: {l}` must name a lead agent"),
        );
    }
    let errors = r.diags.has_errors();
    diags.extend(r.diags);
    if errors {
        return None;
    }
    Some(RawAgentConfig {
        name: name.to_owned(),
        mode,
        role,
        description,
        model,
        fallback_model,
        thinking_level,
        responses_api,
        tools,
        tools_add,
        tools_opt_out,
        skills,
        mcp,
        lead,
        extra_prompt: strip_html_comments(doc.body),
    })
}

/// Where a team agent came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum AgentSource {
    /// A code-owned built-in with no file.
    Builtin,
    /// A file selected by the source graph.
    File {
        path: PathBuf,
        layer: evoflux_graph::Layer,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> (Option<RawAgentConfig>, Diagnostics) {
        let mut d = Diagnostics::new();
        let r = parse_agent(Path::new("a.md"), "a", AppMode::Work, text, &mut d);
        (r, d)
    }

    #[test]
    fn minimal_member_defaults() {
        let (r, d) = parse("---\nname: a\n---\n");
        let r = r.unwrap();
        assert!(d.is_empty());
        assert_eq!(r.role, Role::Member);
        assert!(r.tools.is_empty() && r.lead.is_none());
        assert_eq!(r.extra_prompt, "");
    }

    #[test]
    fn an_absent_mcp_list_differs_from_an_empty_one() {
        // Absent, a mode's default lead gets `[mcp] default_grant`;
        // written, even empty, the list is exactly what the agent gets.
        assert_eq!(parse("---\nname: a\n---\n").0.unwrap().mcp, None);
        assert_eq!(
            parse("---\nname: a\nmcp: []\n---\n").0.unwrap().mcp,
            Some(vec![])
        );
        assert_eq!(
            parse("---\nname: a\nmcp: [gh]\n---\n").0.unwrap().mcp,
            Some(vec!["gh".to_owned()])
        );
    }

    #[test]
    fn all_known_keys_and_unknown_ignored_with_a_warning() {
        let text = "---\nname: a\nrole: lead\ndescription: D\nmodel: openai:gpt-4o\n\
                    fallback_model: __PROVIDER_MODEL__\nthinking_level: high\nresponses_api: true\n\
                    tools: [web_fetch]\ntools_opt_out: [shell]\nskills: [review]\nmcp: [github]\n\
                    x-future: {a: 1}\n---\n<!-- seed -->\nBe brief.\n";
        let (r, d) = parse(text);
        // The unknown key is named, as a warning on the file; nothing else.
        assert_eq!(d.codes(), ["agent/key-unknown"], "{d:?}");
        let w = &d.as_slice()[0];
        assert_eq!(w.severity, evoflux_core::Severity::Warning);
        assert_eq!(w.locator.field.as_deref(), Some("x-future"));
        assert_eq!(w.locator.file.as_deref(), Some(Path::new("a.md")));
        assert!(w.message.contains("`x-future`"), "{}", w.message);
        let r = r.unwrap();
        assert_eq!(r.role, Role::Lead);
        assert_eq!(
            r.model.unwrap().model().map(ToString::to_string).as_deref(),
            Some("openai:gpt-4o")
        );
        assert_eq!(r.fallback_model, Some(ModelSetting::HarnessDefault));
        assert_eq!(r.tools, ["web_fetch"]);
        assert_eq!(r.tools_opt_out, ["shell"]);
        assert_eq!(r.extra_prompt, "Be brief.");
        assert_eq!(r.responses_api, Some(true));
    }

    #[test]
    fn a_copied_claude_subagent_parses() {
        let text = "---\nname: a\ndescription: Reviews diffs\ntools: Read, Grep, Glob, Task\n\
                    model: sonnet\ncolor: blue\n---\nYou review code.\n";
        let (r, d) = parse(text);
        let r = r.expect("a Claude subagent is valid");
        assert_eq!(r.tools, ["read", "grep", "glob"]);
        assert_eq!(
            r.model.as_ref().map(ToString::to_string).as_deref(),
            Some("anthropic:claude-sonnet-4-5")
        );
        // The unknown key is kept (a warning, not an error) and `Task` is
        // dropped with a note.
        assert_eq!(
            d.codes(),
            ["agent/key-unknown", "agent/claude-tool-delegation"],
            "{d:?}"
        );
        assert!(!d.has_errors());
        assert_eq!(r.extra_prompt, "You review code.");
    }

    #[test]
    fn claude_model_aliases_and_tool_keys() {
        let (r, d) = parse(
            "---\nname: a\nmodel: inherit\nfallback_model: HAIKU\ntools: [Bash]\ntools_add: WebFetch, ls\ntools_opt_out: [Edit]\n---\n",
        );
        let r = r.unwrap();
        assert!(d.is_empty(), "{d:?}");
        assert_eq!(r.model, Some(ModelSetting::HarnessDefault));
        assert_eq!(
            r.fallback_model.map(|m| m.to_string()).as_deref(),
            Some("anthropic:claude-haiku-4-5")
        );
        assert_eq!(r.tools, ["shell"]);
        assert_eq!(r.tools_add, ["web_fetch", "ls"]);
        assert_eq!(r.tools_opt_out, ["edit"]);
    }

    #[test]
    fn every_problem_reported_together() {
        let (r, d) = parse("---\nname: b\nrole: boss\nmodel: gpt4\nskills: read\n---\n");
        assert!(r.is_none());
        assert_eq!(
            d.codes(),
            [
                "agent/name-mismatch",
                "agent/role-invalid",
                "agent/model-invalid",
                "agent/field-invalid"
            ]
        );
    }

    #[test]
    fn missing_front_matter_is_an_error() {
        let (r, d) = parse("just a prompt\n");
        assert!(r.is_none());
        assert!(d.has_code("agent/frontmatter-missing"));
    }

    #[test]
    fn html_comments_stripped() {
        assert_eq!(strip_html_comments("<!-- a -->\n x <!-- b --> y\n"), "x  y");
        assert_eq!(strip_html_comments("keep <!-- open"), "keep");
    }
}
