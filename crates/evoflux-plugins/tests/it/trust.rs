//! Static trust review: commands, hosts, environment and header names
//! (never values), capabilities.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

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

/// The trust review of a minimal plugin with these servers.
fn review_of(servers: serde_json::Value) -> evoflux_plugins::TrustReview {
    let f = Fixture::minimal();
    f.mcp_servers(servers);
    f.write("bin/a", "#!/bin/sh\n");
    f.write("bin/b", "#!/bin/sh\n");
    f.inspect().trust
}

#[test]
fn added_since_lists_only_what_the_old_review_lacked() {
    let old = review_of(json!({
        "a": {"type": "stdio", "command": "./bin/a", "args": ["--x"], "env": {"A": "1"}},
        "legacy": {"type": "sse", "url": "https://legacy.example.test/sse"}
    }));
    // Renaming a server or changing a value is nothing new.
    let renamed = review_of(json!({
        "renamed": {"type": "stdio", "command": "./bin/a", "args": ["--x"], "env": {"A": "2"}},
        "legacy": {"type": "sse", "url": "https://legacy.example.test/sse"}
    }));
    let change = renamed.added_since(&old);
    assert!(change.added_commands.is_empty());
    assert!(change.added_hosts.is_empty());
    assert!(change.added_environment_fields.is_empty());
    // The server's capability comes from a new source name.
    assert_eq!(change.added_capabilities.len(), 1);
    assert_eq!(change.added_capabilities[0].source, "renamed");

    // New arguments, a host that is now started, a new env name.
    let wider = review_of(json!({
        "a": {"type": "stdio", "command": "./bin/a", "args": ["--y"], "env": {"A": "1", "B": "2"}},
        "legacy": {"type": "streamable-http", "url": "https://legacy.example.test/mcp"}
    }));
    let change = wider.added_since(&old);
    assert_eq!(change.added_commands.len(), 1);
    assert_eq!(change.added_commands[0].args, ["--y"]);
    assert_eq!(change.added_hosts.len(), 1);
    assert_eq!(change.added_hosts[0].host, "legacy.example.test");
    assert_eq!(change.added_environment_fields, ["B"]);
    assert!(!change.is_empty());

    // Removing things never needs a review.
    let narrower = review_of(json!({}));
    assert!(narrower.added_since(&old).is_empty());
    assert!(old.added_since(&old).is_empty());
}
