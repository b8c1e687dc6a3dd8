//! The 92 real Agent Plugins 1.0 manifests of github/awesome-copilot.
//!
//! Expected from the spec: every manifest targets the canonical 1.0.0
//! `$schema`, uses only schema fields with the right types, and keys its
//! `extensions` by reverse-DNS namespace (`com.github.awesome-copilot`,
//! `com.github.copilot`), so every package is valid with no diagnostic at
//! all. Their folders hold only the manifest (skills are referenced through
//! the vendor extension, which carries no portable meaning), so each has no
//! skills and no MCP.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use evoflux_plugins::{McpStatus, StrictSkillValidator, inspect};

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus/skills/apc/plugins"
    ));
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("corpus not found at {}; skipping", dir.display());
        None
    }
}

#[test]
fn all_real_manifests_are_valid() {
    let Some(dir) = corpus() else {
        return;
    };
    let mut roots: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("plugin.json").is_file())
        .collect();
    roots.sort();
    assert_eq!(roots.len(), 92, "the corpus holds 92 manifests");
    let mut namespaces = std::collections::BTreeSet::new();
    for root in &roots {
        let i = inspect(root, &StrictSkillValidator);
        assert!(i.valid, "{}: {:?}", root.display(), i.diagnostics);
        assert!(
            i.diagnostics.is_empty(),
            "{}: {:?}",
            root.display(),
            i.diagnostics
        );
        let m = i.manifest.as_ref().unwrap();
        assert_eq!(
            Some(m.name.as_str()),
            root.file_name().and_then(|n| n.to_str()),
            "each manifest is named after its folder"
        );
        assert!(i.skills.is_empty());
        assert_eq!(i.mcp_status, McpStatus::Absent);
        assert!(i.content_sha256.is_some());
        namespaces.extend(i.extension_namespaces.iter().cloned());
    }
    assert_eq!(
        namespaces.into_iter().collect::<Vec<_>>(),
        ["com.github.awesome-copilot", "com.github.copilot"]
    );
}
