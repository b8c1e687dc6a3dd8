//! The structural operations of the `code_context` tool: one closed list
//! shared by the tool's schema (evoflux-graph), its executor (evoflux-code)
//! and the trajectory evals of Coding skills (evoflux-skills), so none of
//! them can drift from the others.

use serde::{Deserialize, Serialize};

/// The shape of a symbol `code_context` takes: identifiers joined by `::`
/// or `.` (`load_config`, `Config::new`, `store.Open`, `#field`), as a
/// JSON Schema pattern. The executor checks the same shape itself.
pub const SYMBOL_PATTERN: &str = r"^[A-Za-z_$#][A-Za-z0-9_$]*((::|\.)[A-Za-z_$#][A-Za-z0-9_$]*)*$";
/// Longest symbol accepted.
pub const MAX_SYMBOL_CHARS: usize = 200;

/// Whether `text` is a symbol of [`SYMBOL_PATTERN`]'s shape: the rule the
/// executor and the skill-eval validator check, in one place.
pub fn is_symbol(text: &str) -> bool {
    let segment = |seg: &str| {
        let mut chars = seg.chars();
        chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || matches!(c, '_' | '$' | '#'))
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '$'))
    };
    !text.is_empty()
        && text.chars().count() <= MAX_SYMBOL_CHARS
        && text.split("::").flat_map(|s| s.split('.')).all(segment)
}

/// One operation on one exact symbol (or, for `outline`, one file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CodeOperation {
    /// Where the symbol is defined, with its source.
    Definition,
    /// Every indexed use: calls, type uses, imports, implementations.
    References,
    /// The definitions that call it.
    Callers,
    /// What it calls, each resolved to its definitions.
    Callees,
    /// What implements a trait, interface or base class (or one of its
    /// methods).
    Implementations,
    /// The definitions of one file, nested.
    Outline,
    /// Callers, transitively, to a bounded depth.
    Impact,
    /// Its container, siblings, callers and callees at once.
    Neighborhood,
}

impl CodeOperation {
    pub const ALL: [CodeOperation; 8] = [
        CodeOperation::Definition,
        CodeOperation::References,
        CodeOperation::Callers,
        CodeOperation::Callees,
        CodeOperation::Implementations,
        CodeOperation::Outline,
        CodeOperation::Impact,
        CodeOperation::Neighborhood,
    ];

    /// The wire spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            CodeOperation::Definition => "definition",
            CodeOperation::References => "references",
            CodeOperation::Callers => "callers",
            CodeOperation::Callees => "callees",
            CodeOperation::Implementations => "implementations",
            CodeOperation::Outline => "outline",
            CodeOperation::Impact => "impact",
            CodeOperation::Neighborhood => "neighborhood",
        }
    }

    /// The operation spelled exactly `s`.
    pub fn parse(s: &str) -> Option<CodeOperation> {
        CodeOperation::ALL.into_iter().find(|op| op.as_str() == s)
    }

    /// Whether it takes a file (`path`) rather than a symbol.
    pub const fn takes_file(self) -> bool {
        match self {
            CodeOperation::Outline => true,
            CodeOperation::Definition
            | CodeOperation::References
            | CodeOperation::Callers
            | CodeOperation::Callees
            | CodeOperation::Implementations
            | CodeOperation::Impact
            | CodeOperation::Neighborhood => false,
        }
    }
}

impl std::fmt::Display for CodeOperation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_round_trips() {
        for op in CodeOperation::ALL {
            assert_eq!(CodeOperation::parse(op.as_str()), Some(op));
            assert_eq!(
                serde_json::to_value(op).ok(),
                Some(serde_json::Value::String(op.as_str().into()))
            );
        }
        assert_eq!(CodeOperation::parse("search"), None);
        assert_eq!(CodeOperation::parse("Definition"), None);
    }
}
