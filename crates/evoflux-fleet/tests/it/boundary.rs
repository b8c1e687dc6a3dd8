//! Write boundaries: the grammar, normalization, `covers` and `overlaps`,
//! and the boundary of every position a contract runs.

use crate::common;

use common::{V3, V4, V5, doc, valid};
use evoflux_fleet::{
    BoundaryEntryError, BoundaryError, Scope, WRITE_BOUNDARY_MAX_ENTRIES, WriteBoundary,
    describe_write_boundary, fleet_step_boundaries, normalize_write_boundary,
    normalize_write_boundary_entry, write_boundary_covers,
};
use proptest::prelude::*;

fn b(entries: &[&str]) -> WriteBoundary {
    match normalize_write_boundary(entries) {
        Ok(b) => b,
        Err(e) => panic!("{entries:?}: {e}"),
    }
}

#[test]
fn normalization_collapses_duplicates_and_sorts() {
    let w = b(&["src/", "docs//api/", " README.md ", "src/", "a"]);
    assert_eq!(w.entries(), ["README.md", "a", "docs/api/", "src/"]);
    assert_eq!(describe_write_boundary(&w), "README.md, a, docs/api/, src/");
    assert_eq!(
        describe_write_boundary(&WriteBoundary::readonly()),
        "(nothing: readonly)"
    );
    // A file under a declared subtree is not a duplicate: kept as written.
    assert_eq!(b(&["src/", "src/lib.rs"]).entries(), ["src/", "src/lib.rs"]);
}

#[test]
fn bad_entries_are_refused_not_rewritten() {
    fn variant(e: &BoundaryEntryError) -> &'static str {
        match e {
            BoundaryEntryError::Empty => "empty",
            BoundaryEntryError::Backslash(_) => "backslash",
            BoundaryEntryError::Glob(_) => "glob",
            BoundaryEntryError::Absolute(_) => "absolute",
            BoundaryEntryError::DotSegment(_) => "dot",
            BoundaryEntryError::ControlCharacter(_) => "control",
        }
    }
    for (entry, expected) in [
        ("", "empty"),
        ("   ", "empty"),
        ("src\\lib.rs", "backslash"),
        ("src/*.rs", "glob"),
        ("src/{a,b}/", "glob"),
        ("file?.txt", "glob"),
        ("/etc/passwd", "absolute"),
        ("C:/Windows/", "absolute"),
        ("../outside/", "dot"),
        ("src/../../x", "dot"),
        ("./src/", "dot"),
        ("src/\u{0}x", "control"),
    ] {
        match normalize_write_boundary_entry(entry) {
            Err(e) => assert_eq!(variant(&e), expected, "{entry:?}: {e}"),
            Ok(n) => panic!("{entry:?} normalized to {n:?}"),
        }
    }
    assert_eq!(
        normalize_write_boundary(&["src/", "/abs"]),
        Err(BoundaryError::Entry {
            index: 1,
            source: BoundaryEntryError::Absolute("/abs".to_owned())
        })
    );
}

#[test]
fn at_most_32_entries() {
    let entries: Vec<String> = (0..=WRITE_BOUNDARY_MAX_ENTRIES)
        .map(|i| format!("f{i}"))
        .collect();
    assert_eq!(
        normalize_write_boundary(&entries),
        Err(BoundaryError::TooMany(WRITE_BOUNDARY_MAX_ENTRIES + 1))
    );
    assert!(normalize_write_boundary(&entries[..WRITE_BOUNDARY_MAX_ENTRIES]).is_ok());
}

#[test]
fn covers_subtrees_by_prefix_and_files_exactly() {
    let w = b(&["src/", "Cargo.toml", "docs/guide/"]);
    for yes in [
        "src/lib.rs",
        "src/a/b/c.rs",
        "src/",
        "Cargo.toml",
        "docs/guide/intro.md",
        "src//lib.rs",
        "src\\lib.rs",
    ] {
        assert!(write_boundary_covers(&w, yes), "{yes} should be covered");
    }
    for no in [
        "srcx/lib.rs",
        "src",
        "Cargo.toml/x",
        "Cargo.lock",
        "docs/README.md",
        "docs/",
        "cargo.toml",
        "",
    ] {
        assert!(!write_boundary_covers(&w, no), "{no} should not be covered");
    }
}

#[test]
fn dot_segments_and_absolute_candidates_are_never_covered() {
    let w = b(&["src/"]);
    for path in [
        "src/../secrets.env",
        "src/./lib.rs",
        "../src/lib.rs",
        "/src/lib.rs",
        "/repo/src/lib.rs",
        "C:/src/lib.rs",
    ] {
        assert!(!w.covers(path), "{path} must fail closed");
    }
}

#[test]
fn readonly_covers_and_overlaps_nothing() {
    let ro = WriteBoundary::readonly();
    assert!(!ro.covers("anything"));
    assert!(!ro.overlaps(&b(&["src/"])));
    assert!(!b(&["src/"]).overlaps(&ro));
}

#[test]
fn overlaps() {
    assert!(b(&["src/"]).overlaps(&b(&["src/lib.rs"])));
    assert!(b(&["src/lib.rs"]).overlaps(&b(&["src/"])));
    assert!(b(&["a", "src/"]).overlaps(&b(&["a"])));
    assert!(!b(&["src/"]).overlaps(&b(&["srcx/"])));
    assert!(
        !b(&["src"]).overlaps(&b(&["src/"])),
        "a file and a directory of the same name"
    );
}

/// `(position, scope, rendered boundary or "none")` of every position.
fn positions(text: &str) -> Vec<(String, Scope, String)> {
    fleet_step_boundaries(&valid(&doc(text)))
        .into_iter()
        .map(|b| {
            let writes = b.writes.map_or("none".to_owned(), |w| w.to_string());
            (b.position, b.scope, writes)
        })
        .collect()
}

fn row(position: &str, scope: Scope, writes: &str) -> (String, Scope, String) {
    (position.to_owned(), scope, writes.to_owned())
}

#[test]
fn every_position_and_both_loop_halves_have_a_boundary() {
    use Scope::{Readonly, Workspace};
    // Below v4 there is no claim at all.
    assert_eq!(
        positions(V3),
        [
            row("build", Workspace, "none"),
            row("suite.check", Workspace, "none"),
            row("suite.repair", Workspace, "none"),
            row("commit", Workspace, "none"),
        ]
    );
    // From v4 readonly is the empty allowlist, not an absence.
    assert_eq!(
        positions(V4),
        [
            row("build", Workspace, "src/"),
            row("suite.check", Readonly, "(nothing: readonly)"),
            row("suite.repair", Workspace, "src/"),
            row("docs", Workspace, "README.md, docs/"),
        ]
    );
    // A gate, and a loop check that re-runs it, are workspace positions
    // bounded by the gate's file.
    assert_eq!(
        positions(V5),
        [
            row("acceptance", Workspace, "tests/acceptance.mjs"),
            row("architect", Workspace, "src/, tests/"),
            row("repair.check", Workspace, "tests/acceptance.mjs"),
            row("repair.repair", Workspace, "src/"),
        ]
    );
}

#[test]
fn a_boundary_read_back_is_normalized_or_refused() {
    let read: Result<WriteBoundary, _> = yaml_serde::from_str("[b/, ' a', a]");
    assert_eq!(read.ok(), Some(b(&["a", "b/"])));
    let refused: Result<WriteBoundary, _> = yaml_serde::from_str("[src/, /etc/passwd]");
    assert!(refused.is_err(), "an absolute entry cannot be read back");
}

fn entry() -> impl Strategy<Value = String> {
    let segment = prop_oneof!["[a-z]{1,4}", Just("src".to_owned()), Just("a.b".to_owned())];
    (
        prop::collection::vec(segment, 1..4),
        prop::collection::vec(0usize..3, 0..3),
        any::<bool>(),
        " {0,2}",
    )
        .prop_map(|(segs, doubled, trailing, pad)| {
            let mut s = segs.join("/");
            for i in doubled {
                if let Some((at, _)) = s.match_indices('/').nth(i) {
                    s.insert(at, '/');
                }
            }
            if trailing {
                s.push('/');
            }
            format!("{pad}{s}{pad}")
        })
}

proptest! {
    #[test]
    fn normalization_is_idempotent(entries in prop::collection::vec(entry(), 0..WRITE_BOUNDARY_MAX_ENTRIES)) {
        let once = normalize_write_boundary(&entries).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let twice = normalize_write_boundary(once.entries()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&once, &twice);
        let mut sorted = once.entries().to_vec();
        sorted.sort();
        sorted.dedup();
        prop_assert_eq!(sorted.as_slice(), once.entries());
        // Every declared entry is covered by the boundary it normalized into.
        for e in &entries {
            prop_assert!(once.covers(e.trim()), "{} not covered by {}", e, once);
        }
    }
}
