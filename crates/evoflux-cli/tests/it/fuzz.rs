#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Property-based fuzzing, on stable, of every parser a user's (or a
//! stranger's) file reaches: front matter and YAML, config, plugin
//! manifests and `mcp.json`, connection files, worker recipes, the fleet
//! command registry and plugin archives. Each property is the same: the
//! parser never panics, and whatever it refuses it refuses with a coded
//! diagnostic; archive extraction never writes outside its destination.
//!
//! CI runs a bounded number of cases with a fixed seed, so a failure is
//! reproducible; a long run is the same tests with more cases:
//! `PROPTEST_CASES=20000 cargo test --release -p evoflux-cli --test it fuzz::`.

use std::io::Write;
use std::path::Path;

use evoflux_core::Diagnostics;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

/// The fixed seed and bounded case count CI runs with; `PROPTEST_CASES`
/// raises the count for a long run.
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

/// Every diagnostic carries a stable `area/kebab-name` code.
fn coded(diags: &Diagnostics) -> bool {
    diags.iter().all(|d| well_formed_code(&d.code))
}

fn well_formed_code(code: &str) -> bool {
    evoflux_core::diagnostic::is_valid_code(code)
}

/// Lines that look like YAML, TOML or front matter often enough to get
/// past the first check: keys, nesting, lists, quotes, anchors, tabs.
fn structured_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[a-z_]{1,12}: [ -~]{0,24}",
        "  [a-z_]{1,8}: \\[[a-z, \"']{0,16}\\]",
        "- [ -~]{0,16}",
        "\\[[a-z.]{1,16}\\]",
        "[a-z_]{1,10} = [0-9\"a-z.:/ ]{0,20}",
        "(---|\\.\\.\\.|&a|\\*a|<<: \\*a|\\t|#.*|\"|'|\\{|\\}|:)",
        any::<String>(),
    ];
    prop::collection::vec(line, 0..16).prop_map(|lines| lines.join("\n"))
}

/// A document with a front matter block, most of the time well delimited.
fn front_matter_document() -> impl Strategy<Value = String> {
    (structured_text(), any::<bool>(), structured_text()).prop_map(|(head, closed, body)| {
        match closed {
            true => format!("---\n{head}\n---\n{body}"),
            false => format!("---\n{head}\n{body}"),
        }
    })
}

/// JSON values shaped like manifests and server maps: objects of objects
/// with strings, numbers, booleans, arrays and nulls in any place.
fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[ -~]{0,20}".prop_map(serde_json::Value::from),
        prop_oneof![
            Just("stdio"),
            Just("http"),
            Just("streamable-http"),
            Just("sse"),
            Just("1.0.0"),
            Just("../x"),
            Just("/abs"),
            Just("${VAR}"),
            Just("${VAR:-d}")
        ]
        .prop_map(serde_json::Value::from),
    ];
    let key = prop_oneof![
        Just("name".to_owned()),
        Just("version".to_owned()),
        Just("mcpServers".to_owned()),
        Just("command".to_owned()),
        Just("args".to_owned()),
        Just("env".to_owned()),
        Just("url".to_owned()),
        Just("type".to_owned()),
        Just("headers".to_owned()),
        Just("cwd".to_owned()),
        Just("skills".to_owned()),
        Just("specVersion".to_owned()),
        "[a-zA-Z_]{1,10}",
    ];
    leaf.prop_recursive(4, 48, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::from),
            prop::collection::btree_map(key.clone(), inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A JSON document, or a mangled one.
fn json_text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => json_value().prop_map(|v| v.to_string()),
        1 => (json_value(), any::<prop::sample::Index>()).prop_map(|(v, cut)| {
            let text = v.to_string();
            let at = cut.index(text.len() + 1);
            text.chars().take(at).collect()
        }),
        1 => any::<String>(),
    ]
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn front_matter_parsing_never_panics(text in front_matter_document()) {
        if let Err(d) = evoflux_core::frontmatter::parse_file(Path::new("/x/SKILL.md"), &text) {
            prop_assert!(well_formed_code(&d.code), "{}", d.code);
            prop_assert!(d.locator.file.is_some());
        }
    }

    #[test]
    fn config_parsing_never_panics(text in structured_text()) {
        let mut diags = Diagnostics::new();
        let loaded = evoflux_core::config::parse(Path::new("/x/config.toml"), &text, &mut diags);
        prop_assert!(loaded.is_some() || diags.has_errors());
        prop_assert!(coded(&diags));
    }

    #[test]
    fn plugin_manifests_never_panic(text in json_text()) {
        let out = evoflux_plugins::validate_manifest(&text, Path::new("/p/plugin.json"));
        prop_assert!(out.manifest.is_some() || !out.diagnostics.is_empty());
        for d in &out.diagnostics {
            prop_assert!(well_formed_code(&d.diagnostic.code), "{}", d.diagnostic.code);
        }
    }

    #[test]
    fn plugin_mcp_files_never_panic(text in json_text()) {
        let out = evoflux_plugins::validate_mcp(
            &text,
            Path::new("/p/.mcp.json"),
            evoflux_plugins::SpecVersion::V1_0_0,
            Path::new("/p"),
        );
        for d in &out.diagnostics {
            prop_assert!(well_formed_code(&d.diagnostic.code), "{}", d.diagnostic.code);
        }
    }

    #[test]
    fn connection_files_never_panic(text in json_text()) {
        let path = Path::new("/u/mcp.json");
        match evoflux_graph::connection::entries(path, &text) {
            Ok(entries) => {
                let mut diags = Diagnostics::new();
                for (name, value) in entries {
                    let def = evoflux_graph::connection::parse(path, &name, value, &mut diags);
                    prop_assert!(def.is_some() || diags.has_errors());
                }
                prop_assert!(coded(&diags));
            }
            Err(d) => prop_assert!(well_formed_code(&d.code)),
        }
    }

    #[test]
    fn worker_recipes_never_panic(text in front_matter_document()) {
        let mut diags = Diagnostics::new();
        let recipe = evoflux_agents::worker::recipe::parse_recipe(
            "fuzz",
            evoflux_agents::worker::recipe::RecipeSource::User,
            Path::new("/u/workers/fuzz.md"),
            &text,
            &mut diags,
        );
        prop_assert!(recipe.is_some() || diags.has_errors());
        prop_assert!(coded(&diags));
    }

    #[test]
    fn fleet_command_registries_never_panic(text in structured_text()) {
        if let Err(e) = evoflux_fleet::CommandRegistry::parse(Path::new("/r/fleets/commands.yaml"), &text) {
            prop_assert!(well_formed_code(e.code()), "{}", e.code());
        }
    }

    #[test]
    fn archive_extraction_never_writes_outside_its_destination(
        entries in prop::collection::vec(
            (
                prop_oneof![
                    "[a-z]{1,8}(/[a-z]{1,8}){0,3}",
                    "(\\.\\./|/|\\\\|C:|\\./|//)[a-z./\\\\]{0,16}",
                    "[a-z]{1,4}/(\\.\\.|\\.)/[a-z]{1,4}",
                    any::<String>(),
                ],
                prop::collection::vec(any::<u8>(), 0..256),
                any::<bool>(),
            ),
            0..8,
        ),
        corrupt in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let archive = tmp.path().join("p.zip");
        let mut bytes = Vec::new();
        {
            let mut zip = zip::ZipWriter::new(std::io::Cursor::new(&mut bytes));
            for (name, content, dir) in &entries {
                let options = zip::write::SimpleFileOptions::default();
                let added = match dir {
                    true => zip.add_directory(name.as_str(), options),
                    false => zip.start_file(name.as_str(), options),
                };
                if added.is_ok() && !dir {
                    let _ = zip.write_all(content);
                }
            }
            let _ = zip.finish();
        }
        for (at, byte) in &corrupt {
            if !bytes.is_empty() {
                let i = at.index(bytes.len());
                bytes[i] = *byte;
            }
        }
        std::fs::write(&archive, &bytes).unwrap();
        let dest = tmp.path().join("dest");
        let result = evoflux_plugins::extract_archive(
            &archive,
            &dest,
            &evoflux_plugins::ExtractLimits::DEFAULT,
        );
        // Nothing but the archive and (when it succeeded) the destination.
        let mut names: Vec<String> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        match result {
            Ok(_) => prop_assert_eq!(names, ["dest", "p.zip"]),
            Err(e) => {
                prop_assert!(well_formed_code(e.code()), "{}", e.code());
                prop_assert_eq!(names, ["p.zip"], "a refused archive leaves nothing");
            }
        }
    }
}
