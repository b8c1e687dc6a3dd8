//! Package and manifest validation through `inspect`: each fixture asserts
//! its diagnostic code and scope, and that fatal problems stop component
//! discovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;

use common::{Fixture, all_codes, codes_in};
use evoflux_core::Severity;
use evoflux_plugins::{
    McpStatus, PLUGIN_SCHEMA_1_0_0, PackageLimits, Scope, StrictSkillValidator, inspect_with,
};
use serde_json::json;

#[test]
fn minimal_valid_plugin_loads_without_diagnostics() {
    let f = Fixture::minimal();
    let i = f.inspect();
    assert!(i.valid);
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);
    assert_eq!(i.manifest.as_ref().unwrap().name, "my-plugin");
    assert_eq!(i.mcp_status, McpStatus::Absent);
    assert!(i.skills.is_empty());
    assert!(i.trust.is_empty());
    assert!(i.content_sha256.is_some());
}

#[test]
fn full_manifest_keeps_every_typed_field() {
    let f = Fixture::empty();
    f.manifest(json!({
        "$schema": PLUGIN_SCHEMA_1_0_0, "name": "acme.tools", "version": "not-semver",
        "description": "d", "author": {"name": "A", "email": "a@x", "url": "https://x"},
        "homepage": "not a url", "repository": "r", "license": "Custom", "keywords": ["k"],
        "extensions": {"com.example.client": {"x": 1}}
    }));
    let i = f.inspect();
    assert!(i.valid, "{:?}", i.diagnostics);
    let m = i.manifest.unwrap();
    assert_eq!(m.version.as_deref(), Some("not-semver"));
    assert_eq!(m.author.unwrap().email.as_deref(), Some("a@x"));
    assert_eq!(i.extension_namespaces, ["com.example.client"]);
}

#[test]
fn unknown_root_field_is_reported_and_ignored() {
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin", "conformanceUnknown": true, "skills": "./other"}));
    f.skill("alpha", "alpha");
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(
        codes_in(&i, "manifest"),
        [
            "plugin/manifest-unknown-field",
            "plugin/manifest-unknown-field"
        ]
    );
    assert!(
        i.diagnostics
            .iter()
            .all(|d| d.diagnostic.severity == Severity::Warning)
    );
    // `skills` in the manifest cannot relocate the component.
    assert_eq!(i.valid_skills().count(), 1);
}

#[test]
fn non_object_extensions_is_reported_and_ignored() {
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin", "extensions": false}));
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(
        codes_in(&i, "manifest"),
        ["plugin/manifest-extensions-invalid"]
    );
    assert!(i.extension_namespaces.is_empty());
}

#[test]
fn extension_member_that_is_not_an_object_is_ignored_alone() {
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin",
        "extensions": {"com.example.a": {}, "com.example.b": [1]}}));
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(
        codes_in(&i, "manifest"),
        ["plugin/manifest-extension-invalid"]
    );
    assert_eq!(i.extension_namespaces, ["com.example.a"]);
}

/// A fatal manifest problem rejects the package before components are seen.
fn assert_rejected(f: &Fixture, code: &str) {
    f.skill("alpha", "alpha");
    f.mcp_servers(json!({"s": {"type": "stdio", "command": "node"}}));
    let i = f.inspect();
    assert!(!i.valid, "{code}");
    assert!(
        i.has(&Scope::Manifest, code),
        "expected {code}, got {:?}",
        all_codes(&i)
    );
    assert!(i.manifest.is_none());
    assert!(i.skills.is_empty(), "no skill may be inspected");
    assert_eq!(i.mcp_status, McpStatus::NotInspected);
    assert!(i.trust.is_empty());
}

#[test]
fn bad_schema_rejects() {
    for schema in [
        json!("https://agent-plugins.org/schemas/1.1.0/plugin.schema.json"),
        json!("https://agent-plugins.org/schemas/1.0.0/mcp.schema.json"),
        json!(""),
    ] {
        let f = Fixture::empty();
        f.manifest(json!({"$schema": schema, "name": "my-plugin"}));
        assert_rejected(&f, "plugin/manifest-schema-unsupported");
    }
    let f = Fixture::empty();
    f.manifest(json!({"$schema": 1, "name": "my-plugin"}));
    assert_rejected(&f, "plugin/manifest-field-invalid");
}

#[test]
fn missing_schema_rejects() {
    let f = Fixture::empty();
    f.manifest(json!({"name": "my-plugin"}));
    assert_rejected(&f, "plugin/manifest-schema-missing");
}

#[test]
fn bad_names_reject() {
    for name in [
        "My-Plugin",
        "-start",
        "end-",
        "has--double",
        "too.many..dots",
        "",
        "under_score",
        &"a".repeat(65),
    ] {
        let f = Fixture::empty();
        f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": name}));
        assert_rejected(&f, "plugin/manifest-name-invalid");
    }
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0}));
    assert_rejected(&f, "plugin/manifest-name-missing");
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": ["x"]}));
    assert_rejected(&f, "plugin/manifest-field-invalid");
}

#[test]
fn wrongly_typed_optional_fields_reject() {
    for (field, value) in [
        ("version", json!(1)),
        ("description", json!(null)),
        ("homepage", json!({"url": "x"})),
        ("repository", json!(["r"])),
        ("license", json!(true)),
        ("author", json!("Jane <j@x>")),
        ("author", json!({"name": "J", "twitter": "@j"})),
        ("author", json!({"name": 3})),
        ("keywords", json!("a,b")),
        ("keywords", json!(["a", 1])),
    ] {
        let f = Fixture::empty();
        f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin", field: value}));
        assert_rejected(&f, "plugin/manifest-field-invalid");
    }
}

#[test]
fn unreadable_manifests_reject() {
    let f = Fixture::empty();
    f.write("plugin.json", "[1, 2]");
    assert_rejected(&f, "plugin/manifest-not-object");

    let f = Fixture::empty();
    f.write("plugin.json", "{\"$schema\": ");
    assert_rejected(&f, "plugin/manifest-invalid-json");

    let f = Fixture::empty();
    f.write("plugin.json", [0xff, 0xfe, 0x00]);
    assert_rejected(&f, "plugin/manifest-unreadable");

    let f = Fixture::empty();
    fs::create_dir(f.root.join("plugin.json")).unwrap();
    assert_rejected(&f, "plugin/manifest-not-file");

    let f = Fixture::empty();
    assert_rejected(&f, "plugin/manifest-missing");

    let f = Fixture::empty();
    let pad = "x".repeat(512 * 1024);
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin", "description": pad}));
    assert_rejected(&f, "plugin/manifest-too-large");
}

#[test]
fn wrapper_folder_is_not_a_plugin() {
    // plugin.json must be at the root, not one folder down.
    let f = Fixture::empty();
    f.write(
        "inner/plugin.json",
        json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "inner"}).to_string(),
    );
    assert_rejected(&f, "plugin/manifest-missing");
}

#[cfg(unix)]
#[test]
fn manifest_symlink_escaping_the_root_rejects() {
    let f = Fixture::empty();
    let outside = f.dir.path().join("outside.json");
    fs::write(
        &outside,
        json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin"}).to_string(),
    )
    .unwrap();
    f.symlink(&outside, "plugin.json");
    assert_rejected(&f, "plugin/manifest-escapes-root");
    assert!(f.inspect().has(&Scope::Package, "plugin/escaping-symlink"));
}

#[test]
fn missing_root_rejects_in_package_scope() {
    let f = Fixture::empty();
    let i = evoflux_plugins::inspect(&f.root.join("nope"), &StrictSkillValidator);
    assert!(!i.valid);
    assert_eq!(codes_in(&i, "package"), ["plugin/root-not-directory"]);
    let file = f.write("file.txt", "x");
    let i = evoflux_plugins::inspect(&file, &StrictSkillValidator);
    assert_eq!(codes_in(&i, "package"), ["plugin/root-not-directory"]);
}

#[test]
fn package_limits_reject() {
    let f = Fixture::minimal();
    for n in 0..5 {
        f.write(&format!("data/{n}.txt"), "x");
    }
    let few = PackageLimits {
        max_entries: 4,
        ..PackageLimits::DEFAULT
    };
    let i = inspect_with(&f.root, &StrictSkillValidator, &few);
    assert!(!i.valid);
    assert_eq!(codes_in(&i, "package"), ["plugin/too-many-entries"]);
    assert!(i.content_sha256.is_none());

    let small = PackageLimits {
        max_total_bytes: 3,
        ..PackageLimits::DEFAULT
    };
    let i = inspect_with(&f.root, &StrictSkillValidator, &small);
    assert!(!i.valid);
    assert_eq!(codes_in(&i, "package"), ["plugin/package-too-large"]);
}

#[cfg(unix)]
#[test]
fn escaping_symlink_is_reported_but_links_inside_are_fine() {
    let f = Fixture::minimal();
    f.write("docs/readme.md", "hi");
    f.symlink("docs/readme.md", "README.md");
    let i = f.inspect();
    assert!(i.valid);
    assert!(i.diagnostics.is_empty(), "{:?}", i.diagnostics);

    f.symlink("/etc", "etc-link");
    let i = f.inspect();
    assert!(i.valid, "an unused escaping link fails no component");
    assert_eq!(codes_in(&i, "package"), ["plugin/escaping-symlink"]);
    assert_eq!(i.diagnostics[0].diagnostic.severity, Severity::Warning);
}

#[cfg(unix)]
#[test]
fn fifo_is_an_unsupported_entry() {
    let f = Fixture::minimal();
    let status = std::process::Command::new("mkfifo")
        .arg(f.root.join("pipe"))
        .status();
    if !status.is_ok_and(|s| s.success()) {
        eprintln!("mkfifo unavailable; skipping");
        return;
    }
    let i = f.inspect();
    assert!(!i.valid);
    assert_eq!(codes_in(&i, "package"), ["plugin/unsupported-entry"]);
}

#[test]
fn digest_is_location_independent_and_content_sensitive() {
    let a = Fixture::minimal();
    let b = Fixture::minimal();
    for f in [&a, &b] {
        f.skill("alpha", "alpha");
        f.write("bin/tool.sh", "#!/bin/sh\n");
    }
    let da = a.inspect().content_sha256.unwrap();
    assert_eq!(da, b.inspect().content_sha256.unwrap());

    // Caches and empty folders are not content.
    b.write(".git/HEAD", "ref");
    b.write("__pycache__/x.pyc", "x");
    b.write("skills/alpha/x.pyc", "x");
    fs::create_dir(b.root.join("empty")).unwrap();
    assert_eq!(da, b.inspect().content_sha256.unwrap());

    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            b.root.join("bin/tool.sh"),
            fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_ne!(da, b.inspect().content_sha256.unwrap(), "exec bit counts");
    }

    a.write("bin/tool.sh", "#!/bin/sh\necho\n");
    assert_ne!(da, a.inspect().content_sha256.unwrap());
}

#[test]
fn inspection_serializes_with_scopes() {
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin", "x": 1}));
    let v = serde_json::to_value(f.inspect()).unwrap();
    assert_eq!(v["valid"], true);
    assert_eq!(v["diagnostics"][0]["scope"], "manifest");
    assert_eq!(v["diagnostics"][0]["code"], "plugin/manifest-unknown-field");
    assert_eq!(v["diagnostics"][0]["locator"]["field"], "x");
    assert_eq!(v["manifest"]["spec_version"], "1.0.0");
    assert_eq!(v["mcp_status"], "absent");
}
