//! Claude Code's subagent front matter, read as evoflux's.
//!
//! A `.claude/agents/<name>.md` file copied into evoflux (or discovered in
//! `.claude/agents/`) should load as it is: Claude writes `tools:` as a
//! comma-separated string of capitalised tool names and `model:` as an
//! alias (`sonnet`, `inherit`). This module holds the two tables that
//! translate them, so the parser ([`super::agent_file`]) and the Form view
//! ([`super::form`]) read a file the same way. Nothing here rewrites the
//! file: the translation is of the parsed values only.

use std::path::Path;

use evoflux_core::{Diagnostic, Diagnostics};

/// What a Claude tool name means here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaudeTool {
    /// The evoflux tool of the same purpose.
    Maps(&'static str),
    /// Claude's `Task`: delegation, which a member of an evoflux team does
    /// not do (its lead dispatches); dropped with an info note.
    Delegation,
    /// A Claude tool evoflux has no counterpart for; dropped with a warning.
    Unsupported,
}

/// The one table of Claude Code tool names, matched case-insensitively.
pub const CLAUDE_TOOLS: [(&str, ClaudeTool); 14] = [
    ("Read", ClaudeTool::Maps("read")),
    ("Write", ClaudeTool::Maps("write")),
    ("Edit", ClaudeTool::Maps("edit")),
    ("MultiEdit", ClaudeTool::Maps("edit")),
    ("Bash", ClaudeTool::Maps("shell")),
    ("Glob", ClaudeTool::Maps("glob")),
    ("Grep", ClaudeTool::Maps("grep")),
    ("LS", ClaudeTool::Maps("ls")),
    ("WebFetch", ClaudeTool::Maps("web_fetch")),
    ("WebSearch", ClaudeTool::Maps("web_search")),
    ("TodoWrite", ClaudeTool::Maps("todo")),
    ("Task", ClaudeTool::Delegation),
    ("NotebookEdit", ClaudeTool::Unsupported),
    ("BashOutput", ClaudeTool::Unsupported),
];

/// Claude's tool for `name` (any letter case), or `None` when `name` is
/// not a Claude tool name.
pub fn claude_tool(name: &str) -> Option<ClaudeTool> {
    CLAUDE_TOOLS
        .iter()
        .find(|(claude, _)| claude.eq_ignore_ascii_case(name))
        .map(|(_, t)| *t)
}

/// The stable code of a dropped Claude tool.
pub const CLAUDE_TOOL_DROPPED: &str = "agent/claude-tool-dropped";
/// The stable code of a dropped `Task` (delegation).
pub const CLAUDE_TOOL_DELEGATION: &str = "agent/claude-tool-delegation";

/// Translates a tool list: an evoflux tool name stays as written; a
/// Claude name becomes its evoflux tool; `Task` and Claude tools without a
/// counterpart are dropped, each named in a diagnostic on `file`/`field`.
/// Any other name stays as written (the compiler reports an unknown one).
pub fn translate_tools(
    names: Vec<String>,
    file: &Path,
    field: &str,
    diags: &mut Diagnostics,
) -> Vec<String> {
    let mut out = Vec::with_capacity(names.len());
    let mut dropped = Vec::new();
    for name in names {
        match claude_tool(&name) {
            None => out.push(name),
            Some(ClaudeTool::Maps(evoflux)) => out.push(evoflux.to_owned()),
            Some(ClaudeTool::Delegation) => diags.push(
                Diagnostic::info(
                    CLAUDE_TOOL_DELEGATION,
                    format!(
                        "`{field}` lists Claude's `{name}` (delegation); it is dropped: an evoflux \
                         member does not delegate, its lead dispatches the team"
                    ),
                )
                .with_file(file)
                .with_field(field.to_owned()),
            ),
            Some(ClaudeTool::Unsupported) => dropped.push(name),
        }
    }
    if !dropped.is_empty() {
        diags.push(
            Diagnostic::warning(
                CLAUDE_TOOL_DROPPED,
                format!(
                    "`{field}` lists Claude tools evoflux does not have: {}; they are dropped",
                    dropped.join(", ")
                ),
            )
            .with_file(file)
            .with_field(field.to_owned()),
        );
    }
    out
}

/// Splits Claude's `tools: Read, Grep, Glob` into names.
pub fn split_comma_list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

/// What a Claude `model:` alias means here: the documented table
/// (README, "Agent files").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelAlias {
    /// `inherit`: the session's model (the harness default).
    Inherit,
    /// `sonnet`, `opus`, `haiku`: this `provider:model`.
    Model(&'static str),
}

/// The one table of Claude `model:` aliases, matched case-insensitively.
pub const MODEL_ALIASES: [(&str, ModelAlias); 4] = [
    ("inherit", ModelAlias::Inherit),
    ("sonnet", ModelAlias::Model("anthropic:claude-sonnet-4-5")),
    ("opus", ModelAlias::Model("anthropic:claude-opus-4-5")),
    ("haiku", ModelAlias::Model("anthropic:claude-haiku-4-5")),
];

/// The alias `s` names, if any.
pub fn model_alias(s: &str) -> Option<ModelAlias> {
    MODEL_ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(s.trim()))
        .map(|(_, m)| *m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_names_map_case_insensitively_and_unsupported_ones_are_named() {
        let mut d = Diagnostics::new();
        let got = translate_tools(
            [
                "Read",
                "grep",
                "GLOB",
                "Bash",
                "Task",
                "NotebookEdit",
                "nope",
                "ls",
            ]
            .map(String::from)
            .to_vec(),
            Path::new("a.md"),
            "tools",
            &mut d,
        );
        assert_eq!(got, ["read", "grep", "glob", "shell", "nope", "ls"]);
        assert_eq!(d.codes(), [CLAUDE_TOOL_DELEGATION, CLAUDE_TOOL_DROPPED]);
        assert!(d.as_slice()[1].message.contains("NotebookEdit"));
    }

    #[test]
    fn every_mapped_tool_is_a_framework_tool() {
        let tools = crate::ToolCatalog::framework();
        for (claude, t) in CLAUDE_TOOLS {
            if let ClaudeTool::Maps(name) = t {
                assert!(tools.get(name).is_some(), "{claude} -> {name}");
            }
        }
        for (alias, m) in MODEL_ALIASES {
            if let ModelAlias::Model(m) = m {
                assert!(
                    m.parse::<evoflux_core::config::ModelRef>().is_ok(),
                    "{alias}"
                );
            }
        }
    }

    #[test]
    fn comma_lists_split() {
        assert_eq!(
            split_comma_list("Read, Grep,Glob, "),
            ["Read", "Grep", "Glob"]
        );
    }
}
