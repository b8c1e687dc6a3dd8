//! Calls inside Rust macros. The grammar leaves the body of a macro
//! invocation (`assert_eq!(f(x), 1)`, `vec![a.b()]`, `tokio::select! {..}`,
//! `proptest! { fn p(..) {..} }`), of a `macro_rules!` rule and of an
//! attribute (`#[error("{}", list(x))]`) as a flat *token tree*; this
//! module finds the call shapes in it — `f(`, `path::f(`, `f::<T>(`,
//! `x.f(`, `self.y.f(`, `name!(` — and the `fn name(..) {..}` items a
//! macro like `proptest!` defines, recursively through nested trees.
//!
//! The result is a reading of tokens, not of expressions: `a.b.f()` gives
//! `f` on the field `b` of `a`, exactly as the parsed form would, but a
//! macro that rearranges its input may produce calls this cannot see.

use tree_sitter::Node;

use super::receivers::{Hint, Object};
use super::text;
use crate::facts::{DefKind, Definition, ReceiverType, RefKind, Reference, Span, TypeEvidence};

/// Words that take a parenthesis without being calls (`if (a)`, `in (..)`).
const KEYWORDS: [&str; 37] = [
    "as", "async", "await", "box", "break", "const", "continue", "crate", "dyn", "else", "enum",
    "extern", "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move",
    "mut", "pub", "ref", "return", "static", "struct", "super", "trait", "true", "type", "unsafe",
    "use", "where", "while",
];

/// Attributes whose arguments are configuration predicates, not code:
/// their `all(..)`, `any(..)`, `not(..)` are no calls.
const PREDICATE_ATTRIBUTES: [&str; 2] = ["cfg", "cfg_attr"];

/// Finds the calls and `fn` items in every outermost token tree of the
/// file.
pub(crate) fn scan(
    root: Node<'_>,
    source: &[u8],
    defs: &mut Vec<Definition>,
    refs: &mut Vec<(Reference, Hint)>,
) {
    // A depth-first walk with one cursor: no allocation per node.
    let mut cursor = root.walk();
    loop {
        let n = cursor.node();
        let descend = if n.kind() == "token_tree" {
            if !is_predicate(n, source) {
                scan_tree(n, source, defs, refs);
            }
            false
        } else {
            true
        };
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return;
            }
        }
    }
}

fn is_predicate(tree: Node<'_>, source: &[u8]) -> bool {
    tree.parent()
        .filter(|p| p.kind() == "attribute")
        .and_then(|p| p.named_child(0))
        .and_then(|n| text(n, source))
        .is_some_and(|name| PREDICATE_ATTRIBUTES.contains(&name))
}

fn opens_with(tree: Node<'_>, delimiter: &str) -> bool {
    tree.child(0).is_some_and(|c| c.kind() == delimiter)
}

fn is_name(tok: Node<'_>, source: &[u8]) -> bool {
    tok.kind() == "identifier" && text(tok, source).is_some_and(|t| !KEYWORDS.contains(&t))
}

/// The start of the generic arguments that end at `close` (a `>`), if
/// they are balanced.
fn generic_start(toks: &[Node<'_>], close: usize) -> Option<usize> {
    let mut depth = 0usize;
    for k in (0..=close).rev() {
        match toks[k].kind() {
            ">" => depth += 1,
            ">>" => depth += 2,
            "<" => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The callee before the argument tree at `open`: the index of its name
/// token, skipping a turbofish (`f::<T>(`).
fn callee_name(toks: &[Node<'_>], open: usize, source: &[u8]) -> Option<usize> {
    let mut j = open.checked_sub(1)?;
    if toks[j].kind() == ">" {
        let lt = generic_start(toks, j)?;
        let colons = lt.checked_sub(1)?;
        if toks[colons].kind() != "::" {
            return None;
        }
        j = colons.checked_sub(1)?;
    }
    is_name(toks[j], source).then_some(j)
}

/// The last segment of the path that ends at `end` (an identifier, or
/// generic arguments after one: `Vec::<u8>` → `Vec`).
fn segment(toks: &[Node<'_>], end: usize, source: &[u8]) -> Option<String> {
    let mut j = end;
    if toks[j].kind() == ">" {
        j = generic_start(toks, j)?.checked_sub(1)?;
        if toks[j].kind() == "::" {
            j = j.checked_sub(1)?;
        }
    }
    match toks[j].kind() {
        "identifier" => text(toks[j], source).map(str::to_owned),
        _ => None,
    }
}

/// What a call found in tokens is made on.
struct Call {
    qualifier: Option<String>,
    path_qualified: bool,
    on_value: bool,
    hint: Hint,
}

/// The shape of the call whose name is at `name` (after `::`, after `.`,
/// or bare).
fn call_shape(toks: &[Node<'_>], name: usize, source: &[u8]) -> Call {
    let bare = Call {
        qualifier: None,
        path_qualified: false,
        on_value: false,
        hint: Hint::None,
    };
    let Some(before) = name.checked_sub(1) else {
        return bare;
    };
    match toks[before].kind() {
        "::" => Call {
            qualifier: before.checked_sub(1).and_then(|k| segment(toks, k, source)),
            path_qualified: true,
            on_value: false,
            hint: Hint::None,
        },
        "." => {
            let Some(r) = before.checked_sub(1) else {
                return bare;
            };
            let receiver = toks[r];
            let dotted = r
                .checked_sub(2)
                .filter(|&o| toks[o + 1].kind() == ".")
                .map(|o| toks[o]);
            let (qualifier, hint) = match receiver.kind() {
                "self" => (Some("self".to_owned()), Hint::SelfValue),
                "identifier" => {
                    let field = text(receiver, source).unwrap_or_default().to_owned();
                    let hint = match dotted {
                        Some(o) if o.kind() == "self" => {
                            Hint::Field(Object::SelfValue, field.clone())
                        }
                        Some(o) if o.kind() == "identifier" => match text(o, source) {
                            Some(t) => Hint::Field(Object::Var(t.to_owned()), field.clone()),
                            None => Hint::None,
                        },
                        Some(_) => Hint::None,
                        None => Hint::Var(field.clone()),
                    };
                    (Some(field), hint)
                }
                _ => (None, built_by(toks, r, source)),
            };
            Call {
                qualifier,
                path_qualified: false,
                on_value: true,
                hint,
            }
        }
        _ => bare,
    }
}

/// The type of an unnamed receiver ending at `end`: `T::f(..)` or
/// `T::f(..)?` is taken as built by `T`; `T { .. }` is a `T`.
fn built_by(toks: &[Node<'_>], end: usize, source: &[u8]) -> Hint {
    let mut k = end;
    if toks[k].kind() == "?" {
        let Some(p) = k.checked_sub(1) else {
            return Hint::None;
        };
        k = p;
    }
    let tree = toks[k];
    if tree.kind() != "token_tree" {
        return Hint::None;
    }
    if opens_with(tree, "{") {
        return match k.checked_sub(1).and_then(|n| segment(toks, n, source)) {
            Some(t) => typed(t, TypeEvidence::Declared),
            None => Hint::None,
        };
    }
    let Some(name) = callee_name(toks, k, source) else {
        return Hint::None;
    };
    match call_shape(toks, name, source) {
        Call {
            path_qualified: true,
            qualifier: Some(q),
            ..
        } => typed(q, TypeEvidence::Constructed),
        Call { hint, .. } => match hint {
            Hint::Typed(rt) => Hint::Typed(ReceiverType {
                evidence: TypeEvidence::Constructed,
                ..rt
            }),
            // `f(..).g()`, `x.f(..).g()`: what `f` is declared to return.
            Hint::None | Hint::SelfValue | Hint::Var(_) | Hint::Field(..) | Hint::Returned(_) => {
                text(toks[name], source).map_or(Hint::None, |f| Hint::Returned(f.to_owned()))
            }
        },
    }
}

fn typed(name: String, evidence: TypeEvidence) -> Hint {
    Hint::Typed(ReceiverType {
        names: vec![name],
        evidence,
    })
}

fn call(name: Node<'_>, shape: Call, source: &[u8]) -> Option<(Reference, Hint)> {
    Some((
        Reference {
            name: text(name, source)?.to_owned(),
            kind: RefKind::Call,
            qualifier: shape.qualifier,
            path_qualified: shape.path_qualified,
            on_value: shape.on_value,
            receiver: None,
            receiver_from: None,
            args: None,
            span: Span::of(name),
            enclosing: None,
        },
        shape.hint,
    ))
}

fn scan_tree(
    tree: Node<'_>,
    source: &[u8],
    defs: &mut Vec<Definition>,
    refs: &mut Vec<(Reference, Hint)>,
) {
    let mut cursor = tree.walk();
    let toks: Vec<Node<'_>> = tree.children(&mut cursor).collect();
    for (i, tok) in toks.iter().enumerate() {
        if tok.kind() != "token_tree" {
            continue;
        }
        // `name!(..)`, `name![..]`, `name! {..}`: a macro call.
        if i >= 2 && toks[i - 1].kind() == "!" && is_name(toks[i - 2], source) {
            refs.extend(call(toks[i - 2], call_shape(&toks, i - 2, source), source));
        } else if opens_with(*tok, "(")
            && let Some(name) = callee_name(&toks, i, source)
        {
            let item = name.checked_sub(1).filter(|&k| toks[k].kind() == "fn");
            match item {
                Some(fn_at) => defs.extend(function(&toks, fn_at, name, i, source)),
                None => refs.extend(call(toks[name], call_shape(&toks, name, source), source)),
            }
        }
        scan_tree(*tok, source, defs, refs);
    }
}

/// `fn name(..) -> T {..}` inside a macro: a function from `fn` to the end
/// of its body (or its arguments, when it has none).
fn function(
    toks: &[Node<'_>],
    fn_at: usize,
    name: usize,
    args: usize,
    source: &[u8],
) -> Option<Definition> {
    let body = toks[args + 1..]
        .iter()
        .take_while(|t| t.kind() != ";")
        .find(|t| t.kind() == "token_tree" && opens_with(**t, "{"))
        .copied()
        .unwrap_or(toks[args]);
    let start = Span::of(toks[fn_at]);
    let end = Span::of(body);
    Some(Definition {
        name: text(toks[name], source)?.to_owned(),
        kind: DefKind::Function,
        container: None,
        implements: None,
        span: Span {
            start_byte: start.start_byte,
            end_byte: end.end_byte,
            start_line: start.start_line,
            end_line: end.end_line,
        },
        name_span: Span::of(toks[name]),
        params: None,
        returns: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use crate::facts::RefKind;
    use crate::lang::Language;

    fn calls(src: &str) -> Vec<String> {
        let f = match crate::extract::extract(Language::Rust, src.as_bytes()) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        f.references
            .iter()
            .filter(|r| r.kind == RefKind::Call)
            .map(|r| {
                let q = r.qualifier.clone().unwrap_or_default();
                let sep = match (r.path_qualified, r.on_value) {
                    (true, _) => "::",
                    (false, true) => ".",
                    (false, false) => "",
                };
                let ty = r
                    .receiver
                    .as_ref()
                    .map(|t| format!(" [{}]", t.names.join(",")))
                    .unwrap_or_default();
                format!("{q}{sep}{}{ty}", r.name)
            })
            .collect()
    }

    #[test]
    fn calls_inside_macros_are_read_from_their_tokens() {
        let src = r#"
struct S { inner: Inner }
impl S {
    fn t(&self, p: &str) {
        assert_eq!(a::b(x), self.c(1), "{}", d::<u8>(2));
        let v = vec![Script::parse(p, q)?.run(), self.inner.go(), Vec::<u8>::new()];
        tokio::select! { x = rx.recv() => { handle(x) } }
        format!("{}", if (ok) { p.len() } else { 0 });
    }
}
#[cfg(all(test, not(unix)))]
mod m {}
"#;
        assert_eq!(
            calls(src),
            [
                "assert_eq",
                "a::b",
                "S.c [S]",
                "d",
                "vec",
                "Script::parse",
                ".run [Script]",
                "inner.go [Inner]",
                "Vec::new",
                "tokio::select",
                "rx.recv",
                "handle",
                "format",
                "p.len [str]",
            ]
        );
    }

    #[test]
    fn functions_a_macro_defines_are_definitions() {
        let src = "proptest! {\n    #[test]\n    fn prop(x in 0..10u8) {\n        check(x)\n    }\n}\nmacro_rules! m { ($x:expr) => { helper($x) }; }\n";
        let f = match crate::extract::extract(Language::Rust, src.as_bytes()) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        };
        let prop = f.definitions.iter().position(|d| d.name == "prop");
        assert!(prop.is_some(), "{:?}", f.definitions);
        let check = f.references.iter().find(|r| r.name == "check");
        assert_eq!(
            check.and_then(|r| r.enclosing).map(|i| i as usize),
            prop,
            "the call is inside the function the macro defines"
        );
        let helper = f.references.iter().find(|r| r.name == "helper");
        let in_macro = helper
            .and_then(|r| r.enclosing)
            .map(|i| f.definitions[i as usize].name.as_str());
        assert_eq!(in_macro, Some("m"), "a rule's calls are the macro's");
    }
}
