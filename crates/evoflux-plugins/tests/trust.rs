//! Static trust review: commands, hosts, environment and header names
//! (never values), capabilities.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::Fixture;
use evoflux_plugins::PLUGIN_SCHEMA_1_0_0;
use serde_json::json;

fn reviewed_plugin() -> Fixture {
    let f = Fixture::empty();
    f.manifest(json!({
        "$schema": PLUGIN_SCHEMA_1_0_0,
        "name": "release-tools",
        "version": "1.2.0",
        "extensions": {
            "org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
                {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true}
            ]},
            "evoflux.credentials": {"fields": [{"key": "legacy", "env": "LEGACY_ONLY"}]},
            "org.evoelsewhere.evoflux.mcp": {"servers": {"service": {"capabilities": ["WebBridge-Safe"]}}}
        }
    }));
    f.skill("release-audit", "release-audit");
    f.skill("changelog", "changelog");
    f.write("skills/broken/SKILL.md", "no front matter");
    f.mcp_servers(json!({
        "service": {"type": "stdio", "command": "./bin/service", "args": ["--data", "${PLUGIN_DATA}"],
                    "env": {"SERVICE_MODE": "super-secret-env-value"}, "cwd": "${PLUGIN_ROOT}"},
        "docs": {"type": "streamable-http", "url": "https://docs.example.com:8443/mcp",
                 "headers": {"Authorization": "Bearer super-secret-header-value"}},
        "legacy": {"type": "sse", "url": "http://127.0.0.1:9000/sse"},
        "skipped": {"type": "stdio", "command": "/bin/sh"}
    }));
    f
}

#[test]
fn trust_review_snapshot() {
    let f = reviewed_plugin();
    let i = f.inspect();
    assert!(i.valid);
    insta::with_settings!({sort_maps => true}, {
        insta::assert_json_snapshot!("trust_review", i.trust);
    });
}

#[test]
fn trust_review_never_contains_values() {
    let f = reviewed_plugin();
    let text = serde_json::to_string(&f.inspect().trust).unwrap();
    assert!(!text.contains("super-secret-env-value"));
    assert!(!text.contains("super-secret-header-value"));
    assert!(text.contains("SERVICE_MODE"));
    assert!(text.contains("Authorization"));
    // The canonical credentials namespace wins over the legacy alias.
    assert!(!text.contains("LEGACY_ONLY"));
}

#[test]
fn legacy_alias_is_read_when_canonical_is_absent() {
    let f = Fixture::empty();
    f.manifest(json!({
        "$schema": PLUGIN_SCHEMA_1_0_0, "name": "p",
        "extensions": {"evoflux.credentials": {"fields": [{"key": "k", "env": "LEGACY_ENV"}]}}
    }));
    assert_eq!(f.inspect().trust.environment_fields, ["LEGACY_ENV"]);
}

#[test]
fn empty_plugin_has_an_empty_review() {
    let f = Fixture::minimal();
    let v = serde_json::to_value(f.inspect().trust).unwrap();
    assert_eq!(
        v,
        json!({"executable_commands": [], "remote_hosts": [], "environment_fields": [],
               "header_names": [], "capabilities": []})
    );
}
