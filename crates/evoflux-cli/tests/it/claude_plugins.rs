//! A Claude Code plugin (written here as Claude Code's plugin reference
//! describes one) is inspected, imported and installed as an Agent
//! Plugins package: its skills and portable MCP servers are carried over,
//! `${CLAUDE_PLUGIN_ROOT}` becomes the package's own placeholder, what has
//! no portable form is named, and nothing of it runs.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use common::{Sandbox, json, write};
use serde_json::{Value, json};

/// A Claude Code plugin folder; its server script leaves a marker when it
/// runs, which no step here may do.
fn claude_plugin(s: &Sandbox, name: &str) -> PathBuf {
    let root = s.tmp.path().join("claude").join(name);
    write(
        &root.join(".claude-plugin/plugin.json"),
        &json!({
            "name": name,
            "version": "1.2.0",
            "description": "Review helpers",
            "author": {"name": "Ada", "email": "ada@example.com"},
            "keywords": ["review"],
            "outputStyles": "./styles/"
        })
        .to_string(),
    );
    write(
        &root.join("commands/review.md"),
        "---\ndescription: Review the diff\n---\nReview $ARGUMENTS\n",
    );
    write(
        &root.join("agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews\n---\nReview.\n",
    );
    write(
        &root.join("hooks/hooks.json"),
        r#"{"hooks": {"PostToolUse": []}}"#,
    );
    write(
        &root.join("skills/code-review/SKILL.md"),
        "---\nname: code-review\ndescription: Reviews a change against the checklist.\n---\n# Review\nRead checklist.md.\n",
    );
    write(&root.join("skills/code-review/checklist.md"), "- tests\n");
    write(&root.join("README.md"), "# Review kit\n");
    let marker = s.tmp.path().join("server-ran");
    write(
        &root.join("bin/server"),
        &format!("#!/bin/sh\ntouch '{}'\n", marker.display()),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            root.join("bin/server"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
    }
    // `.mcp.json` in Claude Code's bare form.
    write(
        &root.join(".mcp.json"),
        &json!({
            "local": {
                "command": "${CLAUDE_PLUGIN_ROOT}/bin/server",
                "args": ["--data", "${CLAUDE_PLUGIN_DATA}"],
                "env": {"API_KEY": "${REVIEW_API_KEY}"}
            },
            "docs": {
                "type": "http",
                "url": "https://docs.example.com/mcp",
                "headers": {"X-Key": "${DOCS_KEY:-}"}
            },
            "github": {
                "type": "http",
                "url": "https://api.githubcopilot.com/mcp/",
                "headers": {"Authorization": "Bearer ${GITHUB_PERSONAL_ACCESS_TOKEN}"}
            }
        })
        .to_string(),
    );
    root
}

/// Where each left-out part points: its file name or field.
fn left_out(report: &Value) -> Vec<String> {
    report["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            assert_eq!(d["code"], "plugin/import-left-out");
            let loc = &d["locator"];
            loc["field"].as_str().map_or_else(
                || {
                    Path::new(loc["file"].as_str().unwrap())
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                },
                str::to_owned,
            )
        })
        .collect()
}

#[test]
fn inspect_reads_a_claude_code_plugin_as_the_package_its_import_makes() {
    let s = Sandbox::new();
    let root = claude_plugin(&s, "review-kit");
    let i = s.json(&["plugin", "inspect", root.to_str().unwrap(), "--json"]);
    assert_eq!(i["valid"], true, "{i}");
    assert_eq!(i["manifest"]["name"], "review-kit");
    assert_eq!(i["manifest"]["version"], "1.2.0");
    let report = &i["imported"];
    assert_eq!(report["skills"], json!(["code-review"]));
    let mut servers: Vec<&str> = report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    servers.sort_unstable();
    assert_eq!(servers, ["docs", "local"]);
    assert_eq!(report["credentials"], json!(["API_KEY"]));
    let mut parts = left_out(report);
    parts.sort();
    assert_eq!(
        parts,
        [
            "agents",
            "commands",
            "hooks",
            "mcpServers.docs",
            "mcpServers.github",
            "outputStyles"
        ]
    );
    let local = i["mcp_servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "local")
        .unwrap();
    assert_eq!(local["server"]["command"]["raw"], "./bin/server", "{local}");
    assert!(
        !s.tmp.path().join("server-ran").exists(),
        "inspection ran nothing"
    );
    // The human form names what was left out.
    let out = s.run(&["plugin", "inspect", root.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Claude Code plugin"), "{text}");
    assert!(text.contains("GITHUB_PERSONAL_ACCESS_TOKEN"), "{text}");
}

#[test]
fn import_writes_a_portable_package_that_inspects_valid() {
    let s = Sandbox::new();
    let root = claude_plugin(&s, "review-kit");
    let dest = s.tmp.path().join("review-kit-package");
    let r = s.json(&[
        "plugin",
        "import",
        root.to_str().unwrap(),
        dest.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(r["inspection"]["valid"], true, "{r}");
    for kept in [
        "plugin.json",
        "mcp.json",
        "skills/code-review/SKILL.md",
        "skills/code-review/checklist.md",
        "bin/server",
        "README.md",
    ] {
        assert!(dest.join(kept).is_file(), "{kept} missing");
    }
    for gone in [".claude-plugin", "commands", "agents", "hooks", ".mcp.json"] {
        assert!(!dest.join(gone).exists(), "{gone} was carried over");
    }
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dest.join("plugin.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["$schema"],
        "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json"
    );
    assert_eq!(
        manifest["extensions"]["org.evoelsewhere.evoflux.credentials"]["fields"][0]["env"],
        "API_KEY"
    );
    let mcp: Value =
        serde_json::from_str(&std::fs::read_to_string(dest.join("mcp.json")).unwrap()).unwrap();
    assert_eq!(
        mcp["mcpServers"]["local"],
        json!({"type": "stdio", "command": "./bin/server", "args": ["--data", "${PLUGIN_DATA}"]})
    );
    assert_eq!(
        mcp["mcpServers"]["docs"],
        json!({"type": "streamable-http", "url": "https://docs.example.com/mcp"})
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dest.join("bin/server"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "the server stays executable");
    }
    // The written package is an ordinary one now.
    let again = s.json(&["plugin", "inspect", dest.to_str().unwrap(), "--json"]);
    assert_eq!(again["valid"], true);
    assert!(again.get("imported").is_none());
    // Importing over an existing folder is refused, naming it.
    let out = s.run(&[
        "plugin",
        "import",
        root.to_str().unwrap(),
        dest.to_str().unwrap(),
        "--json",
    ]);
    assert!(!out.status.success());
    assert!(
        common::stderr_codes(&out).contains(&"plugin/import-destination-exists".to_owned()),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!s.tmp.path().join("server-ran").exists());
}

#[test]
fn install_takes_a_claude_code_plugin_and_its_skill_loads() {
    let s = Sandbox::new();
    let root = claude_plugin(&s, "review-kit");
    let n = s.json(&[
        "plugin",
        "install",
        root.to_str().unwrap(),
        "--enabled",
        "--json",
    ]);
    assert_eq!(n["installation"]["name"], "review-kit");
    assert_eq!(n["imported"]["skills"], json!(["code-review"]));
    assert_eq!(
        n["installation"]["source_ref"],
        root.canonicalize().unwrap().display().to_string()
    );
    let info = s.json(&["info", "--json"]);
    let skill = info["skills"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "code-review")
        .unwrap_or_else(|| panic!("the imported skill is not loaded: {info}"));
    assert_eq!(skill["source"]["owner"]["kind"], "plugin");
    // No import folder is left in the cache.
    let staging = s.home().join(".cache/evoflux");
    if staging.exists() {
        let leftovers: Vec<_> = walk_names(&staging)
            .into_iter()
            .filter(|n| n.starts_with("import-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
    }
}

#[test]
fn a_name_no_package_can_have_is_refused_with_what_to_do() {
    let s = Sandbox::new();
    let root = claude_plugin(&s, "Review_Kit");
    let out = s.run(&["plugin", "inspect", root.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let i = json(&out);
    let codes: Vec<&str> = i["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"plugin/import-name-invalid"), "{codes:?}");
}

fn walk_names(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.filter_map(Result::ok) {
            out.push(e.file_name().to_string_lossy().into_owned());
            if e.path().is_dir() {
                out.extend(walk_names(&e.path()));
            }
        }
    }
    out
}
