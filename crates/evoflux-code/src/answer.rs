//! What `code_context` answers: bounded sections — Matches, Definitions,
//! Relationships, Limitations — each entry naming its repository, path,
//! line range and the revision of the file it was read at. The same value
//! renders as text for a model and serializes for `--json`.

use serde::Serialize;

use evoflux_core::code_operation::CodeOperation;

use crate::certainty::{Basis, Certainty};

/// Largest rendered answer, in characters; longer ones are cut with
/// [`TRUNCATION_NOTICE`].
pub const MAX_OUTPUT_CHARS: usize = 20_000;
pub const TRUNCATION_NOTICE: &str = "[code_context output truncated at 20000 characters; narrow it with `path`, `repository` or `limit`]";

/// One repository the answer looked in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepoSummary {
    pub name: String,
    pub root: String,
    /// The commit checked out, when it is a git repository.
    pub commit: Option<String>,
    pub files: usize,
}

/// A place in a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Entry {
    /// `function`, `method`, … for definitions; `call`, `import`, … for uses.
    pub kind: String,
    /// The qualified symbol (for a use: the definition it is in, if any).
    pub symbol: String,
    pub repository: String,
    /// As the `read` tool takes it: relative to the only root, absolute
    /// when the session has several.
    pub path: String,
    pub start_line: u32,
    pub end_line: u32,
    /// The file's content revision (16 hex digits of its SHA-256).
    pub revision: String,
}

/// A definition's source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Source {
    pub entry: Entry,
    pub language: String,
    pub text: String,
    /// Lines of the definition not shown.
    pub omitted_lines: u32,
}

/// How an entry relates to the symbol asked about. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Relation {
    Caller,
    Callee,
    /// A call of something the index has no definition of.
    ExternalCallee,
    Implementation,
    Reference,
    Container,
    Sibling,
}

impl Relation {
    const fn label(self) -> &'static str {
        match self {
            Relation::Caller => "caller",
            Relation::Callee => "callee",
            Relation::ExternalCallee => "callee (not defined in the index)",
            Relation::Implementation => "implementation",
            Relation::Reference => "reference",
            Relation::Container => "container",
            Relation::Sibling => "sibling",
        }
    }
}

/// One relationship.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Related {
    pub relation: Relation,
    /// The match it is a relationship of (qualified).
    pub of: String,
    /// The related name, as the source spells it.
    pub name: String,
    /// Where it is; `None` for an external callee.
    pub entry: Option<Entry>,
    /// The lines where the relationship shows (call sites).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<u32>,
    /// For `impact`: how many calls away.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub depth: Option<u8>,
    /// For a call (caller, callee, a call among references): how certain
    /// it is that the call reaches the definition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certainty: Option<Certainty>,
    /// Why it is taken to reach it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basis: Option<Basis>,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Answer {
    pub operation: CodeOperation,
    /// The symbol or file asked about.
    pub subject: String,
    pub repositories: Vec<RepoSummary>,
    pub matches: Vec<Entry>,
    pub definitions: Vec<Source>,
    pub relationships: Vec<Related>,
    pub limitations: Vec<String>,
}

fn entry_line(e: &Entry) -> String {
    let lines = if e.start_line == e.end_line {
        format!("{}", e.start_line)
    } else {
        format!("{}-{}", e.start_line, e.end_line)
    };
    let what = if e.symbol.is_empty() {
        e.kind.clone()
    } else {
        format!("{} {}", e.kind, e.symbol)
    };
    format!(
        "{what} — {}:{lines} [{} @{}]",
        e.path, e.repository, e.revision
    )
}

impl Answer {
    /// The text a model reads, at most [`MAX_OUTPUT_CHARS`].
    pub fn render(&self) -> String {
        let mut out = String::new();
        let repos: Vec<String> = self
            .repositories
            .iter()
            .map(|r| match &r.commit {
                Some(c) => format!("{} (commit {}, {} files)", r.name, short(c), r.files),
                None => format!("{} (not a git checkout, {} files)", r.name, r.files),
            })
            .collect();
        out.push_str(&format!(
            "code_context {} `{}` in {}\n",
            self.operation,
            self.subject,
            repos.join(", ")
        ));
        out.push_str("\n## Matches\n");
        if self.matches.is_empty() {
            out.push_str("(none)\n");
        }
        for (i, m) in self.matches.iter().enumerate() {
            out.push_str(&format!("{}. {}\n", i + 1, entry_line(m)));
        }
        if !self.definitions.is_empty() {
            out.push_str("\n## Definitions\n");
            for d in &self.definitions {
                out.push_str(&format!(
                    "### {}\n```{}\n{}",
                    entry_line(&d.entry),
                    d.language,
                    d.text
                ));
                if !d.text.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str("```\n");
                if d.omitted_lines > 0 {
                    out.push_str(&format!(
                        "({} more lines: read {} from line {})\n",
                        d.omitted_lines,
                        d.entry.path,
                        d.entry.end_line - d.omitted_lines + 1
                    ));
                }
            }
        }
        if !self.relationships.is_empty() {
            out.push_str("\n## Relationships\n");
            for r in &self.relationships {
                let depth = r.depth.map(|d| format!(" (depth {d})")).unwrap_or_default();
                let at = match r.lines.as_slice() {
                    [] => String::new(),
                    [one] => format!(", at line {one}"),
                    many => format!(
                        ", at lines {}",
                        many.iter()
                            .map(u32::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                let sure = match (r.certainty, r.basis) {
                    (Some(c), Some(b)) => format!(" — {}: {}", c.as_str(), b.reason()),
                    (Some(c), None) => format!(" — {}", c.as_str()),
                    (None, _) => String::new(),
                };
                match &r.entry {
                    Some(e) => out.push_str(&format!(
                        "- {} of {}{depth}: {}{at}{sure}\n",
                        r.relation.label(),
                        r.of,
                        entry_line(e)
                    )),
                    None => out.push_str(&format!(
                        "- {} of {}: {}{at}{sure}\n",
                        r.relation.label(),
                        r.of,
                        r.name
                    )),
                }
            }
        }
        if !self.limitations.is_empty() {
            out.push_str("\n## Limitations\n");
            for l in &self.limitations {
                out.push_str(&format!("- {l}\n"));
            }
        }
        clip(out)
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

fn clip(mut s: String) -> String {
    if s.chars().count() <= MAX_OUTPUT_CHARS {
        return s;
    }
    let budget = MAX_OUTPUT_CHARS - TRUNCATION_NOTICE.chars().count() - 1;
    let cut = s.char_indices().nth(budget).map_or(s.len(), |(i, _)| i);
    let cut = s[..cut].rfind('\n').map_or(cut, |i| i + 1);
    s.truncate(cut);
    s.push_str(TRUNCATION_NOTICE);
    s.push('\n');
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_answers_are_cut_at_a_line_with_the_notice() {
        let s = "x".repeat(30) + "\n";
        let out = clip(s.repeat(1000));
        assert!(out.chars().count() <= MAX_OUTPUT_CHARS);
        assert!(out.ends_with(&format!("{TRUNCATION_NOTICE}\n")));
        let before = out.trim_end_matches(&format!("{TRUNCATION_NOTICE}\n"));
        assert!(before.ends_with('\n'), "cut at a line boundary");
    }
}
