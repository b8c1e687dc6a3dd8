#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Failure isolation down to the component: one package with two skills
//! and three servers, one of each reaching outside its root through a
//! symlink (a skill folder, a server's command, a server's cwd). Linked,
//! installed from the folder, or packed and installed from the archive,
//! the valid skill and the valid server are available, every skipped
//! component is named, and no escaping server ever starts.

use crate::common;

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use common::{Sandbox, json};
use serde_json::{Value, json};

fn executable(s: &Sandbox, path: PathBuf, text: &str) {
    s.write(&path, text);
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The mixed package, and the folder outside it its bad links reach.
fn mixed(s: &Sandbox, server: &Path) -> (PathBuf, PathBuf) {
    let root = s.tmp.path().join("src/mixed");
    let outside = s.tmp.path().join("outside");
    s.write(
        root.join("plugin.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "mixed", "version": "1.0.0", "description": "Good and bad parts"
        })
        .to_string(),
    );
    s.write(
        root.join("skills/good/SKILL.md"),
        "---\nname: good\ndescription: A skill that is fine.\n---\nDo good.\n",
    );
    s.write(
        outside.join("leaky/SKILL.md"),
        "---\nname: leaky\ndescription: A skill from outside the package.\n---\nLeak.\n",
    );
    symlink(outside.join("leaky"), root.join("skills/leaky")).unwrap();
    executable(
        s,
        root.join("bin/server"),
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", server.display()),
    );
    // Each escaping server would leave a mark if it ever ran.
    executable(
        s,
        outside.join("evil.sh"),
        &format!(
            "#!/bin/sh\ntouch '{}'\n",
            outside.join("evil-ran").display()
        ),
    );
    symlink(outside.join("evil.sh"), root.join("bin/evil")).unwrap();
    executable(
        s,
        root.join("bin/marked"),
        &format!(
            "#!/bin/sh\ntouch '{}'\nexec '{}' \"$@\"\n",
            outside.join("cwd-ran").display(),
            server.display()
        ),
    );
    std::fs::create_dir_all(outside.join("work")).unwrap();
    symlink(outside.join("work"), root.join("work")).unwrap();
    s.write(
        root.join("mcp.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {
                "good": {"type": "stdio", "command": "./bin/server"},
                "evil-command": {"type": "stdio", "command": "./bin/evil"},
                "evil-cwd": {"type": "stdio", "command": "./bin/marked", "cwd": "./work"}
            }
        })
        .to_string(),
    );
    (root, outside)
}

fn ok(s: &Sandbox, args: &[&str]) -> Value {
    let out = s.run(args);
    assert!(
        out.status.success(),
        "{args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out)
}

/// What of the installed plugin works: its skills and its ready servers.
fn available(s: &Sandbox) -> (Vec<String>, Vec<String>) {
    let listed = ok(s, &["skills", "list", "--json"]);
    let mut skills: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["name"].as_str().unwrap().to_owned())
        .filter(|name| name.contains("good") || name.contains("leaky"))
        .collect();
    skills.sort();
    let list = ok(s, &["mcp", "list", "--json"]);
    let mut ready: Vec<String> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["state"] == "ready")
        .map(|v| v["server"].as_str().unwrap().to_owned())
        .collect();
    ready.sort();
    (skills, ready)
}

fn check(s: &Sandbox, outside: &Path) {
    let (skills, ready) = available(s);
    assert_eq!(
        skills,
        ["good"],
        "the valid skill loads, the escaping one does not"
    );
    assert_eq!(ready, ["mixed/good"], "the valid server runs");
    assert!(
        !outside.join("evil-ran").exists(),
        "an escaping command ran"
    );
    assert!(
        !outside.join("cwd-ran").exists(),
        "a server with an escaping cwd ran"
    );
}

#[test]
fn a_linked_package_keeps_its_valid_parts_and_names_the_escaping_ones() {
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let (root, outside) = mixed(&s, &server);
    // Only components are skipped: inspect exits 0 and says how many.
    let inspected = s.run(&["plugin", "inspect", root.to_str().unwrap()]);
    assert_eq!(inspected.status.code(), Some(0));
    let text = String::from_utf8_lossy(&inspected.stdout);
    assert!(text.contains("valid, with 3 parts skipped"), "{text}");
    let linked = s.run(&["plugin", "link", root.to_str().unwrap(), "--enabled"]);
    assert!(
        linked.status.success(),
        "{}",
        String::from_utf8_lossy(&linked.stderr)
    );
    let text = String::from_utf8_lossy(&linked.stdout);
    for part in ["skills/leaky", "evil-command", "evil-cwd"] {
        assert!(text.contains(part), "{part} is not named:\n{text}");
    }
    check(&s, &outside);
}

#[test]
fn an_installed_copy_keeps_its_valid_parts_and_names_the_links_it_left_out() {
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let (root, outside) = mixed(&s, &server);
    let installed = ok(
        &s,
        &[
            "plugin",
            "install",
            root.to_str().unwrap(),
            "--enabled",
            "--json",
        ],
    );
    let mut left: Vec<&str> = installed["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["path"].as_str().unwrap())
        .collect();
    left.sort();
    assert_eq!(left, ["bin/evil", "skills/leaky", "work"]);
    check(&s, &outside);
}

#[test]
fn a_packed_archive_leaves_the_escaping_links_out_and_installs() {
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let (root, outside) = mixed(&s, &server);
    let archive = s.tmp.path().join("mixed.evoplugin");
    let packed = ok(
        &s,
        &[
            "plugin",
            "pack",
            root.to_str().unwrap(),
            "--output",
            archive.to_str().unwrap(),
            "--json",
        ],
    );
    let mut excluded: Vec<(&str, &str)> = packed["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["by"].as_str().unwrap()))
        .collect();
    excluded.sort();
    assert_eq!(
        excluded,
        [
            ("bin/evil", "escaping-link"),
            ("skills/leaky", "escaping-link"),
            ("work", "escaping-link")
        ]
    );
    ok(
        &s,
        &[
            "plugin",
            "install",
            archive.to_str().unwrap(),
            "--enabled",
            "--json",
        ],
    );
    check(&s, &outside);
}

#[test]
fn a_server_waits_for_its_required_credential_then_starts() {
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let root = s.tmp.path().join("src/svc");
    s.write(
        root.join("plugin.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "svc", "version": "1.0.0",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "token", "label": "API token", "type": "secret",
                 "env": "SERVICE_API_TOKEN", "required": true}
            ]}}
        })
        .to_string(),
    );
    executable(
        &s,
        root.join("bin/server"),
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", server.display()),
    );
    s.write(
        root.join("mcp.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {"api": {"type": "stdio", "command": "./bin/server"}}
        })
        .to_string(),
    );
    let installed = ok(
        &s,
        &[
            "plugin",
            "install",
            root.to_str().unwrap(),
            "--enabled",
            "--json",
        ],
    );
    let id = installed["installation"]["id"].as_str().unwrap().to_owned();
    let state = |s: &Sandbox| -> Value {
        let list = ok(s, &["mcp", "list", "--json"]);
        list["servers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["server"] == "svc/api")
            .cloned()
            .unwrap()
    };
    let waiting = state(&s);
    assert_eq!(waiting["state"], "needs-credentials", "{waiting}");
    assert_eq!(waiting["last_error"]["code"], "mcp/needs-credentials");
    assert!(
        waiting["last_error"]["message"]
            .as_str()
            .unwrap()
            .contains("API token")
    );
    let shown = ok(&s, &["plugin", "show", &id, "--json"]);
    assert_eq!(
        shown["servers"][0]["readiness"], "needs-credentials",
        "{shown}"
    );
    let human = s.run(&["plugin", "show", &id]);
    assert!(String::from_utf8_lossy(&human.stdout).contains("needs-credentials"));

    ok(
        &s,
        &["plugin", "credentials", &id, "set", "token=tok-1", "--json"],
    );
    assert_eq!(state(&s)["state"], "ready");
    let shown = ok(&s, &["plugin", "show", &id, "--json"]);
    assert_eq!(shown["servers"][0]["readiness"], "startable");
    // The server got the credential in its environment.
    let r = ok(&s, &["mcp", "call", "svc/api", "get_env", "--json"]);
    let env: Value = serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(env["SERVICE_API_TOKEN"], "tok-1");
}

#[test]
fn mcp_commands_about_one_server_do_not_repeat_other_plugins_warnings() {
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let good = s.tmp.path().join("src/good");
    s.write(
        good.join("plugin.json"),
        &json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "good"})
            .to_string(),
    );
    executable(
        &s,
        good.join("bin/server"),
        &format!("#!/bin/sh\nexec '{}' \"$@\"\n", server.display()),
    );
    s.write(
        good.join("mcp.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {"svc": {"type": "stdio", "command": "./bin/server"}}
        })
        .to_string(),
    );
    let broken = s.tmp.path().join("src/broken");
    s.write(
        broken.join("plugin.json"),
        &json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "broken"})
            .to_string(),
    );
    s.write(broken.join("mcp.json"), "{\"mcpServers\": 7}");
    for root in [&good, &broken] {
        ok(
            &s,
            &[
                "plugin",
                "link",
                root.to_str().unwrap(),
                "--enabled",
                "--json",
            ],
        );
    }
    let list = s.run(&["mcp", "list", "--json"]);
    assert!(list.status.success());
    assert!(
        common::stderr_codes(&list)
            .iter()
            .any(|c| c.starts_with("plugin/") || c.starts_with("mcp/")),
        "mcp list reports the broken plugin: {}",
        String::from_utf8_lossy(&list.stderr)
    );
    let tools = s.run(&["mcp", "tools", "good/svc", "--json"]);
    assert!(
        tools.status.success(),
        "{}",
        String::from_utf8_lossy(&tools.stderr)
    );
    assert!(
        tools.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&tools.stderr)
    );
}
