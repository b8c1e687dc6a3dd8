#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Properties of the pre-parse guard (`evoflux_core::nesting`) on
//! generated documents, deep and wide, in every style YAML has: the guard
//! refuses exactly the documents nested past its bound, sees at least the
//! nesting the parser builds even in text written to mislead it, and lets
//! through no alias expansion larger than its budget.
//!
//! CI runs a bounded number of cases with a fixed seed; a long run is
//! `PROPTEST_CASES=20000 cargo test --release -p evoflux-core --test it nesting::`.

use evoflux_core::nesting::{self, Limit, Limits};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(128);
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x0e70_f10c),
        failure_persistence: None,
        ..Config::default()
    }
}

fn limits(max_depth: usize) -> Limits {
    Limits {
        max_depth,
        ..Limits::DEFAULT
    }
}

/// The fewest levels the guard accepts `text` with.
fn guard_depth(text: &str) -> usize {
    let (mut low, mut high) = (0, 256);
    while low < high {
        let mid = (low + high) / 2;
        match nesting::check_yaml_with(text, limits(mid)) {
            Ok(()) => high = mid,
            Err(_) => low = mid + 1,
        }
    }
    low
}

fn value_depth(v: &yaml_serde::Value) -> usize {
    match v {
        yaml_serde::Value::Sequence(items) => 1 + items.iter().map(value_depth).max().unwrap_or(0),
        yaml_serde::Value::Mapping(m) => {
            1 + m
                .iter()
                .map(|(k, v)| value_depth(k).max(value_depth(v)))
                .max()
                .unwrap_or(0)
        }
        yaml_serde::Value::Tagged(t) => value_depth(&t.value),
        _ => 0,
    }
}

fn value_nodes(v: &yaml_serde::Value) -> usize {
    match v {
        yaml_serde::Value::Sequence(items) => 1 + items.iter().map(value_nodes).sum::<usize>(),
        yaml_serde::Value::Mapping(m) => {
            1 + m
                .iter()
                .map(|(k, v)| value_nodes(k) + value_nodes(v))
                .sum::<usize>()
        }
        yaml_serde::Value::Tagged(t) => value_nodes(&t.value),
        _ => 1,
    }
}

// --- Generated documents ------------------------------------------------------

#[derive(Debug, Clone, Copy)]
enum ScalarStyle {
    Plain,
    Single,
    Double,
    Literal,
    Folded,
}

#[derive(Debug, Clone, Copy)]
enum Style {
    /// `[a, b]` / `{k: v}`.
    Flow,
    /// On the lines below its `key:` or `-`, indented.
    Block,
    /// Block, starting on its parent's `- ` line, or (a sequence under a
    /// key) at the key's own column.
    Compact,
}

#[derive(Debug, Clone)]
enum Node {
    Scalar(ScalarStyle, String),
    Seq(Style, Vec<Node>),
    Map(Style, Vec<Node>),
}

impl Node {
    fn depth(&self) -> usize {
        match self {
            Node::Scalar(..) => 0,
            Node::Seq(_, items) | Node::Map(_, items) => {
                1 + items.iter().map(Node::depth).max().unwrap_or(0)
            }
        }
    }
}

/// Text full of what a careless scanner would take for structure.
const TRICKY: &str = "[a-z0-9 \\[\\]{}#'\",:&*!|>%@`\\\\?-]{0,16}";

fn scalar() -> impl Strategy<Value = Node> {
    let word = "[a-z][a-z0-9_.'\"\\[\\]{},#-]{0,8}";
    let flow_word = "[a-z][a-z0-9_.'\"#-]{0,8}";
    prop_oneof![
        prop::collection::vec(word, 1..4)
            .prop_map(|w| Node::Scalar(ScalarStyle::Plain, w.join(" "))),
        // Plain text safe inside brackets too: kept for flow nodes.
        flow_word.prop_map(|w| Node::Scalar(ScalarStyle::Plain, w)),
        TRICKY.prop_map(|t| Node::Scalar(ScalarStyle::Single, t)),
        prop_oneof![
            Just("\n".to_owned()),
            Just("\u{85}[\u{2028}{".to_owned()),
            TRICKY.prop_map(String::from)
        ]
        .prop_map(|t| Node::Scalar(ScalarStyle::Double, t)),
        prop::collection::vec(
            "[a-z\\[\\]{}#'\",:&*|>-][a-z0-9 \\[\\]{}#'\",:&*|>-]{0,12}",
            1..4
        )
        .prop_map(|l| Node::Scalar(ScalarStyle::Literal, l.join("\n"))),
        prop::collection::vec(
            "[a-z\\[\\]{}#'\",:&*|>-][a-z0-9 \\[\\]{}#'\",:&*|>-]{0,12}",
            1..4
        )
        .prop_map(|l| Node::Scalar(ScalarStyle::Folded, l.join("\n"))),
    ]
}

fn style() -> impl Strategy<Value = Style> {
    prop_oneof![Just(Style::Flow), Just(Style::Block), Just(Style::Compact)]
}

/// Small subtrees for width.
fn small_tree() -> impl Strategy<Value = Node> {
    scalar().prop_recursive(3, 16, 4, |inner| {
        (style(), any::<bool>(), prop::collection::vec(inner, 0..4)).prop_map(
            |(style, map, items)| match map {
                true => Node::Map(style, items),
                false => Node::Seq(style, items),
            },
        )
    })
}

/// A spine of up to 90 nested collections, each with siblings: documents
/// both deep and wide.
fn tree() -> impl Strategy<Value = Node> {
    let level = (
        style(),
        any::<bool>(),
        prop::collection::vec(small_tree(), 0..3),
        any::<prop::sample::Index>(),
    );
    (prop::collection::vec(level, 1..90), small_tree()).prop_map(|(spine, leaf)| {
        spine
            .into_iter()
            .fold(leaf, |inner, (style, map, mut siblings, at)| {
                siblings.insert(at.index(siblings.len() + 1), inner);
                match map {
                    true => Node::Map(style, siblings),
                    false => Node::Seq(style, siblings),
                }
            })
    })
}

fn pad(out: &mut String, n: usize) {
    out.extend(std::iter::repeat_n(' ', n));
}

fn inline_scalar(style: ScalarStyle, text: &str, in_flow: bool, out: &mut String) {
    let plain_ok = !in_flow || !text.contains(['[', ']', '{', '}', ',']);
    match style {
        ScalarStyle::Plain if plain_ok => out.push_str(text),
        ScalarStyle::Single if !text.contains('\n') => {
            out.push('\'');
            out.push_str(&text.replace('\'', "''"));
            out.push('\'');
        }
        _ => out.push_str(&serde_json::to_string(text).unwrap()),
    }
}

fn flow(node: &Node, out: &mut String) {
    match node {
        Node::Scalar(style, text) => inline_scalar(*style, text, true, out),
        Node::Seq(_, items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                flow(item, out);
            }
            out.push(']');
        }
        Node::Map(_, items) => {
            out.push('{');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&format!("k{i}: "));
                flow(item, out);
            }
            out.push('}');
        }
    }
}

fn is_block(node: &Node) -> bool {
    match node {
        Node::Scalar(..) => false,
        Node::Seq(style, items) | Node::Map(style, items) => {
            !items.is_empty() && !matches!(style, Style::Flow)
        }
    }
}

/// Writes what follows `key:` (`under_key`) or `-` at indentation `indent`.
fn block_value(node: &Node, indent: usize, under_key: bool, out: &mut String) {
    match node {
        Node::Scalar(style @ (ScalarStyle::Literal | ScalarStyle::Folded), text) => {
            out.push_str(if matches!(style, ScalarStyle::Literal) {
                " |\n"
            } else {
                " >\n"
            });
            for line in text.lines() {
                pad(out, indent + 2);
                out.push_str(line);
                out.push('\n');
            }
        }
        Node::Scalar(style, text) => {
            out.push(' ');
            inline_scalar(*style, text, false, out);
            out.push('\n');
        }
        _ if !is_block(node) => {
            out.push(' ');
            flow(node, out);
            out.push('\n');
        }
        Node::Seq(Style::Compact, _) if under_key => {
            out.push('\n');
            block(node, indent, out);
        }
        Node::Seq(Style::Compact, _) | Node::Map(Style::Compact, _) if !under_key => {
            let mut inner = String::new();
            block(node, indent + 2, &mut inner);
            out.push(' ');
            out.push_str(&inner[indent + 2..]);
        }
        _ => {
            out.push('\n');
            block(node, indent + 2, out);
        }
    }
}

fn block(node: &Node, indent: usize, out: &mut String) {
    match node {
        Node::Seq(_, items) => {
            for item in items {
                pad(out, indent);
                out.push('-');
                block_value(item, indent, false, out);
            }
        }
        Node::Map(_, items) => {
            for (i, item) in items.iter().enumerate() {
                pad(out, indent);
                out.push_str(&format!("k{i}:"));
                block_value(item, indent, true, out);
            }
        }
        Node::Scalar(..) => block_value(node, indent, false, out),
    }
}

fn render(root: &Node) -> String {
    let mut out = String::new();
    if is_block(root) {
        block(root, 0, &mut out);
    } else {
        flow(root, &mut out);
        out.push('\n');
    }
    out
}

/// Lines of YAML-looking fragments, most of them broken in some way.
fn yamlish_text() -> impl Strategy<Value = String> {
    let fragment = prop_oneof![
        Just("k: "),
        Just("key:"),
        Just("- "),
        Just("? "),
        Just(": "),
        Just("["),
        Just("]"),
        Just("{"),
        Just("}"),
        Just(", "),
        Just("\""),
        Just("'"),
        Just("# "),
        Just("|"),
        Just(">-"),
        Just("&a "),
        Just("!t "),
        Just("\\"),
        Just("\t"),
        Just("x"),
        Just("don't "),
        Just(" "),
        Just("\u{85}"),
        Just("\r"),
        Just("a: "),
        Just("[a, "),
        Just("? ["),
        Just("]: "),
        Just("}: "),
    ];
    let line = (0usize..6, prop::collection::vec(fragment, 0..8))
        .prop_map(|(indent, parts)| format!("{}{}", " ".repeat(indent), parts.concat()));
    prop::collection::vec(line, 0..10).prop_map(|lines| lines.join("\n"))
}

/// A generated document with a few fragments inserted or characters
/// removed: near-valid text, deep and odd.
fn mutated_document() -> impl Strategy<Value = String> {
    const FRAGMENTS: [&str; 20] = [
        "k: ", "- ", "? ", ": ", "[", "]", "{", "}", ", ", "\"", "'", "# ", "|", "&a ", "!t ",
        "\n", "\n  ", "\n- ", "\u{85}", "\t",
    ];
    let edit = (any::<prop::sample::Index>(), 0..=FRAGMENTS.len());
    (tree(), prop::collection::vec(edit, 1..4)).prop_map(|(root, edits)| {
        let mut text = render(&root);
        for (at, fragment) in edits {
            let mut i = at.index(text.len() + 1);
            while !text.is_char_boundary(i) {
                i -= 1;
            }
            match FRAGMENTS.get(fragment) {
                Some(f) => text.insert_str(i, f),
                None if i < text.len() => {
                    text.remove(i);
                }
                None => {}
            }
        }
        text
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<i32>().prop_map(serde_json::Value::from),
        TRICKY.prop_map(serde_json::Value::from),
    ];
    let level = (any::<bool>(), prop::collection::vec(leaf.clone(), 0..3));
    (prop::collection::vec(level, 0..90), leaf).prop_map(|(spine, leaf)| {
        spine
            .into_iter()
            .fold(leaf, |inner, (object, mut siblings)| {
                siblings.push(inner);
                if object {
                    serde_json::Value::Object(
                        siblings
                            .into_iter()
                            .enumerate()
                            .map(|(i, v)| (format!("[k{i}]"), v))
                            .collect(),
                    )
                } else {
                    serde_json::Value::Array(siblings)
                }
            })
    })
}

fn json_depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(items) => 1 + items.iter().map(json_depth).max().unwrap_or(0),
        serde_json::Value::Object(m) => 1 + m.values().map(json_depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// `base` strings anchored, then `levels` anchors each repeating the
/// previous one `fanout` times, in flow or block style.
fn laughs(base: usize, fanout: usize, levels: usize, block: bool) -> String {
    let mut text = String::new();
    for level in 0..=levels {
        let items: Vec<String> = match level {
            0 => vec!["lol".to_owned(); base],
            _ => vec![format!("*l{}", level - 1); fanout],
        };
        if block && !items.is_empty() {
            text.push_str(&format!("l{level}: &l{level}\n"));
            for item in items {
                text.push_str(&format!("  - {item}\n"));
            }
            text.push_str("# between\n\n");
        } else {
            text.push_str(&format!("l{level}: &l{level} [{}]\n", items.join(", ")));
        }
    }
    text
}

proptest! {
    #![proptest_config(config())]

    /// Deep and wide documents in every style: refused exactly when nested
    /// past the bound, with the depth code; and the parser reads the same
    /// depth the generator built, so the verdict is about real structure.
    #[test]
    fn verdict_follows_the_real_depth(root in tree(), max_depth in 0usize..100) {
        let text = render(&root);
        let depth = root.depth();
        let verdict = nesting::check_yaml_with(&text, limits(max_depth));
        prop_assert_eq!(verdict.is_ok(), depth <= max_depth, "depth {}:\n{}", depth, text);
        if let Err(e) = verdict {
            prop_assert_eq!(e.code(), "yaml/too-deep");
            prop_assert!(e.line >= 1 && e.line as usize <= text.lines().count().max(1));
        }
        let parsed: yaml_serde::Value = yaml_serde::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}:\n{text}")))?;
        prop_assert_eq!(value_depth(&parsed), depth, "{}", text);
    }

    /// Text built to mislead (quotes in plain scalars, odd line breaks,
    /// tabs, stray indicators): whenever the parser accepts it, the guard
    /// saw exactly the nesting the parser built — never less.
    #[test]
    fn guard_sees_the_nesting_the_parser_builds(text in yamlish_text()) {
        if let Ok(value) = yaml_serde::from_str::<yaml_serde::Value>(&text) {
            prop_assert_eq!(guard_depth(&text), value_depth(&value), "{:?}", text);
        }
    }

    /// The same for generated documents with a few edits: deep text, near
    /// the valid, where a scanner that only mostly follows the parser
    /// would drift.
    #[test]
    fn guard_sees_the_nesting_of_edited_documents(text in mutated_document()) {
        if let Ok(value) = yaml_serde::from_str::<yaml_serde::Value>(&text) {
            prop_assert_eq!(guard_depth(&text), value_depth(&value), "{:?}", text);
        }
    }

    /// JSON, pretty or compact, with brackets and quotes inside strings.
    #[test]
    fn json_verdict_follows_the_real_depth(
        value in json_value(),
        pretty in any::<bool>(),
        max_depth in 0usize..100,
    ) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        let verdict = nesting::check_json_with(&text, limits(max_depth));
        prop_assert_eq!(verdict.is_ok(), json_depth(&value) <= max_depth);
        if let Err(e) = verdict {
            prop_assert_eq!(e.code(), "json/too-deep");
        }
    }

    /// Whatever the guard lets through expands to no more nodes than the
    /// text has bytes plus the alias budget; what it refuses, it refuses
    /// with the alias code.
    #[test]
    fn accepted_aliases_stay_within_the_budget(
        base in 1usize..40,
        fanout in 0usize..8,
        levels in 0usize..6,
        block in any::<bool>(),
        budget in 64u64..4096,
    ) {
        let text = laughs(base, fanout, levels, block);
        let bounds = Limits { max_alias_replay: budget, ..Limits::DEFAULT };
        match nesting::check_yaml_with(&text, bounds) {
            Ok(()) => {
                let value: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
                let nodes = value_nodes(&value) as u64;
                prop_assert!(nodes <= text.len() as u64 + budget, "{} nodes:\n{}", nodes, text);
            }
            Err(e) => {
                prop_assert_eq!(e.limit, Limit::AliasReplay);
                prop_assert_eq!(e.code(), "yaml/too-many-aliases");
            }
        }
    }
}
