#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The workspace's crates keep to the layering `docs/ARCHITECTURE.md`
//! draws: each crate sits on a level and depends only on crates of lower
//! levels, and every crate of the workspace is placed (a new crate is put
//! somewhere on purpose, and the document names it). Read from the
//! manifests themselves, so the map cannot drift from the code.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The levels, lowest first. A crate may depend on crates of a lower level
/// only; crates of one level never depend on each other.
const LEVELS: &[(&str, u8)] = &[
    // The shared vocabulary.
    ("evoflux-core", 0),
    // What every front end and the store share: events, messages, usage.
    ("evoflux-protocol", 1),
    // The source graph: roots, slots, the composer.
    ("evoflux-graph", 2),
    // The domains, each on the graph or on the protocol.
    ("evoflux-skills", 3),
    ("evoflux-agents", 3),
    ("evoflux-fleet", 3),
    ("evoflux-code", 3),
    ("evoflux-model", 3),
    ("evoflux-store", 3),
    ("evoflux-viewer", 3),
    // Domains that build on other domains.
    ("evoflux-plugins", 4),
    ("evoflux-tools", 4),
    ("evoflux-mcp", 5),
    // The session engine.
    ("evoflux-harness", 6),
    // The application services above the engine.
    ("evoflux-app", 7),
    // Front ends over the application and the engine.
    ("evoflux-acp", 8),
    ("evoflux-server", 8),
    ("evoflux-tui", 8),
    // The binary, which hosts every front end.
    ("evoflux-cli", 9),
    // Drives built binaries; links no evoflux crate.
    ("evoflux-bench", 10),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every workspace crate with its `evoflux-*` dependencies (normal and
/// build dependencies: dev-dependencies may reach further for tests).
fn crates() -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(workspace().join("crates")).unwrap() {
        let manifest = entry.unwrap().path().join("Cargo.toml");
        let Ok(text) = std::fs::read_to_string(&manifest) else {
            continue;
        };
        let doc: toml::Table =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let name = doc["package"]["name"].as_str().unwrap().to_owned();
        let mut deps: Vec<String> = ["dependencies", "build-dependencies"]
            .iter()
            .filter_map(|section| doc.get(*section).and_then(|d| d.as_table()))
            .flat_map(|t| t.keys().cloned())
            .filter(|d| d.starts_with("evoflux-"))
            .collect();
        deps.sort();
        deps.dedup();
        out.insert(name, deps);
    }
    out
}

fn level(name: &str) -> Option<u8> {
    LEVELS.iter().find(|(n, _)| *n == name).map(|(_, l)| *l)
}

#[test]
fn every_crate_is_placed_and_depends_only_downward() {
    let crates = crates();
    assert!(crates.len() >= 17, "found only {crates:?}");
    let mut problems = Vec::new();
    for (name, deps) in &crates {
        let Some(own) = level(name) else {
            problems.push(format!(
                "{name} has no level: place it in LEVELS here and in docs/ARCHITECTURE.md"
            ));
            continue;
        };
        for dep in deps {
            match level(dep) {
                Some(l) if l < own => {}
                Some(l) => problems.push(format!(
                    "{name} (level {own}) depends on {dep} (level {l}): dependencies point down"
                )),
                None => problems.push(format!("{name} depends on unplaced {dep}")),
            }
        }
    }
    for (name, _) in LEVELS {
        if !crates.contains_key(*name) {
            problems.push(format!("{name} is placed but is not a workspace crate"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_architecture_document_names_every_crate() {
    let doc = std::fs::read_to_string(workspace().join("docs/ARCHITECTURE.md")).unwrap();
    let crates = crates();
    let missing: Vec<&str> = crates
        .keys()
        .map(String::as_str)
        .filter(|name| !doc.contains(&format!("`{name}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md does not name {missing:?}"
    );
}
