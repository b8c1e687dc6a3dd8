//! How many arguments a function takes and a call passes, so a call that
//! cannot reach a definition (`s.parse()` of an associated function
//! `Script::parse(path, text)`) is not listed as its caller.

use tree_sitter::Node;

use super::text;
use crate::facts::Params;
use crate::lang::Language;

/// The parameter list of a definition node: its own, an arrow function's
/// (`const f = (a) => …`), or a C declarator's.
fn parameter_list(node: Node<'_>) -> Option<Node<'_>> {
    if let Some(p) = node.child_by_field_name("parameters") {
        return Some(p);
    }
    if let Some(v) = node.child_by_field_name("value") {
        return v
            .child_by_field_name("parameters")
            .or_else(|| v.child_by_field_name("parameter"));
    }
    // C and C++: `int *f(int a)` nests the list in declarators.
    let mut d = node.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "function_declarator" {
            return n.child_by_field_name("parameters");
        }
        d = n.child_by_field_name("declarator").or_else(|| {
            (n.kind() == "reference_declarator")
                .then(|| n.named_child(0))
                .flatten()
        });
    }
    None
}

/// What a definition's parameter list accepts; `None` when it has none
/// or has a form this does not read.
pub(crate) fn params(node: Node<'_>, language: Language, source: &[u8]) -> Option<Params> {
    let list = parameter_list(node)?;
    // `x => x + 1`: one bare parameter.
    if list.kind() == "identifier" {
        return Some(Params {
            receiver: false,
            min: 1,
            max: Some(1),
        });
    }
    let (mut receiver, mut required, mut optional, mut variadic) = (false, 0u16, 0u16, false);
    let mut cursor = list.walk();
    for (i, p) in list.named_children(&mut cursor).enumerate() {
        let kind = p.kind();
        match (language, kind) {
            (
                _,
                "comment"
                | "attribute_item"
                | "decorator"
                | "keyword_separator"
                | "positional_separator"
                | "receiver_parameter",
            ) => {}
            (Language::Rust, "self_parameter") => receiver = true,
            (Language::Python, "identifier" | "typed_parameter") => {
                let first = match kind {
                    "identifier" => Some(p),
                    _ => p.named_child(0),
                };
                let splat = first.is_some_and(|n| {
                    matches!(n.kind(), "list_splat_pattern" | "dictionary_splat_pattern")
                });
                if splat {
                    // `*args: Any`, `**kwargs: Any`.
                    variadic = true;
                } else if i == 0
                    && matches!(first.and_then(|n| text(n, source)), Some("self" | "cls"))
                {
                    receiver = true;
                } else {
                    required += 1;
                }
            }
            (Language::Python, "default_parameter" | "typed_default_parameter")
            | (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "optional_parameter" | "assignment_pattern",
            )
            | (Language::Cpp, "optional_parameter_declaration") => optional += 1,
            (Language::Python, "list_splat_pattern" | "dictionary_splat_pattern")
            | (Language::JavaScript | Language::TypeScript | Language::Tsx, "rest_pattern")
            | (Language::Go, "variadic_parameter_declaration")
            | (Language::Java, "spread_parameter")
            | (
                Language::C | Language::Cpp,
                "variadic_parameter" | "variadic_parameter_declaration",
            ) => {
                variadic = true;
            }
            (Language::JavaScript | Language::TypeScript | Language::Tsx, "required_parameter") => {
                let mut c = p.walk();
                if p.named_children(&mut c).any(|n| n.kind() == "rest_pattern") {
                    variadic = true;
                } else if p.child_by_field_name("value").is_some() {
                    optional += 1;
                } else {
                    required += 1;
                }
            }
            (
                Language::JavaScript | Language::TypeScript | Language::Tsx,
                "identifier" | "object_pattern" | "array_pattern",
            )
            | (Language::Rust, "parameter")
            | (Language::Java, "formal_parameter") => required += 1,
            (Language::Go, "parameter_declaration") => {
                let mut c = p.walk();
                let names = p.children_by_field_name("name", &mut c).count();
                required += u16::try_from(names.max(1)).unwrap_or(u16::MAX);
            }
            (Language::C | Language::Cpp, "parameter_declaration") => {
                // `f(void)` takes nothing.
                let void = p.child_by_field_name("declarator").is_none()
                    && p.child_by_field_name("type").and_then(|t| text(t, source)) == Some("void");
                if !void {
                    required += 1;
                }
            }
            _ => return None,
        }
    }
    Some(Params {
        receiver,
        min: required,
        max: (!variadic).then_some(required.saturating_add(optional)),
    })
}

/// How many arguments a call node passes; `None` when one is spread
/// (`f(*xs)`, `f(...xs)`, `f(xs...)`) or the node has no argument list.
pub(crate) fn arguments(call: Node<'_>) -> Option<u16> {
    let list = call.child_by_field_name("arguments")?;
    let mut cursor = list.walk();
    let mut n = 0u16;
    for a in list.named_children(&mut cursor) {
        match a.kind() {
            "comment" | "attribute_item" => {}
            "list_splat" | "dictionary_splat" | "spread_element" | "variadic_argument" => {
                return None;
            }
            _ => n = n.saturating_add(1),
        }
    }
    Some(n)
}
