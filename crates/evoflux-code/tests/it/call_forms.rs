//! Every form a Rust call takes in a fixture crate (`tests/fixtures/calls`)
//! is found: inside `assert!`, `assert_eq!`, `format!`, `vec!`,
//! `proptest!` and `tokio::select!`, through a path, on `self`, on a
//! field of `self`, on a typed parameter and on a value built by its
//! type; and the real callers of a method rank before guesses, each
//! saying how certain it is.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use evoflux_code::{Answer, Basis, Certainty, CodeContext, Relation};
use serde_json::json;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/calls")
}

/// Where the fixture marks a call with `// call: <form>`.
fn marked(form: &str) -> (String, u32) {
    let marker = format!("// call: {form}");
    for file in ["src/lib.rs", "src/store.rs", "src/guesses.rs"] {
        let text = std::fs::read_to_string(fixture().join(file)).unwrap();
        let hits: Vec<u32> = text
            .lines()
            .enumerate()
            .filter(|(_, l)| {
                l.split(" // call: ")
                    .nth(1)
                    .is_some_and(|m| m.split(" / ").any(|f| marker.ends_with(f)))
            })
            .map(|(i, _)| u32::try_from(i + 1).unwrap())
            .collect();
        if let [line] = hits.as_slice() {
            return (file.to_owned(), *line);
        }
        assert!(hits.is_empty(), "{form} is marked twice in {file}");
    }
    panic!("no `{marker}` in the fixture")
}

fn callers(symbol: &str, limit: u64) -> Answer {
    let mut cc = CodeContext::new(&[fixture()], None);
    let args = json!({"operation": "callers", "symbol": symbol, "limit": limit});
    cc.answer(&args)
        .unwrap_or_else(|e| panic!("{args}: {e} [{}]", e.code()))
}

/// One call site listed: (path, line), its certainty and basis.
type Site = ((String, u32), Option<Certainty>, Option<Basis>);

/// Each call site listed, in the answer's order.
fn sites(a: &Answer) -> Vec<Site> {
    a.relationships
        .iter()
        .filter(|r| r.relation == Relation::Caller)
        .flat_map(|r| {
            let path = r.entry.as_ref().map(|e| e.path.clone()).unwrap_or_default();
            r.lines
                .iter()
                .map(move |&l| ((path.clone(), l), r.certainty, r.basis))
        })
        .collect()
}

#[test]
fn calls_inside_macros_and_through_paths_are_found() {
    let a = callers("checksum", 50);
    let found = sites(&a);
    for form in [
        "vec",
        "format",
        "path",
        "select",
        "assert",
        "assert_eq",
        "proptest",
    ] {
        let at = marked(form);
        let hit = found.iter().find(|(s, _, _)| *s == at);
        assert!(
            hit.is_some(),
            "the call in {form} at {at:?} is not among the callers:\n{}",
            a.render()
        );
        // A bare call of a name the file imports from its module, or a
        // path to it: certain either way.
        assert_eq!(hit.and_then(|h| h.1), Some(Certainty::Exact), "{form}");
    }
    assert_eq!(
        found.len(),
        7,
        "no call is listed that is not one:\n{}",
        a.render()
    );
    // The function `proptest!` defines is the caller, by name.
    let names: Vec<&str> = a.relationships.iter().map(|r| r.name.as_str()).collect();
    assert!(names.contains(&"tests::any_bytes"), "{names:?}");
}

#[test]
fn a_loop_variable_hides_the_typed_binding_of_its_name() {
    let a = callers("Store::len", 50);
    let found = sites(&a);
    // `s.len()` on the loop's `&str` is not a call of `Store::len`, and
    // above all not a certain one.
    assert!(
        found.iter().all(|(_, c, _)| *c == Some(Certainty::Guess)),
        "{}",
        a.render()
    );
}

#[test]
fn method_calls_say_how_certain_they_are_and_real_callers_rank_first() {
    let a = callers("Store::get", 50);
    let found = sites(&a);
    let expect = [
        ("self-method", Certainty::Exact, Basis::DeclaredType),
        ("self-field", Certainty::Exact, Basis::DeclaredType),
        ("typed-param", Certainty::Exact, Basis::DeclaredType),
        ("built-local", Certainty::Likely, Basis::ConstructedType),
        ("returned", Certainty::Likely, Basis::ReturnType),
        ("typed-again", Certainty::Exact, Basis::DeclaredType),
    ];
    for (form, certainty, basis) in expect {
        let at = marked(form);
        let hit = found.iter().find(|(s, _, _)| *s == at);
        assert_eq!(
            hit.map(|h| (h.1, h.2)),
            Some((Some(certainty), Some(basis))),
            "{form} at {at:?}:\n{}",
            a.render()
        );
    }
    // The two calls on values of unknown type are guesses, listed after
    // every real caller; `HashMap::get` on a declared map is no caller.
    let guesses: Vec<&(String, u32)> = found
        .iter()
        .filter(|(_, c, _)| *c == Some(Certainty::Guess))
        .map(|(s, _, _)| s)
        .collect();
    assert_eq!(guesses.len(), 2, "{}", a.render());
    assert_eq!(found.len(), 8, "{}", a.render());
    let first_guess = found
        .iter()
        .position(|(_, c, _)| *c == Some(Certainty::Guess));
    assert_eq!(first_guess, Some(6), "guesses come last:\n{}", a.render());

    // With a limit, what is cut is guesses, never a real caller: guesses.rs
    // sorts first by path, yet the six real callers fill the limit.
    let a = callers("Store::get", 6);
    let shown: Vec<Option<Certainty>> = sites(&a).iter().map(|s| s.1).collect();
    assert!(
        shown.iter().all(|c| *c != Some(Certainty::Guess)),
        "{}",
        a.render()
    );
    let text = a.render();
    assert!(
        text.contains("— exact: the receiver is declared of its type"),
        "the answer shows the certainty:\n{text}"
    );
    assert!(
        a.limitations
            .iter()
            // Six real callers and `lookup`, whose two calls are guesses.
            .any(|l| l.starts_with("1 of the 7 relationships found are guesses")),
        "{:?}",
        a.limitations
    );
}
