//! The languages the index reads, each with its grammar and the one query
//! that extracts its facts.
//!
//! The queries are ours rather than the grammars' `tags.scm`: those differ
//! in what they capture per language (no constants in Rust, no methods'
//! receivers in Go, no imports anywhere) and name kinds inconsistently.
//! Every pattern here has one *role* capture — `@def.<kind>`,
//! `@ref.<kind>` or `@scope.impl` — on the node whose span the fact
//! covers, and `@name` on the identifier it is known by. Optional
//! captures: `@qual` (what a call is made on: `Config` in
//! `Config::new()`, `cfg` in `cfg.load()`), `@implementor` (the type an
//! implementation is for) and `@container` (a Go method's receiver type).

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tree_sitter::Query;

/// A language the index reads. Closed: adding one means a grammar, a query
/// and its fixture tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
    Tsx,
    Go,
}

impl Language {
    pub const ALL: [Language; 6] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
    ];

    /// The language of a file, by its extension.
    pub fn of_path(path: &std::path::Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            _ => return None,
        })
    }

    /// The fence tag of a code block in this language.
    pub const fn fence(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
            Language::Tsx => "tsx",
            Language::Go => "go",
        }
    }

    /// How a qualified name is spelled in this language (`Type::method`
    /// or `module.func`); both spellings are accepted everywhere, this is
    /// only how results are shown.
    pub const fn separator(self) -> &'static str {
        match self {
            Language::Rust => "::",
            Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go => ".",
        }
    }

    pub(crate) fn grammar(self) -> tree_sitter::Language {
        match self {
            Language::Rust => tree_sitter_rust::LANGUAGE.into(),
            Language::Python => tree_sitter_python::LANGUAGE.into(),
            Language::JavaScript => tree_sitter_javascript::LANGUAGE.into(),
            Language::TypeScript => tree_sitter_typescript::LANGUAGE_TYPESCRIPT.into(),
            Language::Tsx => tree_sitter_typescript::LANGUAGE_TSX.into(),
            Language::Go => tree_sitter_go::LANGUAGE.into(),
        }
    }

    fn query_source(self) -> String {
        match self {
            Language::Rust => RUST.to_owned(),
            Language::Python => PYTHON.to_owned(),
            Language::JavaScript => format!("{ECMASCRIPT}\n{JAVASCRIPT_ONLY}"),
            Language::TypeScript | Language::Tsx => format!("{ECMASCRIPT}\n{TYPESCRIPT_ONLY}"),
            Language::Go => GO.to_owned(),
        }
    }

    /// The compiled query, built once per process. A query that does not
    /// compile is a defect of this crate (every language is compiled in the
    /// unit tests), reported rather than panicking.
    pub(crate) fn query(self) -> Result<&'static Query, String> {
        static QUERIES: [OnceLock<Result<Query, String>>; 6] = [
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
            OnceLock::new(),
        ];
        let slot = &QUERIES[self as usize];
        slot.get_or_init(|| {
            Query::new(&self.grammar(), &self.query_source()).map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(Clone::clone)
    }
}

impl std::fmt::Display for Language {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.fence())
    }
}

const RUST: &str = r#"
(function_item name: (identifier) @name) @def.function
(function_signature_item name: (identifier) @name) @def.function
(struct_item name: (type_identifier) @name) @def.type
(enum_item name: (type_identifier) @name) @def.type
(union_item name: (type_identifier) @name) @def.type
(type_item name: (type_identifier) @name) @def.type
(trait_item name: (type_identifier) @name) @def.interface
(mod_item name: (identifier) @name) @def.module
(macro_definition name: (identifier) @name) @def.macro
(const_item name: (identifier) @name) @def.constant
(static_item name: (identifier) @name) @def.constant

(impl_item type: (_) @implementor) @scope.impl
(impl_item trait: (_) @name type: (_) @implementor) @ref.implementation

(call_expression function: (identifier) @name) @ref.call
(call_expression function: (field_expression value: (_) @qual field: (field_identifier) @name)) @ref.call
(call_expression function: (scoped_identifier path: (_) @qual name: (identifier) @name)) @ref.call
(call_expression function: (generic_function function: (identifier) @name)) @ref.call
(call_expression function: (generic_function function: (scoped_identifier path: (_) @qual name: (identifier) @name))) @ref.call
(call_expression function: (generic_function function: (field_expression value: (_) @qual field: (field_identifier) @name))) @ref.call
(macro_invocation macro: (identifier) @name) @ref.call

(use_declaration argument: (scoped_identifier name: (identifier) @name)) @ref.import
(use_declaration argument: (identifier) @name) @ref.import
(use_list (identifier) @name) @ref.import
(use_list (scoped_identifier name: (identifier) @name)) @ref.import
(use_as_clause path: (scoped_identifier name: (identifier) @name)) @ref.import

(type_identifier) @name @ref.type
"#;

const PYTHON: &str = r#"
(class_definition name: (identifier) @name) @def.class
(function_definition name: (identifier) @name) @def.function
(module (expression_statement (assignment left: (identifier) @name) @def.constant))

(class_definition
  name: (identifier) @implementor
  superclasses: (argument_list [(identifier) @name (attribute attribute: (identifier) @name)])) @ref.implementation

(call function: (identifier) @name) @ref.call
(call function: (attribute object: (_) @qual attribute: (identifier) @name)) @ref.call

(import_from_statement name: (dotted_name (identifier) @name .)) @ref.import
(import_from_statement name: (aliased_import name: (dotted_name (identifier) @name .))) @ref.import
(import_statement name: (dotted_name (identifier) @name .)) @ref.import

(type (identifier) @name) @ref.type
"#;

/// What JavaScript and TypeScript share.
const ECMASCRIPT: &str = r#"
(function_declaration name: (identifier) @name) @def.function
(generator_function_declaration name: (identifier) @name) @def.function
(method_definition name: [(property_identifier) (private_property_identifier)] @name) @def.method
(lexical_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function)
(variable_declaration (variable_declarator name: (identifier) @name value: [(arrow_function) (function_expression)]) @def.function)
(program (lexical_declaration (variable_declarator name: (identifier) @name) @def.constant))
(program (export_statement (lexical_declaration (variable_declarator name: (identifier) @name) @def.constant)))

(call_expression function: (identifier) @name) @ref.call
(call_expression function: (member_expression object: (_) @qual property: [(property_identifier) (private_property_identifier)] @name)) @ref.call
(new_expression constructor: (identifier) @name) @ref.call
(new_expression constructor: (member_expression object: (_) @qual property: (property_identifier) @name)) @ref.call

(import_specifier name: (identifier) @name) @ref.import
(import_clause (identifier) @name) @ref.import
"#;

const JAVASCRIPT_ONLY: &str = r#"
(class_declaration name: (identifier) @name) @def.class
(class_declaration name: (identifier) @implementor (class_heritage (identifier) @name)) @ref.implementation
"#;

const TYPESCRIPT_ONLY: &str = r#"
(class_declaration name: (type_identifier) @name) @def.class
(abstract_class_declaration name: (type_identifier) @name) @def.class
(interface_declaration name: (type_identifier) @name) @def.interface
(type_alias_declaration name: (type_identifier) @name) @def.type
(enum_declaration name: (identifier) @name) @def.type
(internal_module name: (identifier) @name) @def.module
(method_signature name: (property_identifier) @name) @def.method
(abstract_method_signature name: (property_identifier) @name) @def.method
(function_signature name: (identifier) @name) @def.function

(class_declaration name: (type_identifier) @implementor
  (class_heritage (implements_clause [(type_identifier) (generic_type) (nested_type_identifier)] @name))) @ref.implementation
(class_declaration name: (type_identifier) @implementor
  (class_heritage (extends_clause value: (identifier) @name))) @ref.implementation
(abstract_class_declaration name: (type_identifier) @implementor
  (class_heritage (implements_clause (type_identifier) @name))) @ref.implementation
(interface_declaration name: (type_identifier) @implementor
  (extends_type_clause (type_identifier) @name)) @ref.implementation

(type_identifier) @name @ref.type
"#;

const GO: &str = r#"
(function_declaration name: (identifier) @name) @def.function
(method_declaration
  receiver: (parameter_list (parameter_declaration type: [
    (type_identifier) @container
    (pointer_type (type_identifier) @container)
    (generic_type type: (type_identifier) @container)
    (pointer_type (generic_type type: (type_identifier) @container))
  ]))
  name: (field_identifier) @name) @def.method
(type_spec name: (type_identifier) @name type: (interface_type)) @def.interface
(type_spec name: (type_identifier) @name) @def.type
(type_alias name: (type_identifier) @name) @def.type
(const_spec name: (identifier) @name) @def.constant
(method_elem name: (field_identifier) @name) @def.method

(call_expression function: (identifier) @name) @ref.call
(call_expression function: (selector_expression operand: (_) @qual field: (field_identifier) @name)) @ref.call
(import_spec path: (interpreted_string_literal) @name) @ref.import

(type_identifier) @name @ref.type
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_query_compiles() {
        for lang in Language::ALL {
            if let Err(e) = lang.query() {
                panic!("{lang}: {e}");
            }
        }
    }

    #[test]
    fn languages_by_extension() {
        let of = |p: &str| Language::of_path(std::path::Path::new(p));
        assert_eq!(of("src/lib.rs"), Some(Language::Rust));
        assert_eq!(of("a/b.tsx"), Some(Language::Tsx));
        assert_eq!(of("m.mjs"), Some(Language::JavaScript));
        assert_eq!(of("README.md"), None);
        assert_eq!(of("Makefile"), None);
    }
}
