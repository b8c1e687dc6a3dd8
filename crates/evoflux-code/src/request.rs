//! A `code_context` request, checked on its own: the tool's schema already
//! refuses free text, and the service refuses it again here, so neither
//! boundary relies on the other ("schema and service boundaries enforce
//! that contract independently").

use evoflux_core::code_operation::CodeOperation;
use serde_json::Value;

use crate::CodeError;

pub use evoflux_core::code_operation::{MAX_SYMBOL_CHARS, SYMBOL_PATTERN};
/// Default and largest number of entries per section.
pub const DEFAULT_LIMIT: usize = 20;
pub const MAX_LIMIT: usize = 50;
/// Default and largest depth of `impact`.
pub const DEFAULT_DEPTH: u8 = 2;
pub const MAX_DEPTH: u8 = 4;

/// The arguments the tool takes; anything else is refused by name.
pub const FIELDS: [&str; 6] = [
    "operation",
    "symbol",
    "path",
    "repository",
    "depth",
    "limit",
];

/// An exact symbol: `name`, `Type::method`, `module.func`, `a::b::C::m`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolPath {
    /// As written.
    pub text: String,
    /// The segments; the last is the name.
    pub segments: Vec<String>,
}

impl SymbolPath {
    pub fn name(&self) -> &str {
        self.segments.last().map_or("", String::as_str)
    }

    /// The segment before the name: the container or module it must be in.
    pub fn qualifier(&self) -> Option<&str> {
        self.segments
            .len()
            .checked_sub(2)
            .and_then(|i| self.segments.get(i))
            .map(String::as_str)
    }

    /// Parses an exact symbol; `None` for anything that is not one (prose,
    /// punctuation, empty segments).
    pub fn parse(text: &str) -> Option<SymbolPath> {
        evoflux_core::code_operation::is_symbol(text).then(|| SymbolPath {
            text: text.to_owned(),
            segments: text
                .split("::")
                .flat_map(|s| s.split('.'))
                .map(str::to_owned)
                .collect(),
        })
    }
}

/// One checked request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub operation: CodeOperation,
    /// Required for every operation but `outline`.
    pub symbol: Option<SymbolPath>,
    /// A file or folder the symbol must be in; the file of `outline`.
    pub path: Option<String>,
    /// The repository to look in (its name, or `.` for the first).
    pub repository: Option<String>,
    pub depth: u8,
    pub limit: usize,
}

/// A symbol given as written, before it is known to be one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolArg {
    Exact(SymbolPath),
    /// Not the shape of a symbol (prose, a sentence, a regex).
    Prose(String),
}

impl Request {
    /// Checks the tool's JSON arguments. A symbol that is not an exact
    /// identifier comes back as [`SymbolArg::Prose`] so the service can
    /// answer with candidates of the index.
    pub fn parse(input: &Value) -> Result<(Request, Option<SymbolArg>), CodeError> {
        let Some(obj) = input.as_object() else {
            return Err(CodeError::BadField {
                field: "arguments",
                problem: "must be a JSON object".into(),
            });
        };
        if let Some(field) = obj.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(CodeError::UnknownField {
                field: field.clone(),
            });
        }
        let operation = match obj.get("operation") {
            Some(Value::String(s)) => CodeOperation::parse(s)
                .ok_or_else(|| CodeError::BadOperation { given: s.clone() })?,
            Some(_) => {
                return Err(CodeError::BadField {
                    field: "operation",
                    problem: "must be a string".into(),
                });
            }
            None => return Err(CodeError::MissingOperation),
        };
        let string = |field: &'static str| -> Result<Option<String>, CodeError> {
            match obj.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.trim().is_empty() => Err(CodeError::BadField {
                    field,
                    problem: "is empty".into(),
                }),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(CodeError::BadField {
                    field,
                    problem: "must be a string".into(),
                }),
            }
        };
        let int = |field: &'static str, max: u64, default: u64| -> Result<u64, CodeError> {
            match obj.get(field) {
                None | Some(Value::Null) => Ok(default),
                Some(v) => match v.as_u64() {
                    Some(n) if (1..=max).contains(&n) => Ok(n),
                    _ => Err(CodeError::BadField {
                        field,
                        problem: format!("must be a whole number from 1 to {max}"),
                    }),
                },
            }
        };
        let symbol = string("symbol")?.map(|s| match SymbolPath::parse(&s) {
            Some(p) => SymbolArg::Exact(p),
            None => SymbolArg::Prose(s),
        });
        let path = string("path")?;
        if operation.takes_file() && path.is_none() {
            return Err(CodeError::MissingPath);
        }
        if !operation.takes_file() && symbol.is_none() {
            return Err(CodeError::MissingSymbol { operation });
        }
        let request = Request {
            operation,
            symbol: match &symbol {
                Some(SymbolArg::Exact(p)) => Some(p.clone()),
                Some(SymbolArg::Prose(_)) | None => None,
            },
            path,
            repository: string("repository")?,
            depth: u8::try_from(int(
                "depth",
                u64::from(MAX_DEPTH),
                u64::from(DEFAULT_DEPTH),
            )?)
            .unwrap_or(DEFAULT_DEPTH),
            limit: usize::try_from(int("limit", MAX_LIMIT as u64, DEFAULT_LIMIT as u64)?)
                .unwrap_or(DEFAULT_LIMIT),
        };
        Ok((request, symbol))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn symbols_are_identifiers_joined_by_separators() {
        let p = SymbolPath::parse("Config::new")
            .map(|p| (p.qualifier().map(str::to_owned), p.name().to_owned()));
        assert_eq!(p, Some((Some("Config".into()), "new".into())));
        let p = SymbolPath::parse("store.Open").map(|p| p.segments);
        assert_eq!(p, Some(vec!["store".into(), "Open".into()]));
        assert!(SymbolPath::parse("#step").is_some());
        for bad in [
            "where is config loaded",
            "load_config()",
            "a::",
            "::a",
            "a..b",
            "fn*",
            "",
        ] {
            assert_eq!(SymbolPath::parse(bad), None, "{bad}");
        }
        // The schema's pattern and this parser agree.
        let pattern = regex::Regex::new(SYMBOL_PATTERN).unwrap_or_else(|e| panic!("{e}"));
        for s in [
            "Config::new",
            "store.Open",
            "#step",
            "_x",
            "a::b.c",
            "where is it",
            "a::",
            "a..b",
            "load_config()",
            "x-y",
            "$el",
        ] {
            assert_eq!(pattern.is_match(s), SymbolPath::parse(s).is_some(), "{s}");
        }
    }

    #[test]
    fn a_query_field_is_refused_by_name() {
        let err =
            Request::parse(&json!({"operation": "definition", "query": "where is config loaded"}));
        assert!(matches!(err, Err(CodeError::UnknownField { ref field }) if field == "query"));
        let err = Request::parse(&json!({"operation": "search", "symbol": "x"}));
        assert!(matches!(err, Err(CodeError::BadOperation { .. })));
    }

    #[test]
    fn each_operation_gets_what_it_needs() {
        assert!(matches!(
            Request::parse(&json!({"operation": "callers"})),
            Err(CodeError::MissingSymbol { .. })
        ));
        assert!(matches!(
            Request::parse(&json!({"operation": "outline", "symbol": "x"})),
            Err(CodeError::MissingPath)
        ));
        assert!(matches!(
            Request::parse(&json!({"operation": "impact", "symbol": "x", "depth": 9})),
            Err(CodeError::BadField { field: "depth", .. })
        ));
        let ok = Request::parse(&json!({"operation": "outline", "path": "src/lib.rs"}));
        assert!(matches!(
            ok,
            Ok((
                Request {
                    limit: DEFAULT_LIMIT,
                    ..
                },
                None
            ))
        ));
        let prose =
            Request::parse(&json!({"operation": "definition", "symbol": "where is config loaded"}));
        assert!(matches!(prose, Ok((_, Some(SymbolArg::Prose(_))))));
    }
}
