//! Why a `code_context` request got no answer. Each carries a stable code
//! and says what to do instead; candidates are names of the index, never
//! results of prose.

use std::path::PathBuf;

use evoflux_core::code_operation::CodeOperation;

use crate::request::FIELDS;

fn list(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn operations() -> String {
    CodeOperation::ALL.map(CodeOperation::as_str).join(", ")
}

#[derive(Debug, thiserror::Error)]
pub enum CodeError {
    #[error(
        "`{field}` is not an argument of code_context: it takes one exact symbol and one operation ({}); to search text, use grep",
        FIELDS.join(", ")
    )]
    UnknownField { field: String },
    #[error("`operation` is required: one of {}", operations())]
    MissingOperation,
    #[error("`operation` `{given}` is not one of {}", operations())]
    BadOperation { given: String },
    #[error("`{field}` {problem}")]
    BadField {
        field: &'static str,
        problem: String,
    },
    #[error(
        "`{operation}` needs `symbol`: one exact name (`name`, `Type::method` or `module.func`)"
    )]
    MissingSymbol { operation: CodeOperation },
    #[error("`outline` needs `path`: a source file of the repository")]
    MissingPath,
    #[error(
        "`{given}` is not a symbol: code_context takes one exact identifier (`name`, `Type::method` or `module.func`), never a description{}",
        if candidates.is_empty() {
            "; find the identifier first (grep, glob or read), then ask about it".to_owned()
        } else {
            format!(". Known symbols among its words: {}", list(candidates))
        }
    )]
    NotASymbol {
        given: String,
        candidates: Vec<String>,
    },
    #[error(
        "`{symbol}` is not defined in {scope}{}",
        if candidates.is_empty() {
            "; check the spelling with grep".to_owned()
        } else {
            format!(". Close symbols that are: {}", list(candidates))
        }
    )]
    UnknownSymbol {
        symbol: String,
        scope: String,
        candidates: Vec<String>,
    },
    #[error("no repository `{given}` in this session: use one of {}", list(known))]
    UnknownRepository { given: String, known: Vec<String> },
    #[error(
        "`{path}` is not an indexed source file{}",
        if candidates.is_empty() { String::new() } else { format!("; indexed files with that name: {}", list(candidates)) }
    )]
    UnknownFile {
        path: String,
        candidates: Vec<String>,
    },
    #[error(
        "`{path}` is in several repositories of this session: give one of {} (or `repository`)",
        list(candidates)
    )]
    AmbiguousFile {
        path: String,
        candidates: Vec<String>,
    },
    #[error("the code index at {} could not be saved: {message}", path.display())]
    Persist { path: PathBuf, message: String },
}

impl CodeError {
    /// The stable code, `code/<kebab-name>`.
    pub const fn code(&self) -> &'static str {
        match self {
            CodeError::UnknownField { .. } => "code/unknown-field",
            CodeError::MissingOperation => "code/missing-operation",
            CodeError::BadOperation { .. } => "code/bad-operation",
            CodeError::BadField { .. } => "code/bad-field",
            CodeError::MissingSymbol { .. } => "code/missing-symbol",
            CodeError::MissingPath => "code/missing-path",
            CodeError::NotASymbol { .. } => "code/not-a-symbol",
            CodeError::UnknownSymbol { .. } => "code/unknown-symbol",
            CodeError::UnknownRepository { .. } => "code/unknown-repository",
            CodeError::UnknownFile { .. } => "code/unknown-file",
            CodeError::AmbiguousFile { .. } => "code/ambiguous-file",
            CodeError::Persist { .. } => "code/persist-failed",
        }
    }
}
