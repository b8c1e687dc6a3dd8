//! The type of the value a call is made on, where the file says it: a
//! typed parameter or variable (`fn f(s: &Script)`, `let s: Script`,
//! `Disk d`), a field of the receiver's type (`self.store`), `self` and
//! `this`, or a value built by a type (`Script { .. }`, `new Job()`,
//! `Script::parse(..)?`). Nothing is inferred across files or through
//! function return types; what is not said here stays unknown.

use std::collections::HashMap;

use tree_sitter::Node;

use super::{generic_parameters, innermost, qualifier, text, type_name};
use crate::facts::{DefKind, Definition, ReceiverType, Reference, Span, TypeEvidence};
use crate::lang::Language;

/// At most this many type names are kept of one declaration.
const MAX_TYPE_NAMES: usize = 8;

/// A variable or field and the type its declaration gives it.
#[derive(Debug, Clone)]
pub(crate) struct Binding {
    pub name: String,
    /// Where the name is (to find the function it belongs to).
    pub name_span: Span,
    /// Where the declaration ends: a use before it cannot see it
    /// (`let x = x.parse()` calls `parse` on the previous `x`).
    pub visible_from: u32,
    /// Where it stops being visible: the end of the block, loop, arm or
    /// closure it is declared in.
    pub scope_end: u32,
    /// Empty when the declaration names no type of use here (a generic
    /// parameter, `var`, `auto`, a call of unknown result): the binding
    /// still hides an outer one of its name.
    pub names: Vec<String>,
    pub evidence: TypeEvidence,
    /// When `names` is empty: the function whose result the value is
    /// (`ask` of `let a = ask(..)`).
    pub returned_by: Option<String>,
}

/// What the receiver of a call is, as written, before the file's bindings
/// say its type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hint {
    /// Not a call on a value.
    None,
    /// `self.f()`, `this.f()`.
    SelfValue,
    /// `x.f()`: a variable, or (in Java and C++) a field of `this`.
    Var(String),
    /// `x.y.f()`, `self.y.f()`: a field of a named value.
    Field(Object, String),
    /// An expression whose type its shape says (`Script::parse(..)?.f()`).
    Typed(ReceiverType),
    /// What a function returns (`new_store().f()`): its declared result
    /// may say the type.
    Returned(String),
}

/// The value a field is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Object {
    SelfValue,
    Var(String),
}

fn is_self(node: Node<'_>, source: &[u8]) -> bool {
    match node.kind() {
        "self" | "this" => true,
        "identifier" => matches!(text(node, source), Some("self" | "this" | "cls")),
        _ => false,
    }
}

/// The receiver of a call on a value, from the node the call is made on.
pub(crate) fn hint(qual: Node<'_>, language: Language, source: &[u8]) -> Hint {
    if is_self(qual, source) {
        return Hint::SelfValue;
    }
    match qual.kind() {
        "identifier" | "field_identifier" => text(qual, source)
            .map(|t| Hint::Var(t.to_owned()))
            .unwrap_or(Hint::None),
        "field_expression"
        | "member_expression"
        | "attribute"
        | "selector_expression"
        | "field_access" => {
            let object = ["value", "argument", "object", "operand"]
                .iter()
                .find_map(|f| qual.child_by_field_name(f));
            let field = ["field", "property", "attribute"]
                .iter()
                .find_map(|f| qual.child_by_field_name(f))
                .and_then(|f| text(f, source));
            match (object, field) {
                (Some(o), Some(f)) if is_self(o, source) => {
                    Hint::Field(Object::SelfValue, f.to_owned())
                }
                (Some(o), Some(f)) if o.kind() == "identifier" => match text(o, source) {
                    Some(t) => Hint::Field(Object::Var(t.to_owned()), f.to_owned()),
                    None => Hint::None,
                },
                _ => Hint::None,
            }
        }
        _ => match value_type(qual, language, source) {
            Some(rt) => Hint::Typed(rt),
            None => returned_by(qual, source).map_or(Hint::None, Hint::Returned),
        },
    }
}

/// The function a value is the result of: `ask` of `ask(..)`, `open` of
/// `store.open()?`, `New` of `uuid.New()`.
pub(crate) fn returned_by(node: Node<'_>, source: &[u8]) -> Option<String> {
    let name = |n: Option<Node<'_>>| n.and_then(|n| text(n, source)).map(str::to_owned);
    match node.kind() {
        "call_expression" | "call" => {
            let mut f = node.child_by_field_name("function")?;
            if f.kind() == "generic_function" {
                f = f.child_by_field_name("function")?;
            }
            match f.kind() {
                "identifier" => name(Some(f)),
                "field_expression" | "selector_expression" => name(f.child_by_field_name("field")),
                "member_expression" => name(f.child_by_field_name("property")),
                "attribute" => name(f.child_by_field_name("attribute")),
                "scoped_identifier" | "qualified_identifier" => name(f.child_by_field_name("name")),
                _ => None,
            }
        }
        "method_invocation" => name(node.child_by_field_name("name")),
        "try_expression" | "await_expression" | "parenthesized_expression" | "await" => {
            let inner = ["value", "operand", "argument"]
                .iter()
                .find_map(|f| node.child_by_field_name(f))
                .or_else(|| node.named_child(0))?;
            returned_by(inner, source)
        }
        _ => None,
    }
}

/// The type names a function's declared result spells, without its
/// generic parameters (a `T` says nothing of the value).
pub(crate) fn returns(node: Node<'_>, language: Language, source: &[u8]) -> Vec<String> {
    let f = node
        .child_by_field_name("value")
        .filter(|v| v.child_by_field_name("parameters").is_some())
        .unwrap_or(node);
    let declared = ["return_type", "result"]
        .iter()
        .find_map(|k| f.child_by_field_name(k))
        .or_else(|| match language {
            Language::Java | Language::C | Language::Cpp => f.child_by_field_name("type"),
            Language::Rust
            | Language::Python
            | Language::JavaScript
            | Language::TypeScript
            | Language::Tsx
            | Language::Go => None,
        });
    let Some(declared) = declared else {
        return Vec::new();
    };
    let mut generics = generic_parameters(f, source);
    generics.extend(generics_in_scope(f, source));
    type_names(declared, language, source)
        .into_iter()
        .filter(|n| !generics.contains(n))
        .collect()
}
/// The type a value's expression says it has: a literal of the type, or a
/// call of a function reached through the type.
pub(crate) fn value_type(
    node: Node<'_>,
    language: Language,
    source: &[u8],
) -> Option<ReceiverType> {
    let declared = |n: Option<Node<'_>>| {
        n.and_then(|n| type_name(n, source)).map(|t| ReceiverType {
            names: vec![t],
            evidence: TypeEvidence::Declared,
        })
    };
    let constructed = |t: Option<String>| {
        t.map(|t| ReceiverType {
            names: vec![t],
            evidence: TypeEvidence::Constructed,
        })
    };
    let weaker = |rt: Option<ReceiverType>| {
        rt.map(|rt| ReceiverType {
            evidence: TypeEvidence::Constructed,
            ..rt
        })
    };
    match node.kind() {
        "struct_expression" => declared(node.child_by_field_name("name")),
        "composite_literal" | "object_creation_expression" => {
            declared(node.child_by_field_name("type"))
        }
        "new_expression" => declared(
            node.child_by_field_name("constructor")
                .or_else(|| node.child_by_field_name("type")),
        ),
        "call_expression" | "call" => {
            let f = node.child_by_field_name("function")?;
            let f = match f.kind() {
                "generic_function" => f.child_by_field_name("function")?,
                _ => f,
            };
            match f.kind() {
                "scoped_identifier" => constructed(
                    f.child_by_field_name("path")
                        .and_then(|p| qualifier(p, source)),
                ),
                "qualified_identifier" => constructed(
                    f.child_by_field_name("scope")
                        .and_then(|p| qualifier(p, source)),
                ),
                // `Store()`, `Point(1, 2)`: a class or tuple struct, by
                // the convention of capitalized type names where a type
                // is called to build a value; a lower-case callee is a
                // function of unknown result. (A capitalized Go function
                // is only exported; Java and JavaScript build with `new`.)
                "identifier" if matches!(language, Language::Python | Language::Rust) => {
                    constructed(
                        text(f, source)
                            .filter(|t| t.starts_with(|c: char| c.is_uppercase()))
                            .map(str::to_owned),
                    )
                }
                "attribute" => constructed(
                    f.child_by_field_name("attribute")
                        .and_then(|a| text(a, source))
                        .map(str::to_owned),
                ),
                "field_expression" | "member_expression" | "selector_expression" => weaker(
                    ["value", "argument", "object", "operand"]
                        .iter()
                        .find_map(|k| f.child_by_field_name(k))
                        .and_then(|o| value_type(o, language, source)),
                ),
                _ => None,
            }
        }
        "method_invocation" => weaker(
            node.child_by_field_name("object")
                .filter(|o| o.kind() != "identifier")
                .and_then(|o| value_type(o, language, source)),
        ),
        "try_expression"
        | "await_expression"
        | "reference_expression"
        | "parenthesized_expression"
        | "unary_expression"
        | "pointer_expression"
        | "await" => {
            let inner = ["value", "operand", "argument"]
                .iter()
                .find_map(|f| node.child_by_field_name(f))
                .or_else(|| node.named_child(0))?;
            value_type(inner, language, source)
        }
        _ => None,
    }
}

/// The type names a declared type spells, outer first: `Arc<Mutex<T>>` →
/// `Arc`, `Mutex`, `T`.
fn type_names(node: Node<'_>, language: Language, source: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut stack = vec![node];
    while let Some(n) = stack.pop() {
        let named = match n.kind() {
            "type_identifier"
            | "primitive_type"
            | "predefined_type"
            | "integral_type"
            | "floating_point_type"
            | "boolean_type"
            | "sized_type_specifier" => true,
            // A Python annotation is an expression: its names are identifiers.
            "identifier" => language == Language::Python,
            _ => false,
        };
        if named {
            if let Some(t) = text(n, source) {
                // Java's `var` asks the compiler for the type: it says none.
                let inferred = language == Language::Java && t == "var";
                if !inferred && !out.iter().any(|o| o == t) {
                    out.push(t.to_owned());
                }
            }
            continue;
        }
        let mut cursor = n.walk();
        let children: Vec<Node<'_>> = n.named_children(&mut cursor).collect();
        stack.extend(children.into_iter().rev());
    }
    out.truncate(MAX_TYPE_NAMES);
    out
}

/// The generic parameters in scope at a node (of every enclosing item).
fn generics_in_scope(node: Node<'_>, source: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut n = node.parent();
    while let Some(p) = n {
        out.extend(generic_parameters(p, source));
        n = p.parent();
    }
    out
}

/// The end of the construct a binding is declared in: its block, loop,
/// match arm, closure or function. A Python name lives in its whole
/// function.
fn scope_end(node: Node<'_>, language: Language) -> u32 {
    let scoping = |kind: &str| match language {
        Language::Python => matches!(kind, "function_definition" | "lambda" | "class_definition"),
        Language::Rust
        | Language::JavaScript
        | Language::TypeScript
        | Language::Tsx
        | Language::Go
        | Language::Java
        | Language::C
        | Language::Cpp => matches!(
            kind,
            "block"
                | "statement_block"
                | "compound_statement"
                | "for_expression"
                | "while_expression"
                | "if_expression"
                | "match_arm"
                | "closure_expression"
                | "function_item"
                | "for_statement"
                | "for_in_statement"
                | "enhanced_for_statement"
                | "arrow_function"
                | "function_expression"
                | "function_declaration"
                | "method_declaration"
                | "method_definition"
                | "constructor_declaration"
                | "lambda_expression"
                | "func_literal"
                | "function_definition"
        ),
    };
    let mut n = node.parent();
    while let Some(p) = n {
        if scoping(p.kind()) {
            return Span::of(p).end_byte;
        }
        n = p.parent();
    }
    u32::MAX
}

/// A binding of a match: its name, and its type from `type` or `value`.
pub(crate) fn binding(
    name: Node<'_>,
    type_node: Option<Node<'_>>,
    value: Option<Node<'_>>,
    node: Node<'_>,
    language: Language,
    source: &[u8],
) -> Option<Binding> {
    let (mut names, evidence) = match (type_node, value) {
        (Some(t), _) => (type_names(t, language, source), TypeEvidence::Declared),
        (None, Some(v)) => value_type(v, language, source)
            .map_or((Vec::new(), TypeEvidence::Constructed), |rt| {
                (rt.names, rt.evidence)
            }),
        (None, None) => (Vec::new(), TypeEvidence::Constructed),
    };
    // A value of a generic type `T` may be of any type `T` stands for.
    if !names.is_empty() {
        let generics = generics_in_scope(node, source);
        if names.iter().any(|n| generics.contains(n)) {
            names.clear();
        }
    }
    let returned_by = match (names.is_empty(), value) {
        (true, Some(v)) => returned_by(v, source),
        _ => None,
    };
    Some(Binding {
        name: text(name, source)?.to_owned(),
        name_span: Span::of(name),
        visible_from: Span::of(node).end_byte,
        scope_end: scope_end(node, language),
        names,
        evidence,
        returned_by,
    })
}

/// Each reference's innermost enclosing definition; `self`, `Self`,
/// `this` and `cls` are replaced by that definition's type; and each call
/// on a value gets the type the file's bindings give its receiver.
pub(crate) fn resolve(
    raw: Vec<(Reference, Hint)>,
    defs: &[Definition],
    mut bindings: Vec<Binding>,
    fields: Vec<Binding>,
    language: Language,
) -> Vec<Reference> {
    // Java and C++ name a field of `this` bare (`store.get()`); elsewhere
    // a bare name is never a field.
    let implicit_this = matches!(language, Language::Java | Language::Cpp);
    let spans: Vec<Span> = defs.iter().map(|d| d.span).collect();
    let items: Vec<Span> = raw.iter().map(|(r, _)| r.span).collect();
    let found = innermost(&spans, &items);
    // Each definition's enclosing definition, to find the type `self`
    // means from inside a closure or a class field.
    let parents = innermost(&spans, &spans);
    let owner = |mut d: usize| -> Option<String> {
        loop {
            let def = &defs[d];
            if def.kind.contains_members() && def.kind != DefKind::Module {
                return Some(def.name.clone());
            }
            if let Some(c) = &def.container {
                return Some(c.clone());
            }
            d = parents[d]?;
        }
    };
    let self_type = |names: &mut Vec<String>, d: Option<usize>| {
        for n in names.iter_mut() {
            if n == "Self"
                && let Some(o) = d.and_then(owner)
            {
                *n = o;
            }
        }
    };

    let binding_spans: Vec<Span> = bindings.iter().map(|b| b.name_span).collect();
    let binding_in = innermost(&spans, &binding_spans);
    for (b, d) in bindings.iter_mut().zip(&binding_in) {
        self_type(&mut b.names, *d);
    }
    let mut by_name: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, b) in bindings.iter().enumerate() {
        by_name.entry(b.name.as_str()).or_default().push(i);
    }
    let field_spans: Vec<Span> = fields.iter().map(|f| f.name_span).collect();
    let mut field_types: HashMap<(String, String), (Vec<String>, TypeEvidence)> = HashMap::new();
    for (f, d) in fields.into_iter().zip(innermost(&spans, &field_spans)) {
        let Some(o) = d.and_then(owner) else { continue };
        let mut names = f.names;
        self_type(&mut names, d);
        let slot = field_types
            .entry((o, f.name))
            .or_insert((Vec::new(), f.evidence));
        // A declared type wins over one guessed from an assignment.
        if slot.0.is_empty() || (f.evidence < slot.1 && !names.is_empty()) {
            *slot = (names, f.evidence);
        }
    }
    // Whether definition `inner` is `outer` or inside it (`None` is the
    // file).
    let within = |inner: Option<usize>, outer: Option<usize>| -> bool {
        let Some(outer) = outer else { return true };
        let mut d = inner;
        while let Some(i) = d {
            if i == outer {
                return true;
            }
            d = parents[i];
        }
        false
    };
    // The binding a name means at `at` inside definition `d`: the last
    // one declared before it, in `d` or around it.
    let lookup = |name: &str, at: u32, d: Option<usize>| -> Option<&Binding> {
        by_name
            .get(name)?
            .iter()
            .filter(|&&i| {
                let b = &bindings[i];
                b.visible_from <= at && at < b.scope_end && within(d, binding_in[i])
            })
            .max_by_key(|&&i| bindings[i].visible_from)
            .map(|&i| &bindings[i])
    };
    let field = |of: &[String], name: &str| -> Option<(Vec<String>, TypeEvidence)> {
        of.iter()
            .find_map(|t| field_types.get(&(t.clone(), name.to_owned())))
            .filter(|(names, _)| !names.is_empty())
            .cloned()
    };
    let typed = |names: Vec<String>, evidence: TypeEvidence| {
        (!names.is_empty()).then_some(ReceiverType { names, evidence })
    };

    let mut out = Vec::with_capacity(raw.len());
    for ((mut r, hint), d) in raw.into_iter().zip(found) {
        r.enclosing = d.and_then(|d| u32::try_from(d).ok());
        let at = r.span.start_byte;
        let own = d.and_then(owner);
        r.receiver = match hint {
            Hint::None => None,
            Hint::SelfValue => own
                .clone()
                .and_then(|o| typed(vec![o], TypeEvidence::Declared)),
            Hint::Var(x) => match lookup(&x, at, d) {
                // A local variable whose declaration does not say its
                // type: a value (not a module), of unknown type.
                Some(b) if b.names.is_empty() => {
                    r.receiver_from = b.returned_by.clone();
                    Some(ReceiverType {
                        names: Vec::new(),
                        evidence: TypeEvidence::Constructed,
                    })
                }
                Some(b) => typed(b.names.clone(), b.evidence),
                None => own
                    .as_ref()
                    .filter(|_| implicit_this)
                    .and_then(|o| field(std::slice::from_ref(o), &x))
                    .and_then(|(n, e)| typed(n, e)),
            },
            Hint::Returned(f) => {
                r.receiver_from = Some(f);
                None
            }
            Hint::Field(object, name) => {
                let of = match object {
                    Object::SelfValue => own.clone().map(|o| (vec![o], TypeEvidence::Declared)),
                    Object::Var(x) => match lookup(&x, at, d) {
                        Some(b) => Some((b.names.clone(), b.evidence)),
                        None => own
                            .as_ref()
                            .filter(|_| implicit_this)
                            .and_then(|o| field(std::slice::from_ref(o), &x)),
                    },
                };
                of.and_then(|(of, e)| field(&of, &name).and_then(|(n, fe)| typed(n, e.max(fe))))
            }
            Hint::Typed(mut rt) => {
                self_type(&mut rt.names, d);
                Some(rt)
            }
        };
        let is_self = matches!(
            r.qualifier.as_deref(),
            Some("self" | "Self" | "this" | "cls")
        );
        if is_self {
            r.qualifier = own;
        }
        out.push(r);
    }
    out
}
