//! One file's facts from its syntax tree: the language's query
//! ([`crate::lang`]) finds definitions, references, `impl` scopes and the
//! bindings that tell a receiver's type; then each definition gets its
//! container (the type, trait, class or module it is a member of) and each
//! reference the innermost definition around it and, for a call on a
//! value, the type of that value where a declaration says it
//! ([`receivers`]). Rust macro bodies are token trees the grammar does
//! not parse: [`tokens`] finds the calls in them.
//!
//! Containment is decided in one sweep over nodes sorted by position, so
//! a file with thousands of definitions costs no more than sorting them.

mod receivers;
mod signature;
mod tokens;

use std::collections::{HashMap, HashSet};

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, QueryCursor};

use crate::facts::{DefKind, Definition, FileFacts, RefKind, Reference, Span};
use crate::lang::Language;

use receivers::{Binding, Hint};

/// Why a file could not be read into facts.
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("the {language} grammar could not be loaded: {message}")]
    Grammar { language: Language, message: String },
    #[error("the {language} query does not compile: {message}")]
    Query { language: Language, message: String },
    #[error("the {language} parser gave up on the file")]
    Parse { language: Language },
}

/// What a capture of the query stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Name,
    Qualifier,
    Implementor,
    Container,
    TypeNode,
    Value,
    Def(DefKind),
    Ref(RefKind),
    ImplScope,
    Binding,
    Field,
    /// A capture this crate's queries use only in predicates (`@_self`).
    Other,
}

fn role(capture: &str) -> Role {
    match capture {
        "name" => Role::Name,
        "qual" => Role::Qualifier,
        "implementor" => Role::Implementor,
        "container" => Role::Container,
        "type" => Role::TypeNode,
        "value" => Role::Value,
        "def.function" => Role::Def(DefKind::Function),
        "def.method" => Role::Def(DefKind::Method),
        "def.type" => Role::Def(DefKind::Type),
        "def.class" => Role::Def(DefKind::Class),
        "def.interface" => Role::Def(DefKind::Interface),
        "def.constant" => Role::Def(DefKind::Constant),
        "def.module" => Role::Def(DefKind::Module),
        "def.macro" => Role::Def(DefKind::Macro),
        "ref.call" => Role::Ref(RefKind::Call),
        "ref.type" => Role::Ref(RefKind::Type),
        "ref.implementation" => Role::Ref(RefKind::Implementation),
        "ref.import" => Role::Ref(RefKind::Import),
        "scope.impl" => Role::ImplScope,
        "binding" => Role::Binding,
        "field" => Role::Field,
        _ => Role::Other,
    }
}

/// An `impl` block: not a definition, but what its functions are members
/// of.
struct ImplScope {
    span: Span,
    implementor: String,
    implements: Option<String>,
}

/// The captures of one match, by role.
#[derive(Default)]
struct Captured<'t> {
    main: Option<(Role, Node<'t>)>,
    name: Option<Node<'t>>,
    qual: Option<Node<'t>>,
    implementor: Option<Node<'t>>,
    container: Option<Node<'t>>,
    type_node: Option<Node<'t>>,
    value: Option<Node<'t>>,
}

/// Reads one file's facts.
pub fn extract(language: Language, source: &[u8]) -> Result<FileFacts, ExtractError> {
    let mut parser = Parser::new();
    parser
        .set_language(&language.grammar())
        .map_err(|e| ExtractError::Grammar {
            language,
            message: e.to_string(),
        })?;
    let tree = parser
        .parse(source, None)
        .ok_or(ExtractError::Parse { language })?;
    let query = language
        .query()
        .map_err(|message| ExtractError::Query { language, message })?;
    let roles: Vec<Role> = query.capture_names().iter().map(|c| role(c)).collect();

    let mut defs: Vec<Definition> = Vec::new();
    let mut refs: Vec<(Reference, Hint)> = Vec::new();
    let mut scopes: Vec<ImplScope> = Vec::new();
    let mut bindings: Vec<Binding> = Vec::new();
    let mut fields: Vec<Binding> = Vec::new();
    let mut cursor = QueryCursor::new();
    let mut matches = cursor.matches(query, tree.root_node(), source);
    while let Some(m) = matches.next() {
        let mut c = Captured::default();
        for cap in m.captures() {
            let r = roles
                .get(cap.index as usize)
                .copied()
                .unwrap_or(Role::Other);
            match r {
                Role::Name => c.name = Some(cap.node),
                Role::Qualifier => c.qual = Some(cap.node),
                Role::Implementor => c.implementor = Some(cap.node),
                Role::Container => c.container = Some(cap.node),
                Role::TypeNode => c.type_node = Some(cap.node),
                Role::Value => c.value = Some(cap.node),
                Role::Def(_) | Role::Ref(_) | Role::ImplScope | Role::Binding | Role::Field => {
                    c.main = Some((r, cap.node));
                }
                Role::Other => {}
            }
        }
        let Some((r, node)) = c.main else { continue };
        match r {
            Role::ImplScope => {
                let Some(implementor) = c.implementor.and_then(|n| type_name(n, source)) else {
                    continue;
                };
                scopes.push(ImplScope {
                    span: Span::of(node),
                    implementor,
                    implements: node
                        .child_by_field_name("trait")
                        .and_then(|t| type_name(t, source)),
                });
            }
            Role::Def(kind) => {
                let Some(n) = c.name else { continue };
                let Some(text) = identifier(n, source, language) else {
                    continue;
                };
                defs.push(Definition {
                    name: text,
                    kind,
                    container: c.container.and_then(|c| type_name(c, source)),
                    implements: None,
                    span: Span::of(node),
                    name_span: Span::of(n),
                    params: match kind {
                        DefKind::Function | DefKind::Method => {
                            signature::params(node, language, source)
                        }
                        DefKind::Type
                        | DefKind::Class
                        | DefKind::Interface
                        | DefKind::Constant
                        | DefKind::Module
                        | DefKind::Macro => None,
                    },
                    returns: match kind {
                        DefKind::Function | DefKind::Method => {
                            receivers::returns(node, language, source)
                        }
                        DefKind::Type
                        | DefKind::Class
                        | DefKind::Interface
                        | DefKind::Constant
                        | DefKind::Module
                        | DefKind::Macro => Vec::new(),
                    },
                });
            }
            Role::Ref(kind) => refs.extend(reference(kind, node, &c, language, source)),
            Role::Binding | Role::Field => {
                let Some(n) = c.name else { continue };
                let found = receivers::binding(n, c.type_node, c.value, node, language, source);
                match (r, found) {
                    (Role::Binding, Some(b)) => bindings.push(b),
                    (_, Some(b)) => fields.push(b),
                    (_, None) => {}
                }
            }
            Role::Name
            | Role::Qualifier
            | Role::Implementor
            | Role::Container
            | Role::TypeNode
            | Role::Value
            | Role::Other => {}
        }
    }
    if language == Language::Rust {
        tokens::scan(tree.root_node(), source, &mut defs, &mut refs);
    }

    let defs = dedupe_definitions(defs);
    let mut defs = assign_containers(defs, &scopes);
    // `-> Self` returns the type the function is a member of.
    for d in &mut defs {
        if let Some(c) = &d.container {
            for n in d.returns.iter_mut().filter(|n| *n == "Self") {
                n.clone_from(c);
            }
        }
    }
    let refs = receivers::resolve(refs, &defs, bindings, fields, language);
    let refs = dedupe_references(refs, &defs);
    Ok(FileFacts {
        language,
        definitions: defs,
        references: refs,
        has_errors: tree.root_node().has_error(),
    })
}

/// One reference of a match, with what its receiver may be known by.
fn reference(
    kind: RefKind,
    node: Node<'_>,
    c: &Captured<'_>,
    language: Language,
    source: &[u8],
) -> Option<(Reference, Hint)> {
    let n = c.name?;
    // A trait or interface is known by its plain name: `From` of
    // `From<T>`, `Store` of `crate::store::Store`.
    let text = match kind {
        RefKind::Implementation => type_name(n, source),
        RefKind::Call | RefKind::Type | RefKind::Import => identifier(n, source, language),
    }?;
    let qualifier = match kind {
        // A blanket `impl<T: Trait> Other for T` is for no type in
        // particular: it has no implementor to name.
        RefKind::Implementation => c
            .implementor
            .and_then(|i| type_name(i, source))
            .filter(|t| !generic_parameters(node, source).contains(t)),
        RefKind::Import => c
            .qual
            .and_then(|q| qualifier(q, source))
            .or_else(|| import_module(n, language, source)),
        RefKind::Call | RefKind::Type => c.qual.and_then(|q| qualifier(q, source)),
    };
    let path_qualified = kind == RefKind::Call
        && c.qual
            .and_then(|q| q.parent())
            .is_some_and(|p| is_path(p.kind()));
    let (on_value, hint) = match (kind, c.qual) {
        (RefKind::Call, Some(q)) if !path_qualified => (true, receivers::hint(q, language, source)),
        _ => (false, Hint::None),
    };
    Some((
        Reference {
            name: text,
            kind,
            qualifier,
            path_qualified,
            on_value,
            receiver: None,
            receiver_from: None,
            args: match kind {
                // JavaScript lets any function take any number of arguments.
                RefKind::Call if language != Language::JavaScript => signature::arguments(node),
                RefKind::Call | RefKind::Type | RefKind::Implementation | RefKind::Import => None,
            },
            span: Span::of(n),
            enclosing: None,
        },
        hint,
    ))
}

/// A node that is a path to a type or module: `a::b`, C++ `ns::f`.
fn is_path(kind: &str) -> bool {
    matches!(
        kind,
        "scoped_identifier" | "scoped_type_identifier" | "qualified_identifier"
    )
}

fn text<'a>(node: Node<'_>, source: &'a [u8]) -> Option<&'a str> {
    std::str::from_utf8(source.get(node.byte_range())?).ok()
}

/// The name a node is known by: the identifier itself, or — for a Go
/// import path — its last segment (`"net/http"` → `http`), or — for a C
/// include — the header's stem (`"store/disk.h"` → `disk`).
fn identifier(node: Node<'_>, source: &[u8], language: Language) -> Option<String> {
    let t = text(node, source)?;
    let t = match (language, node.kind()) {
        (Language::Go, "interpreted_string_literal") => {
            t.trim_matches('"').rsplit('/').next().unwrap_or_default()
        }
        (Language::C | Language::Cpp, "string_literal" | "system_lib_string") => {
            let path = t.trim_matches(|c| c == '"' || c == '<' || c == '>');
            let file = path.rsplit('/').next().unwrap_or_default();
            file.split('.').next().unwrap_or_default()
        }
        _ => t,
    };
    (!t.is_empty()).then(|| t.to_owned())
}

/// A type's plain name: `Config` for `Config`, `Config<T>`, `&Config`,
/// `crate::cfg::Config` and `*Config`.
fn type_name(node: Node<'_>, source: &[u8]) -> Option<String> {
    match node.kind() {
        "generic_type" | "reference_type" | "pointer_type" | "template_type" => node
            .child_by_field_name("type")
            .or_else(|| node.child_by_field_name("name"))
            .or_else(|| node.named_child(0))
            .and_then(|n| type_name(n, source)),
        "scoped_type_identifier"
        | "scoped_identifier"
        | "nested_type_identifier"
        | "qualified_identifier" => node
            .child_by_field_name("name")
            .and_then(|n| type_name(n, source)),
        "attribute" => node
            .child_by_field_name("attribute")
            .and_then(|n| type_name(n, source)),
        _ => {
            let t = text(node, source)?;
            let plain = t
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '$');
            (plain && !t.is_empty()).then(|| t.to_owned())
        }
    }
}

/// The names of an item's generic type parameters (`T` and `U` of
/// `impl<T: Read, U> …`, `template <typename T>`).
fn generic_parameters(node: Node<'_>, source: &[u8]) -> Vec<String> {
    let params = match node.kind() {
        "template_declaration" => node.child_by_field_name("parameters"),
        _ => node.child_by_field_name("type_parameters"),
    };
    let Some(params) = params else {
        return Vec::new();
    };
    let mut cursor = params.walk();
    params
        .named_children(&mut cursor)
        .filter_map(|p| match p.kind() {
            "type_identifier" => text(p, source).map(str::to_owned),
            _ => p
                .child_by_field_name("name")
                .or_else(|| p.child_by_field_name("left"))
                .or_else(|| {
                    let mut c = p.walk();
                    p.named_children(&mut c)
                        .find(|n| matches!(n.kind(), "type_identifier" | "identifier"))
                })
                .and_then(|n| text(n, source))
                .map(str::to_owned),
        })
        .collect()
}

/// What a call is made on, as a name: the last segment of a path or a
/// field chain, `self`/`this` as written (resolved later). Anything more
/// complex (a call's result, an index) has no name.
fn qualifier(node: Node<'_>, source: &[u8]) -> Option<String> {
    match node.kind() {
        "scoped_identifier" | "scoped_type_identifier" | "qualified_identifier" => node
            .child_by_field_name("name")
            .and_then(|n| qualifier(n, source)),
        "field_expression" | "selector_expression" | "field_access" => node
            .child_by_field_name("field")
            .and_then(|n| qualifier(n, source)),
        "member_expression" => node
            .child_by_field_name("property")
            .and_then(|n| qualifier(n, source)),
        "attribute" => node
            .child_by_field_name("attribute")
            .and_then(|n| qualifier(n, source)),
        "generic_type" | "template_type" => node
            .child_by_field_name("type")
            .or_else(|| node.child_by_field_name("name"))
            .and_then(|n| qualifier(n, source)),
        "identifier"
        | "type_identifier"
        | "field_identifier"
        | "property_identifier"
        | "namespace_identifier"
        | "self"
        | "this"
        | "super"
        | "package_identifier" => text(node, source).map(str::to_owned),
        _ => None,
    }
}

/// The module an imported name comes from, as its last segment: `config`
/// of `use crate::config::load`, `store` of `from app.store import open`,
/// `log` of `import { log } from './log.js'`.
fn import_module(name: Node<'_>, language: Language, source: &[u8]) -> Option<String> {
    match language {
        Language::Rust => {
            let parent = name.parent()?;
            let path = match parent.kind() {
                "scoped_identifier" => parent.child_by_field_name("path"),
                "use_list" => parent
                    .parent()
                    .filter(|p| p.kind() == "scoped_use_list")
                    .and_then(|p| p.child_by_field_name("path")),
                _ => None,
            }?;
            qualifier(path, source)
        }
        Language::Python => {
            let mut n = name;
            while n.kind() != "import_from_statement" {
                n = n.parent()?;
            }
            let module = n.child_by_field_name("module_name")?;
            let mut cursor = module.walk();
            let last = match module.kind() {
                "dotted_name" => module.named_children(&mut cursor).last(),
                _ => module
                    .named_children(&mut cursor)
                    .find(|c| c.kind() == "dotted_name")
                    .and_then(|d| {
                        let mut c2 = d.walk();
                        d.named_children(&mut c2).last()
                    }),
            }?;
            text(last, source).map(str::to_owned)
        }
        Language::JavaScript | Language::TypeScript | Language::Tsx => {
            let mut n = name;
            while n.kind() != "import_statement" {
                n = n.parent()?;
            }
            let from = text(n.child_by_field_name("source")?, source)?;
            let from = from.trim_matches(|c| c == '"' || c == '\'' || c == '`');
            let file = from.rsplit('/').next().unwrap_or(from);
            let stem = file.split('.').next().unwrap_or(file);
            (!stem.is_empty()).then(|| stem.to_owned())
        }
        Language::Go | Language::Java | Language::C | Language::Cpp => None,
    }
}

/// One definition per name node: where two patterns captured the same
/// identifier, the more specific kind wins.
fn dedupe_definitions(defs: Vec<Definition>) -> Vec<Definition> {
    let mut by_name: HashMap<u32, Definition> = HashMap::with_capacity(defs.len());
    for d in defs {
        match by_name.get(&d.name_span.start_byte) {
            Some(existing) if existing.kind.precedence() <= d.kind.precedence() => {}
            Some(_) | None => {
                by_name.insert(d.name_span.start_byte, d);
            }
        }
    }
    let mut out: Vec<Definition> = by_name.into_values().collect();
    // Two definitions over one span (a C `typedef struct node {..} node_t`)
    // in the order of their names.
    out.sort_by_key(|d| {
        (
            d.span.start_byte,
            std::cmp::Reverse(d.span.end_byte),
            d.name_span.start_byte,
        )
    });
    out
}

/// One reference per identifier and kind; a type use at a definition's own
/// name, or at an identifier another kind already claims (the trait of an
/// `impl`), is not a use.
fn dedupe_references(refs: Vec<Reference>, defs: &[Definition]) -> Vec<Reference> {
    let def_names: HashSet<u32> = defs.iter().map(|d| d.name_span.start_byte).collect();
    let claimed: HashSet<u32> = refs
        .iter()
        .filter(|r| r.kind != RefKind::Type)
        .map(|r| r.span.start_byte)
        .collect();
    let mut seen: HashSet<(u32, RefKind)> = HashSet::with_capacity(refs.len());
    let mut out: Vec<Reference> = refs
        .into_iter()
        .filter(|r| {
            let start = r.span.start_byte;
            let shadowed =
                r.kind == RefKind::Type && (def_names.contains(&start) || claimed.contains(&start));
            !shadowed && seen.insert((start, r.kind))
        })
        .collect();
    out.sort_by_key(|r| (r.span.start_byte, r.kind));
    out
}

/// For each item, the index of the innermost container whose span holds
/// it (a node never holds itself). `containers` are sorted by start, then
/// by length descending; the spans come from one tree, so they nest or are
/// disjoint.
fn innermost(containers: &[Span], items: &[Span]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_by_key(|&i| (items[i].start_byte, std::cmp::Reverse(items[i].end_byte)));
    let mut out = vec![None; items.len()];
    let mut stack: Vec<usize> = Vec::new();
    let mut next = 0;
    for i in order {
        let it = items[i];
        while let Some(c) = containers.get(next) {
            let opens_before = c.start_byte < it.start_byte
                || (c.start_byte == it.start_byte && c.end_byte > it.end_byte);
            if !opens_before {
                break;
            }
            while stack
                .last()
                .is_some_and(|&t| containers[t].end_byte < c.end_byte)
            {
                stack.pop();
            }
            stack.push(next);
            next += 1;
        }
        while stack
            .last()
            .is_some_and(|&t| containers[t].end_byte < it.end_byte)
        {
            stack.pop();
        }
        out[i] = stack.last().copied();
    }
    out
}

/// Names each definition's container: the innermost type, trait, class,
/// module or `impl` around it. A function inside another function is local
/// and has none. A function whose container is a type is a method.
fn assign_containers(mut defs: Vec<Definition>, scopes: &[ImplScope]) -> Vec<Definition> {
    /// A candidate container: a definition (by index) or an `impl` scope.
    #[derive(Clone, Copy)]
    enum Holder {
        Def(usize),
        Scope(usize),
    }
    let mut holders: Vec<(Span, Holder)> = defs
        .iter()
        .enumerate()
        .map(|(i, d)| (d.span, Holder::Def(i)))
        .chain(
            scopes
                .iter()
                .enumerate()
                .map(|(i, s)| (s.span, Holder::Scope(i))),
        )
        .collect();
    holders.sort_by_key(|(s, _)| (s.start_byte, std::cmp::Reverse(s.end_byte)));
    let spans: Vec<Span> = holders.iter().map(|(s, _)| *s).collect();
    let items: Vec<Span> = defs.iter().map(|d| d.span).collect();
    let found = innermost(&spans, &items);
    let mut updates: Vec<(usize, Option<String>, Option<String>, bool)> = Vec::new();
    for (i, h) in found.into_iter().enumerate() {
        let Some(h) = h else { continue };
        match holders[h].1 {
            Holder::Def(j) => {
                let holder = &defs[j];
                if holder.kind.contains_members() {
                    let typed = holder.kind != DefKind::Module;
                    updates.push((i, Some(holder.name.clone()), None, typed));
                }
            }
            Holder::Scope(s) => {
                let scope = &scopes[s];
                updates.push((
                    i,
                    Some(scope.implementor.clone()),
                    scope.implements.clone(),
                    true,
                ));
            }
        }
    }
    for (i, container, implements, typed) in updates {
        let d = &mut defs[i];
        if d.container.is_none() {
            d.container = container;
        }
        d.implements = implements;
        if typed && d.kind == DefKind::Function {
            d.kind = DefKind::Method;
        }
    }
    defs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(lang: Language, src: &str) -> FileFacts {
        match extract(lang, src.as_bytes()) {
            Ok(f) => f,
            Err(e) => panic!("{e}"),
        }
    }

    fn defs(f: &FileFacts) -> Vec<String> {
        f.definitions
            .iter()
            .map(|d| {
                format!(
                    "{} {}{} {}-{}",
                    d.kind.as_str(),
                    d.qualified(f.language),
                    d.implements
                        .as_ref()
                        .map(|t| format!(" (impl {t})"))
                        .unwrap_or_default(),
                    d.span.start_line,
                    d.span.end_line
                )
            })
            .collect()
    }

    fn refs(f: &FileFacts, kind: RefKind) -> Vec<String> {
        f.references
            .iter()
            .filter(|r| r.kind == kind)
            .map(|r| {
                let within = r
                    .enclosing
                    .map(|i| f.definitions[i as usize].name.clone())
                    .unwrap_or_else(|| "-".into());
                match &r.qualifier {
                    Some(q) => format!("{q}.{}@{} in {within}", r.name, r.span.start_line),
                    None => format!("{}@{} in {within}", r.name, r.span.start_line),
                }
            })
            .collect()
    }

    const RUST_SRC: &str = r#"use crate::util::helper;
pub const LIMIT: usize = 3;
pub struct Config { path: String }
pub trait Load { fn load(&self) -> Config; }
impl Config {
    pub fn new(path: &str) -> Config {
        let c = Config { path: path.to_owned() };
        c.check();
        c
    }
    fn check(&self) { self.validate(); helper(); }
    fn validate(&self) {}
}
impl Load for Config {
    fn load(&self) -> Config { Config::new("x") }
}
mod inner {
    pub fn nested() { fn local() {} local(); println!("hi"); }
}
"#;

    #[test]
    fn rust_definitions_have_containers_and_kinds() {
        let f = facts(Language::Rust, RUST_SRC);
        assert_eq!(
            defs(&f),
            [
                "constant LIMIT 2-2",
                "type Config 3-3",
                "interface Load 4-4",
                "method Load::load 4-4",
                "method Config::new 6-10",
                "method Config::check 11-11",
                "method Config::validate 12-12",
                "method Config::load (impl Load) 15-15",
                "module inner 17-19",
                "function inner::nested 18-18",
                "function local 18-18",
            ]
        );
        assert!(!f.has_errors);
    }

    #[test]
    fn rust_calls_know_their_receiver_and_caller() {
        let f = facts(Language::Rust, RUST_SRC);
        assert_eq!(
            refs(&f, RefKind::Call),
            [
                "path.to_owned@7 in new",
                "c.check@8 in new",
                "Config.validate@11 in check",
                "helper@11 in check",
                "Config.new@15 in load",
                "local@18 in nested",
                "println@18 in nested",
            ]
        );
        // An import names the module it comes from.
        assert_eq!(refs(&f, RefKind::Import), ["util.helper@1 in -"]);
        assert_eq!(refs(&f, RefKind::Implementation), ["Config.Load@14 in -"]);
        let types = refs(&f, RefKind::Type);
        assert!(types.contains(&"Config@6 in new".to_owned()), "{types:?}");
        assert!(
            !types
                .iter()
                .any(|t| t.starts_with("Config@3") || t.starts_with("Load@14")),
            "a definition's own name and an impl's trait are not type uses: {types:?}"
        );
    }

    #[test]
    fn python_classes_methods_and_bases() {
        let src = "from app.store import Store, open_db\nLIMIT = 5\n\nclass Repo(Store):\n    def get(self, k):\n        return self.fetch(k)\n\n    def fetch(self, k):\n        return open_db().read(k)\n\ndef main():\n    Repo().get(1)\n";
        let f = facts(Language::Python, src);
        assert_eq!(
            defs(&f),
            [
                "constant LIMIT 2-2",
                "class Repo 4-9",
                "method Repo.get 5-6",
                "method Repo.fetch 8-9",
                "function main 11-12",
            ]
        );
        assert_eq!(
            refs(&f, RefKind::Call),
            [
                "Repo.fetch@6 in get",
                "open_db@9 in fetch",
                "read@9 in fetch",
                "Repo@12 in main",
                "get@12 in main",
            ]
        );
        assert_eq!(
            refs(&f, RefKind::Import),
            ["store.Store@1 in -", "store.open_db@1 in -"]
        );
        assert_eq!(refs(&f, RefKind::Implementation), ["Repo.Store@4 in Repo"]);
    }

    #[test]
    fn typescript_interfaces_and_implements() {
        let src = "import { log } from './log';\nexport interface Shape { area(): number; }\nexport class Circle implements Shape {\n  area(): number { return helper(this.r); }\n  grow() { this.area(); }\n}\nexport const helper = (r: number) => r * r;\nexport const PI = 3.14;\nfunction main(s: Shape) { new Circle(); log(s.area()); }\n";
        let f = facts(Language::TypeScript, src);
        assert_eq!(
            defs(&f),
            [
                "interface Shape 2-2",
                "method Shape.area 2-2",
                "class Circle 3-6",
                "method Circle.area 4-4",
                "method Circle.grow 5-5",
                "function helper 7-7",
                "constant PI 8-8",
                "function main 9-9",
            ]
        );
        assert_eq!(
            refs(&f, RefKind::Implementation),
            ["Circle.Shape@3 in Circle"]
        );
        assert_eq!(
            refs(&f, RefKind::Call),
            [
                "helper@4 in area",
                "Circle.area@5 in grow",
                "Circle@9 in main",
                "log@9 in main",
                "s.area@9 in main",
            ]
        );
        assert_eq!(refs(&f, RefKind::Import), ["log.log@1 in -"]);
    }

    #[test]
    fn javascript_classes_and_extends() {
        let src = "class Base { run() {} }\nclass Job extends Base {\n  run() { super.run(); this.#step(); }\n  #step() {}\n}\nfunction start() { new Job().run(); }\n";
        let f = facts(Language::JavaScript, src);
        assert_eq!(
            defs(&f),
            [
                "class Base 1-1",
                "method Base.run 1-1",
                "class Job 2-5",
                "method Job.run 3-3",
                "method Job.#step 4-4",
                "function start 6-6",
            ]
        );
        assert_eq!(refs(&f, RefKind::Implementation), ["Job.Base@2 in Job"]);
        let calls = refs(&f, RefKind::Call);
        assert!(
            calls.contains(&"Job.#step@3 in run".to_owned()),
            "{calls:?}"
        );
        assert!(calls.contains(&"Job@6 in start".to_owned()), "{calls:?}");
    }

    #[test]
    fn go_methods_take_their_receiver_type() {
        let src = "package store\n\nimport \"net/http\"\n\nconst Max = 3\n\ntype Reader interface {\n\tRead(k string) string\n}\n\ntype Disk struct{}\n\nfunc (d *Disk) Read(k string) string { return d.open(k) }\n\nfunc (d Disk) open(k string) string { return http.CanonicalHeaderKey(k) }\n\nfunc New() *Disk { return &Disk{} }\n";
        let f = facts(Language::Go, src);
        assert_eq!(
            defs(&f),
            [
                "constant Max 5-5",
                "interface Reader 7-9",
                "method Reader.Read 8-8",
                "type Disk 11-11",
                "method Disk.Read 13-13",
                "method Disk.open 15-15",
                "function New 17-17",
            ]
        );
        assert_eq!(
            refs(&f, RefKind::Call),
            ["d.open@13 in Read", "http.CanonicalHeaderKey@15 in open"]
        );
        assert_eq!(refs(&f, RefKind::Import), ["http@3 in -"]);
    }

    #[test]
    fn java_classes_interfaces_and_receivers() {
        let src = "package app.store;\nimport app.cfg.Config;\npublic class Disk extends Base implements Reader {\n    private Store store;\n    public String read(String k) { return this.open(k) + store.get(k) + helper(k); }\n    static void gen(Disk d) { var e = new Disk(); e.read(\"x\"); d.read(\"y\"); }\n}\ninterface Reader { String read(String k); }\nenum Mode { A }\n";
        let f = facts(Language::Java, src);
        assert_eq!(
            defs(&f),
            [
                "class Disk 3-7",
                "method Disk.read 5-5",
                "method Disk.gen 6-6",
                "interface Reader 8-8",
                "method Reader.read 8-8",
                "type Mode 9-9",
            ]
        );
        assert_eq!(
            refs(&f, RefKind::Implementation),
            ["Disk.Base@3 in Disk", "Disk.Reader@3 in Disk"]
        );
        assert_eq!(
            refs(&f, RefKind::Call),
            [
                "Disk.open@5 in read",
                "store.get@5 in read",
                "helper@5 in read",
                "Disk@6 in gen",
                "e.read@6 in gen",
                "d.read@6 in gen",
            ]
        );
        assert_eq!(refs(&f, RefKind::Import), ["cfg.Config@2 in -"]);
        let receivers: Vec<Option<Vec<String>>> = f
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Call && r.on_value)
            .map(|r| r.receiver.as_ref().map(|t| t.names.clone()))
            .collect();
        // `this`, a field of `this` named bare, `var e = new Disk()`, a
        // typed parameter.
        let disk = Some(vec!["Disk".to_owned()]);
        assert_eq!(
            receivers,
            [
                disk.clone(),
                Some(vec!["Store".to_owned()]),
                disk.clone(),
                disk
            ]
        );
    }

    #[test]
    fn c_functions_structs_and_macros() {
        let src = "#include <stdio.h>\n#define MAX(a, b) ((a) > (b) ? (a) : (b))\n#define LIMIT 3\ntypedef struct node { int v; } node_t;\nstatic char *name(int x) { return helper(x); }\nint helper(int x);\nint main(void) { struct ops *o; o->read(1); printf(\"%s\", name(1)); return MAX(1, 2); }\n";
        let f = facts(Language::C, src);
        assert_eq!(
            defs(&f),
            [
                "macro MAX 2-2",
                "constant LIMIT 3-3",
                "type node 4-4",
                "type node_t 4-4",
                "function name 5-5",
                "function helper 6-6",
                "function main 7-7",
            ]
        );
        assert_eq!(
            refs(&f, RefKind::Call),
            [
                "helper@5 in name",
                "o.read@7 in main",
                "printf@7 in main",
                "name@7 in main",
                "MAX@7 in main",
            ]
        );
        let main = f.definitions.iter().find(|d| d.name == "main");
        assert_eq!(
            main.and_then(|d| d.params),
            Some(crate::facts::Params {
                receiver: false,
                min: 0,
                max: Some(0)
            }),
            "`(void)` takes nothing"
        );
    }

    #[test]
    fn cpp_methods_in_and_out_of_their_class() {
        let src = "namespace app {\nclass Disk : public Base {\n public:\n  int read(int k) { return this->open(k) + store_->get(k); }\n  int open(int k);\n private:\n  Store* store_;\n};\nint Disk::open(int k) { Cache c; c.put(k); auto d = new Disk(); d->read(1); return util::f(k); }\n}\n";
        let f = facts(Language::Cpp, src);
        assert_eq!(
            defs(&f),
            [
                "module app 1-10",
                // Qualified by its namespace, as a Rust item by its module.
                "class app::Disk 2-8",
                "method Disk::read 4-4",
                "method Disk::open 5-5",
                "method Disk::open 9-9",
            ]
        );
        assert_eq!(refs(&f, RefKind::Implementation), ["Disk.Base@2 in Disk"]);
        assert_eq!(
            refs(&f, RefKind::Call),
            [
                "Disk.open@4 in read",
                "store_.get@4 in read",
                "c.put@9 in open",
                "Disk@9 in open",
                "d.read@9 in open",
                "util.f@9 in open",
            ]
        );
        let typed: Vec<(String, Option<String>)> = f
            .references
            .iter()
            .filter(|r| r.kind == RefKind::Call && r.on_value)
            .map(|r| {
                (
                    r.name.clone(),
                    r.receiver.as_ref().map(|t| t.names.join(",")),
                )
            })
            .collect();
        assert_eq!(
            typed,
            [
                ("open".to_owned(), Some("Disk".to_owned())),
                ("get".to_owned(), Some("Store".to_owned())),
                ("put".to_owned(), Some("Cache".to_owned())),
                ("read".to_owned(), Some("Disk".to_owned())),
            ]
        );
    }

    #[test]
    fn generic_and_path_traits_are_known_by_their_name() {
        let src = "impl From<u8> for Code {}\nimpl crate::store::Store for Disk {}\n";
        let f = facts(Language::Rust, src);
        assert_eq!(
            refs(&f, RefKind::Implementation),
            ["Code.From@1 in -", "Disk.Store@2 in -"]
        );
    }

    #[test]
    fn self_inside_a_closure_or_a_class_field_is_the_enclosing_type() {
        let py = "class Repo:\n    def get(self):\n        def inner():\n            return self.load()\n        return inner()\n";
        let f = facts(Language::Python, py);
        assert!(refs(&f, RefKind::Call).contains(&"Repo.load@4 in inner".to_owned()));
        let ts = "class Form {\n  handler = () => this.validate();\n  validate() {}\n}\n";
        let f = facts(Language::TypeScript, ts);
        assert!(
            refs(&f, RefKind::Call)
                .iter()
                .any(|c| c.starts_with("Form.validate@2")),
            "{:?}",
            refs(&f, RefKind::Call)
        );
    }

    #[test]
    fn a_blanket_implementation_names_no_implementor() {
        let src = "impl<T: Read + ?Sized> Read for &mut T {}\nimpl<T> Read for Box<T> {}\n";
        let f = facts(Language::Rust, src);
        assert_eq!(
            refs(&f, RefKind::Implementation),
            ["Read@1 in -", "Box.Read@2 in -"]
        );
    }

    #[test]
    fn broken_syntax_is_read_as_far_as_it_goes() {
        let f = facts(Language::Rust, "fn ok() {}\nfn broken( {\n");
        assert!(f.has_errors);
        assert!(f.definitions.iter().any(|d| d.name == "ok"));
    }
}
