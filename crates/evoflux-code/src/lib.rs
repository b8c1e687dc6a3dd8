//! The code index behind `code_context`: exact-symbol navigation for
//! Coding mode.
//!
//! * [`lang`]: the languages read (Rust, Python, JavaScript, TypeScript,
//!   TSX, Go, Java, C, C++), each a tree-sitter grammar and one query of
//!   ours.
//! * [`extract`]: one file's [`facts`] — definitions with their
//!   containers, references with the definition they are in.
//! * [`index`]: a repository's facts, refreshed incrementally (only
//!   changed files are parsed again) and persisted in the cache dir.
//! * [`CodeContext`]: a session's repositories and the eight operations of
//!   [`CodeOperation`] on one known symbol; the request is checked here
//!   independently of the tool's schema, and prose is refused with
//!   candidate names, never searched.
//! * [`certainty`]: how sure a call's match is (exact, likely, guess) and
//!   why; certain callers are listed first.
//! * [`Answer`]: bounded sections — Matches, Definitions, Relationships,
//!   Limitations — each entry with repository, path, lines and revision.
//! * [`highlight`]: a code block's tokens by class, for the web UI's
//!   conversation (the same grammars, with their own highlights queries).

pub mod answer;
pub mod certainty;
mod error;
pub mod extract;
pub mod facts;
pub mod highlight;
pub mod index;
pub mod lang;
mod navigate;
pub mod request;
mod service;

pub use answer::{Answer, Entry, MAX_OUTPUT_CHARS, Related, Relation, RepoSummary, Source};
pub use certainty::{Basis, Certainty};
pub use error::CodeError;
pub use evoflux_core::code_operation::CodeOperation;
pub use facts::{
    DefKind, Definition, FileFacts, Params, ReceiverType, RefKind, Reference, Span, TypeEvidence,
};
pub use highlight::{
    HIGHLIGHT_TIME_LIMIT, HighlightError, HighlightLanguage, MAX_HIGHLIGHT_BYTES, Token,
    TokenClass, highlight,
};
pub use index::{Limits, MAX_FILE_BYTES, MAX_FILES, RefreshReport, RepoIndex};
pub use lang::Language;
pub use request::{DEFAULT_DEPTH, DEFAULT_LIMIT, MAX_DEPTH, MAX_LIMIT, SYMBOL_PATTERN};
pub use service::{CodeContext, Visibility, index_file};
