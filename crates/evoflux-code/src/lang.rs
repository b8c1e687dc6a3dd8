//! The languages the index reads, each with its grammar and the one query
//! that extracts its facts.
//!
//! The queries are ours rather than the grammars' `tags.scm`: those differ
//! in what they capture per language (no constants in Rust, no methods'
//! receivers in Go, no imports anywhere) and name kinds inconsistently.
//! Every pattern here has one *role* capture — `@def.<kind>`,
//! `@ref.<kind>`, `@scope.impl`, `@binding` or `@field` — on the node
//! whose span the fact covers, and `@name` on the identifier it is known
//! by. Optional captures: `@qual` (what a call is made on: `Config` in
//! `Config::new()`, `cfg` in `cfg.load()`), `@implementor` (the type an
//! implementation is for), `@container` (a Go method's receiver type, a
//! C++ method's class), `@type` (a binding's or field's declared type) and
//! `@value` (what a binding is initialized with). Bindings and fields are
//! not facts of their own: they tell the type of the values calls are made
//! on (see [`crate::extract`]).

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
    Java,
    C,
    Cpp,
}

impl Language {
    pub const ALL: [Language; 9] = [
        Language::Rust,
        Language::Python,
        Language::JavaScript,
        Language::TypeScript,
        Language::Tsx,
        Language::Go,
        Language::Java,
        Language::C,
        Language::Cpp,
    ];

    /// The language of a file, by its extension. A `.h` header is read as
    /// C++: its grammar reads C declarations too, while the C grammar
    /// cannot read a class.
    pub fn of_path(path: &std::path::Path) -> Option<Language> {
        let ext = path.extension()?.to_str()?;
        Some(match ext {
            "rs" => Language::Rust,
            "py" | "pyi" => Language::Python,
            "js" | "jsx" | "mjs" | "cjs" => Language::JavaScript,
            "ts" | "mts" | "cts" => Language::TypeScript,
            "tsx" => Language::Tsx,
            "go" => Language::Go,
            "java" => Language::Java,
            "c" => Language::C,
            "h" | "hh" | "hpp" | "hxx" | "cc" | "cpp" | "cxx" | "c++" | "ipp" | "tpp" => {
                Language::Cpp
            }
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
            Language::Java => "java",
            Language::C => "c",
            Language::Cpp => "cpp",
        }
    }

    /// How a qualified name is spelled in this language (`Type::method`
    /// or `module.func`); both spellings are accepted everywhere, this is
    /// only how results are shown.
    pub const fn separator(self) -> &'static str {
        match self {
            Language::Rust | Language::C | Language::Cpp => "::",
            Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go
            | Language::Java => ".",
        }
    }

    /// Whether `a.f()` is always a call on a value: the language spells
    /// paths to types and modules differently (`a::f()`), so the `a` of
    /// `a.f()` is never a type or module even when one has its name.
    pub const fn dot_is_value(self) -> bool {
        match self {
            Language::Rust | Language::C | Language::Cpp => true,
            Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go
            | Language::Java => false,
        }
    }

    /// The languages whose code can call each other's definitions
    /// directly: JavaScript and TypeScript, C and C++; each other
    /// language on its own.
    pub const fn family(self) -> Language {
        match self {
            Language::JavaScript | Language::TypeScript | Language::Tsx => Language::JavaScript,
            Language::C | Language::Cpp => Language::C,
            Language::Rust | Language::Python | Language::Go | Language::Java => self,
        }
    }

    /// Whether a call on a value (`x.f()`) reaches only functions that
    /// declare a receiver (Rust's `self`): elsewhere a static method may
    /// be called on an instance too.
    pub const fn dot_needs_receiver(self) -> bool {
        match self {
            Language::Rust => true,
            Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go
            | Language::Java
            | Language::C
            | Language::Cpp => false,
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
            Language::Java => tree_sitter_java::LANGUAGE.into(),
            Language::C => tree_sitter_c::LANGUAGE.into(),
            Language::Cpp => tree_sitter_cpp::LANGUAGE.into(),
        }
    }

    fn query_source(self) -> String {
        match self {
            Language::Rust => RUST.to_owned(),
            Language::Python => PYTHON.to_owned(),
            Language::JavaScript => format!("{ECMASCRIPT}\n{JAVASCRIPT_ONLY}"),
            Language::TypeScript | Language::Tsx => format!("{ECMASCRIPT}\n{TYPESCRIPT_ONLY}"),
            Language::Go => GO.to_owned(),
            Language::Java => JAVA.to_owned(),
            Language::C => format!("{C_FAMILY}\n{C_ONLY}"),
            Language::Cpp => format!("{C_FAMILY}\n{CPP_ONLY}"),
        }
    }

    /// The compiled query, built once per process. A query that does not
    /// compile is a defect of this crate (every language is compiled in the
    /// unit tests), reported rather than panicking.
    pub(crate) fn query(self) -> Result<&'static Query, String> {
        static QUERIES: [OnceLock<Result<Query, String>>; Language::ALL.len()] =
            [const { OnceLock::new() }; Language::ALL.len()];
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
(macro_invocation macro: (scoped_identifier path: (_) @qual name: (identifier) @name)) @ref.call

(use_declaration argument: (scoped_identifier name: (identifier) @name)) @ref.import
(use_declaration argument: (identifier) @name) @ref.import
(use_list (identifier) @name) @ref.import
(use_list (scoped_identifier name: (identifier) @name)) @ref.import
(use_as_clause path: (scoped_identifier name: (identifier) @name)) @ref.import

(type_identifier) @name @ref.type

(parameter pattern: (identifier) @name type: (_) @type) @binding
(let_declaration pattern: (identifier) @name type: (_) @type) @binding
(let_declaration pattern: (identifier) @name value: (_) @value) @binding
(field_declaration name: (field_identifier) @name type: (_) @type) @field

(for_expression pattern: (identifier) @name @binding)
(closure_parameters (identifier) @name @binding)
(tuple_struct_pattern (identifier) @name @binding)
(tuple_pattern (identifier) @name @binding)
(match_arm pattern: (match_pattern (identifier) @name @binding))
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

(typed_parameter (identifier) @name type: (type) @type) @binding
(typed_default_parameter name: (identifier) @name type: (type) @type) @binding
(assignment left: (identifier) @name type: (type) @type) @binding
(assignment left: (identifier) @name right: (_) @value) @binding
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  type: (type) @type
  (#eq? @_self "self")) @field
(assignment
  left: (attribute object: (identifier) @_self attribute: (identifier) @name)
  right: (_) @value
  (#eq? @_self "self")) @field
(class_definition body: (block (expression_statement (assignment left: (identifier) @name type: (type) @type) @field)))

(for_statement left: (identifier) @name @binding)
(as_pattern_target (identifier) @name @binding)
(lambda_parameters (identifier) @name @binding)
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

(variable_declarator name: (identifier) @name value: (_) @value) @binding
(for_in_statement left: (identifier) @name @binding)
(arrow_function parameter: (identifier) @name @binding)
"#;

const JAVASCRIPT_ONLY: &str = r#"
(class_declaration name: (identifier) @name) @def.class
(class_declaration name: (identifier) @implementor (class_heritage (identifier) @name)) @ref.implementation

(field_definition property: (property_identifier) @name value: (_) @value) @field
(formal_parameters (identifier) @name @binding)
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

(required_parameter pattern: (identifier) @name type: (type_annotation (_) @type)) @binding
(optional_parameter pattern: (identifier) @name type: (type_annotation (_) @type)) @binding
(variable_declarator name: (identifier) @name type: (type_annotation (_) @type)) @binding
(public_field_definition name: (property_identifier) @name type: (type_annotation (_) @type)) @field
(public_field_definition name: (property_identifier) @name value: (_) @value) @field
(required_parameter (accessibility_modifier) pattern: (identifier) @name type: (type_annotation (_) @type)) @field
(required_parameter pattern: (identifier) @name @binding !type)
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

(parameter_declaration name: (identifier) @name type: (_) @type) @binding
(var_spec name: (identifier) @name type: (_) @type) @binding
(var_spec name: (identifier) @name value: (expression_list . (_) @value)) @binding
(short_var_declaration left: (expression_list . (identifier) @name) right: (expression_list . (_) @value)) @binding
(field_declaration name: (field_identifier) @name type: (_) @type) @field

(range_clause left: (expression_list (identifier) @name @binding))
"#;

const JAVA: &str = r#"
(class_declaration name: (identifier) @name) @def.class
(record_declaration name: (identifier) @name) @def.class
(interface_declaration name: (identifier) @name) @def.interface
(annotation_type_declaration name: (identifier) @name) @def.interface
(enum_declaration name: (identifier) @name) @def.type
(method_declaration name: (identifier) @name) @def.method

(class_declaration name: (identifier) @implementor
  superclass: (superclass [(type_identifier) @name (generic_type (type_identifier) @name) (scoped_type_identifier (type_identifier) @name .)])) @ref.implementation
(class_declaration name: (identifier) @implementor
  interfaces: (super_interfaces (type_list [(type_identifier) @name (generic_type (type_identifier) @name) (scoped_type_identifier (type_identifier) @name .)]))) @ref.implementation
(record_declaration name: (identifier) @implementor
  interfaces: (super_interfaces (type_list [(type_identifier) @name (generic_type (type_identifier) @name)]))) @ref.implementation
(enum_declaration name: (identifier) @implementor
  interfaces: (super_interfaces (type_list [(type_identifier) @name (generic_type (type_identifier) @name)]))) @ref.implementation
(interface_declaration name: (identifier) @implementor
  (extends_interfaces (type_list [(type_identifier) @name (generic_type (type_identifier) @name)]))) @ref.implementation

(method_invocation object: (_) @qual name: (identifier) @name) @ref.call
(method_invocation !object name: (identifier) @name) @ref.call
(object_creation_expression type: [(type_identifier) @name (generic_type (type_identifier) @name) (scoped_type_identifier (type_identifier) @name .)]) @ref.call

(import_declaration (scoped_identifier scope: (_) @qual name: (identifier) @name)) @ref.import

(type_identifier) @name @ref.type

(formal_parameter type: (_) @type name: (identifier) @name) @binding
(enhanced_for_statement type: (_) @type name: (identifier) @name) @binding
(local_variable_declaration type: (_) @type declarator: (variable_declarator name: (identifier) @name)) @binding
(local_variable_declaration declarator: (variable_declarator name: (identifier) @name value: (_) @value)) @binding
(field_declaration type: (_) @type declarator: (variable_declarator name: (identifier) @name)) @field
(lambda_expression parameters: (identifier) @name @binding)
(inferred_parameters (identifier) @name @binding)
"#;

/// What C and C++ share.
const C_FAMILY: &str = r#"
(function_definition declarator: (function_declarator declarator: (identifier) @name)) @def.function
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.function
(function_definition declarator: (pointer_declarator declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name)))) @def.function
(declaration declarator: (function_declarator declarator: (identifier) @name)) @def.function
(declaration declarator: (pointer_declarator declarator: (function_declarator declarator: (identifier) @name))) @def.function
(struct_specifier name: (type_identifier) @name body: (_)) @def.type
(union_specifier name: (type_identifier) @name body: (_)) @def.type
(enum_specifier name: (type_identifier) @name body: (_)) @def.type
(type_definition type: [(struct_specifier body: (_)) (union_specifier body: (_)) (enum_specifier body: (_))] @def.type declarator: (type_identifier) @name)
(type_definition type: [(type_identifier) (primitive_type) (sized_type_specifier) (struct_specifier !body) (union_specifier !body) (enum_specifier !body)] declarator: (type_identifier) @name) @def.type
(preproc_function_def name: (identifier) @name) @def.macro
(preproc_def name: (identifier) @name) @def.constant

(call_expression function: (identifier) @name) @ref.call
(call_expression function: (field_expression argument: (_) @qual field: (field_identifier) @name)) @ref.call

(preproc_include path: [(string_literal) (system_lib_string)] @name) @ref.import

(type_identifier) @name @ref.type

(parameter_declaration type: (_) @type declarator: [
  (identifier) @name
  (pointer_declarator declarator: (identifier) @name)
  (pointer_declarator declarator: (pointer_declarator declarator: (identifier) @name))
]) @binding
(declaration type: (_) @type declarator: [
  (identifier) @name
  (pointer_declarator declarator: (identifier) @name)
  (init_declarator declarator: [(identifier) @name (pointer_declarator declarator: (identifier) @name)])
]) @binding
(field_declaration type: (_) @type declarator: [
  (field_identifier) @name
  (pointer_declarator declarator: (field_identifier) @name)
]) @field
"#;

const C_ONLY: &str = "";

const CPP_ONLY: &str = r#"
(function_definition declarator: (function_declarator declarator: (field_identifier) @name)) @def.function
(function_definition declarator: (reference_declarator (function_declarator declarator: (identifier) @name))) @def.function
(function_definition declarator: (function_declarator declarator: (qualified_identifier scope: (_) @container name: (identifier) @name))) @def.method
(function_definition declarator: (pointer_declarator declarator: (function_declarator declarator: (qualified_identifier scope: (_) @container name: (identifier) @name)))) @def.method
(function_definition declarator: (reference_declarator (function_declarator declarator: (qualified_identifier scope: (_) @container name: (identifier) @name)))) @def.method
(field_declaration declarator: (function_declarator declarator: (field_identifier) @name)) @def.function
(class_specifier name: (type_identifier) @name body: (_)) @def.class
(namespace_definition name: (namespace_identifier) @name) @def.module
(alias_declaration name: (type_identifier) @name) @def.type

(class_specifier name: (type_identifier) @implementor
  (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @name)) @ref.implementation
(struct_specifier name: (type_identifier) @implementor
  (base_class_clause [(type_identifier) (qualified_identifier) (template_type)] @name)) @ref.implementation

(call_expression function: (qualified_identifier scope: (_) @qual name: (identifier) @name)) @ref.call
(call_expression function: (qualified_identifier name: (qualified_identifier scope: (_) @qual name: (identifier) @name))) @ref.call
(call_expression function: (qualified_identifier scope: (_) @qual name: (template_function name: (identifier) @name))) @ref.call
(call_expression function: (template_function name: (identifier) @name)) @ref.call
(call_expression function: (field_expression argument: (_) @qual field: (template_method name: (field_identifier) @name))) @ref.call
(new_expression type: [(type_identifier) @name (template_type name: (type_identifier) @name) (qualified_identifier name: (type_identifier) @name)]) @ref.call

(using_declaration (qualified_identifier scope: (_) @qual name: (identifier) @name)) @ref.import

(parameter_declaration type: (_) @type declarator: (reference_declarator (identifier) @name)) @binding
(declaration type: (_) @type declarator: (reference_declarator (identifier) @name)) @binding
(declaration declarator: (init_declarator declarator: (identifier) @name value: (_) @value)) @binding
(field_declaration type: (_) @type declarator: (reference_declarator (field_identifier) @name)) @field
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
