//! `evoflux plugin …` end to end, on the real binary with a temp HOME.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox as Env, json, stderr_codes, write};

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

const PLUGIN_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json";

impl Env {
    fn plugins_home(&self) -> PathBuf {
        self.home().join(".local/share/evoflux/agent-plugins")
    }

    /// Runs with `--json`, expects success, returns stdout as JSON.
    fn ok(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.push("--json");
        let out = self.run(&all);
        assert!(
            out.status.success(),
            "{args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out)
    }

    /// A plugin folder `name` at `version` with one skill.
    fn plugin(&self, name: &str, version: &str, skill: &str) -> PathBuf {
        let root = self
            .tmp
            .path()
            .join("src")
            .join(format!("{name}-{version}"));
        write(
            &root.join("plugin.json"),
            &json!({"$schema": PLUGIN_SCHEMA, "name": name, "version": version, "description": format!("{name} v{version}")})
                .to_string(),
        );
        write(
            &root.join(format!("skills/{skill}/SKILL.md")),
            &format!(
                "---\nname: {skill}\ndescription: Audits {skill} things.\n---\n# {skill}\nDo it.\n"
            ),
        );
        root
    }

    fn registry(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.plugins_home().join("registry.json")).unwrap())
            .unwrap()
    }

    fn user_plugins(&self) -> Vec<Value> {
        self.ok(&["plugin", "list"])["plugins"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["installation"]["source_type"] != "builtin")
            .cloned()
            .collect()
    }

    fn info_skill_owner(&self, skill: &str) -> Option<Value> {
        let info = self.ok(&["info"]);
        info["skills"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == skill)
            .map(|e| e["source"].clone())
    }
}

fn id_of(v: &Value) -> String {
    v["installation"]["id"].as_str().unwrap().to_owned()
}

#[test]
fn folder_and_archive_lifecycle() {
    let env = Env::new();
    // From a folder: disabled by default.
    let src = env.plugin("folder-plugin", "1.0.0", "folder-audit");
    let installed = env.ok(&["plugin", "install", src.to_str().unwrap()]);
    let a = id_of(&installed);
    assert_eq!(installed["installation"]["enabled"], false);
    assert_eq!(installed["installation"]["source_type"], "installed");
    assert_eq!(installed["capabilities"]["updatable"], true);
    assert!(env.info_skill_owner("folder-audit").is_none());

    // From a packed .evoplugin.
    let created = env.tmp.path().join("my-plugin");
    env.ok(&[
        "plugin",
        "create",
        created.to_str().unwrap(),
        "--name",
        "my-plugin",
        "--skill",
        "release-audit",
    ]);
    let inspected = env.ok(&["plugin", "inspect", created.to_str().unwrap()]);
    assert_eq!(inspected["valid"], true);
    let packed = env.ok(&["plugin", "pack", created.to_str().unwrap()]);
    let archive = packed["path"].as_str().unwrap().to_owned();
    assert!(
        archive.ends_with("my-plugin-unversioned.evoplugin"),
        "{archive}"
    );
    let b = id_of(&env.ok(&["plugin", "install", &archive, "--enabled"]));

    // List: both, then the bundled plugin.
    let list = env.ok(&["plugin", "list"]);
    let names: Vec<&str> = list["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["installation"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names[..2], ["folder-plugin", "my-plugin"]);
    assert_eq!(
        list["plugins"].as_array().unwrap().last().unwrap()["installation"]["source_type"],
        "builtin"
    );

    // Show carries the trust review.
    let shown = env.ok(&["plugin", "show", &a]);
    assert_eq!(
        shown["inspection"]["trust"]["capabilities"][0]["name"],
        "agent-skill"
    );

    // Enable / disable drive what the graph sees.
    env.ok(&["plugin", "enable", &a]);
    let owner = env.info_skill_owner("folder-audit").unwrap();
    assert_eq!(owner["layer"], "plugin");
    assert_eq!(owner["owner"]["kind"], "plugin");
    assert_eq!(owner["owner"]["installation"], a);
    assert_eq!(owner["owner"]["name"], "folder-plugin");
    assert_eq!(
        env.info_skill_owner("release-audit").unwrap()["owner"]["installation"],
        b
    );
    env.ok(&["plugin", "disable", &a]);
    assert!(env.info_skill_owner("folder-audit").is_none());
    env.ok(&["plugin", "enable", &a]);

    // Update in place: same id, still enabled, data kept.
    let data = env.plugins_home().join("data").join(&a).join("state.json");
    write(&data, "kept");
    let v2 = env.plugin("folder-plugin", "2.0.0", "folder-audit");
    let updated = env.ok(&["plugin", "update", &a, v2.to_str().unwrap()]);
    assert_eq!(id_of(&updated), a);
    assert_eq!(updated["installation"]["version"], "2.0.0");
    assert_eq!(updated["installation"]["enabled"], true);
    assert_eq!(
        updated["installation"]["installed_at"],
        installed["installation"]["installed_at"]
    );
    assert_eq!(std::fs::read_to_string(&data).unwrap(), "kept");
    assert_eq!(
        env.info_skill_owner("folder-audit").unwrap()["owner"]["installation"],
        a
    );

    // Uninstall: data kept by default, removed on request.
    let u = env.ok(&["plugin", "uninstall", &a]);
    assert_eq!(u["removed_data"], false);
    assert!(data.exists());
    env.ok(&["plugin", "uninstall", &b, "--remove-data"]);
    assert!(!env.plugins_home().join("data").join(&b).exists());
    assert!(env.user_plugins().is_empty());
    assert!(env.info_skill_owner("folder-audit").is_none());
    assert_eq!(env.registry()["installations"], json!([]));
}

#[test]
fn human_output_and_errors() {
    let env = Env::new();
    let src = env.plugin("human", "1.0.0", "human-audit");
    let out = env.run(&["plugin", "install", src.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(disabled)"), "{text}");
    assert!(text.contains("evoflux plugin show"), "{text}");

    // A bad id is invalid input (exit 3); an unknown one is not found (exit 1).
    let bad = env.run(&["plugin", "show", "../escape", "--json"]);
    assert_eq!(bad.status.code(), Some(3));
    assert_eq!(stderr_codes(&bad), ["plugin/installation-id-invalid"]);
    let missing = env.run(&[
        "plugin",
        "enable",
        "0123456789abcdef0123456789abcdef",
        "--json",
    ]);
    assert_eq!(missing.status.code(), Some(1));
    assert_eq!(stderr_codes(&missing), ["plugin/installation-not-found"]);

    // An invalid package names its problem and installs nothing.
    let broken = env.tmp.path().join("broken");
    write(
        &broken.join("plugin.json"),
        &json!({"$schema": PLUGIN_SCHEMA, "name": "Bad Name"}).to_string(),
    );
    let out = env.run(&["plugin", "install", broken.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let codes = stderr_codes(&out);
    assert_eq!(codes[0], "plugin/package-invalid");
    assert!(
        codes.contains(&"plugin/manifest-name-invalid".to_owned()),
        "{codes:?}"
    );
    let out = env.run(&["plugin", "inspect", broken.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("INVALID"));
    assert_eq!(env.user_plugins().len(), 1);
}

#[test]
fn bundled_plugin_is_listed_always_enabled_and_immutable() {
    let env = Env::new();
    let list = env.ok(&["plugin", "list"]);
    let bundled = list["plugins"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["installation"]["source_type"] == "builtin")
        .unwrap()
        .clone();
    assert_eq!(bundled["installation"]["enabled"], true);
    assert_eq!(
        bundled["capabilities"],
        json!({"editable": false, "packable": false, "updatable": false, "can_disable": false, "can_uninstall": false})
    );
    let id = id_of(&bundled);
    // Stable across runs.
    assert_eq!(id_of(&env.ok(&["plugin", "show", &id])), id);
    let out = env.run(&["plugin", "disable", &id, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["plugin/builtin-immutable"]);
    // Its skill is at the bundled-plugin layer.
    let owner = env.info_skill_owner("git-workflow").unwrap();
    assert_eq!(owner["layer"], "bundled-plugin");
    assert_eq!(owner["owner"]["installation"], id);
}

#[test]
fn credentials_are_never_printed() {
    let env = Env::new();
    let root = env.tmp.path().join("svc");
    write(
        &root.join("plugin.json"),
        &json!({
            "$schema": PLUGIN_SCHEMA,
            "name": "svc",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
                {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true}
            ]}}
        })
        .to_string(),
    );
    let id = id_of(&env.ok(&["plugin", "install", root.to_str().unwrap()]));
    let secret = "tok-0123-SECRET";
    let set = env.ok(&[
        "plugin",
        "credentials",
        &id,
        "set",
        "endpoint=https://svc.example/api",
        &format!("token={secret}"),
    ]);
    assert_eq!(set["configured"], true);
    let outputs = [
        env.run(&["plugin", "credentials", &id]),
        env.run(&["plugin", "credentials", &id, "show", "--json"]),
        env.run(&["plugin", "show", &id]),
        env.run(&["plugin", "show", &id, "--json"]),
        env.run(&["plugin", "list", "--json"]),
        env.run(&["plugin", "list"]),
    ];
    for out in &outputs {
        assert!(out.status.success());
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!all.contains(secret), "secret printed: {all}");
    }
    assert!(String::from_utf8_lossy(&outputs[0].stdout).contains("********"));
    let file = env
        .plugins_home()
        .join("data")
        .join(&id)
        .join("credentials.json");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    assert!(std::fs::read_to_string(&file).unwrap().contains(secret));

    let bad = env.run(&[
        "plugin",
        "credentials",
        &id,
        "set",
        "endpoint=ftp://x",
        "--json",
    ]);
    assert_eq!(bad.status.code(), Some(3));
    assert_eq!(stderr_codes(&bad), ["plugin/credential-invalid"]);
    let cleared = env.ok(&["plugin", "credentials", &id, "clear", "token"]);
    assert_eq!(cleared["configured"], false);
}

/// Waits (bounded) for `marker` to appear.
fn wait_for(marker: &Path, child: &mut std::process::Child) {
    for _ in 0..600 {
        if marker.exists() {
            return;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the install exited early: {status}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the install never reached the commit point");
}

#[test]
fn killed_mid_install_leaves_the_registry_intact() {
    let env = Env::new();
    let first = env.plugin("first", "1.0.0", "first-audit");
    let a = id_of(&env.ok(&["plugin", "install", first.to_str().unwrap()]));
    let before = env.registry();

    let second = env.plugin("second", "1.0.0", "second-audit");
    let marker = env.tmp.path().join("paused");
    let mut child = env
        .command(&["plugin", "install", second.to_str().unwrap()])
        .env("EVOFLUX_TEST_PLUGIN_COMMIT_PAUSE", &marker)
        .spawn()
        .unwrap();
    wait_for(&marker, &mut child);
    // The package is in place, the registry not yet written: kill it here.
    child.kill().unwrap();
    child.wait().unwrap();

    assert_eq!(env.registry(), before);
    let ids: Vec<String> = env.user_plugins().iter().map(id_of).collect();
    assert_eq!(ids, std::slice::from_ref(&a));

    // The next mutation sweeps the orphaned tree and succeeds.
    let b = id_of(&env.ok(&["plugin", "install", second.to_str().unwrap()]));
    let mut installed: Vec<String> = std::fs::read_dir(env.plugins_home().join("installed"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    installed.sort();
    let mut expected = vec![a, b];
    expected.sort();
    assert_eq!(installed, expected);
    let staging = env.home().join(".cache/evoflux/agent-plugins/staging");
    assert_eq!(std::fs::read_dir(staging).unwrap().count(), 0);
}

#[test]
fn two_processes_installing_at_once_both_land() {
    let env = Env::new();
    let p1 = env.plugin("one", "1.0.0", "one-audit");
    let p2 = env.plugin("two", "1.0.0", "two-audit");
    let mut c1 = env
        .command(&["plugin", "install", p1.to_str().unwrap()])
        .spawn()
        .unwrap();
    let mut c2 = env
        .command(&["plugin", "install", p2.to_str().unwrap()])
        .spawn()
        .unwrap();
    assert!(c1.wait().unwrap().success());
    assert!(c2.wait().unwrap().success());
    let names: Vec<String> = env.registry()["installations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&"one".to_owned()) && names.contains(&"two".to_owned()));
}

#[test]
fn inspection_never_prints_env_or_header_values() {
    let env = Env::new();
    let root = env.plugin("secretive", "1.0.0", "secret-audit");
    write(
        &root.join("mcp.json"),
        &json!({"$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json", "mcpServers": {
            "local": {"type": "stdio", "command": "./bin/server", "env": {"API_TOKEN": "tok-stdio-123"}},
            "remote": {"type": "streamable-http", "url": "https://mcp.example.test/mcp",
                       "headers": {"Authorization": "Bearer tok-header-456"}}
        }})
        .to_string(),
    );
    let out = env.run(&["plugin", "inspect", root.to_str().unwrap(), "--json"]);
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("tok-stdio-123"), "{text}");
    assert!(!text.contains("tok-header-456"), "{text}");
    // The names are still shown, so a reviewer sees what is configured.
    assert!(text.contains("API_TOKEN"), "{text}");
    assert!(text.contains("Authorization"), "{text}");
    let human = env.run(&["plugin", "inspect", root.to_str().unwrap()]);
    let human = String::from_utf8_lossy(&human.stdout).into_owned()
        + &String::from_utf8_lossy(&human.stderr);
    assert!(
        !human.contains("tok-stdio-123") && !human.contains("tok-header-456"),
        "{human}"
    );
}

/// The names `evoflux skills list` shows (the compiled graph's skills).
fn listed_skills(env: &Env) -> Vec<String> {
    env.ok(&["skills", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_owned())
        .collect()
}

#[cfg(unix)]
#[test]
fn linked_plugin_never_loads_a_skill_linked_from_outside_its_root() {
    let env = Env::new();
    let root = env.plugin("linky", "1.0.0", "linky-good");
    let id = id_of(&env.ok(&["plugin", "link", root.to_str().unwrap(), "--enabled"]));
    assert!(listed_skills(&env).contains(&"linky-good".to_owned()));

    // After linking, the author points a skill folder and a SKILL.md
    // outside the root.
    let outside = env.tmp.path().join("outside");
    write(
        &outside.join("linky-evil/SKILL.md"),
        "---\nname: linky-evil\ndescription: Reads what it should not.\n---\n# evil\nDo it.\n",
    );
    std::os::unix::fs::symlink(outside.join("linky-evil"), root.join("skills/linky-evil")).unwrap();
    std::fs::create_dir_all(root.join("skills/linky-file")).unwrap();
    std::os::unix::fs::symlink(
        outside.join("linky-evil/SKILL.md"),
        root.join("skills/linky-file/SKILL.md"),
    )
    .unwrap();

    let skills = listed_skills(&env);
    assert!(skills.contains(&"linky-good".to_owned()), "{skills:?}");
    assert!(!skills.contains(&"linky-evil".to_owned()), "{skills:?}");
    assert!(!skills.contains(&"linky-file".to_owned()), "{skills:?}");
    assert!(env.info_skill_owner("linky-evil").is_none());

    // Inspection reports both with the same rule's code.
    let shown = env.ok(&["plugin", "show", &id]);
    let codes_of = |scope: &str| -> Vec<String> {
        shown["inspection"]["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["scope"] == scope)
            .map(|d| d["code"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(codes_of("skill:linky-evil"), ["plugin/skill-escapes-root"]);
    assert_eq!(codes_of("skill:linky-file"), ["plugin/skill-escapes-root"]);
    let valid: Vec<&str> = shown["inspection"]["skills"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["valid"] == true)
        .map(|s| s["dir"].as_str().unwrap())
        .collect();
    assert_eq!(valid, ["linky-good"]);
}

const MCP_SCHEMA: &str = "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json";

/// The warning codes a `--json` run printed on stderr (none when silent).
fn warning_codes(out: &std::process::Output) -> Vec<String> {
    if out.stderr.is_empty() {
        return Vec::new();
    }
    stderr_codes(out)
}

#[test]
fn update_that_widens_the_trust_review_disables_until_reviewed() {
    let env = Env::new();
    let v1 = env.plugin("widen", "1.0.0", "widen-audit");
    write(
        &v1.join("mcp.json"),
        &json!({"$schema": MCP_SCHEMA, "mcpServers": {
            "local": {"type": "stdio", "command": "./bin/server", "env": {"MODE": "a"}}
        }})
        .to_string(),
    );
    write(&v1.join("bin/server"), "#!/bin/sh\n");
    let id = id_of(&env.ok(&["plugin", "install", v1.to_str().unwrap(), "--enabled"]));

    // Same trust surface (only the description and a value change): still enabled.
    let same = env.plugin("widen", "1.1.0", "widen-audit");
    write(
        &same.join("mcp.json"),
        &json!({"$schema": MCP_SCHEMA, "mcpServers": {
            "local": {"type": "stdio", "command": "./bin/server", "env": {"MODE": "b"}}
        }})
        .to_string(),
    );
    write(&same.join("bin/server"), "#!/bin/sh\n");
    let out = env.run(&["plugin", "update", &id, same.to_str().unwrap(), "--json"]);
    assert!(out.status.success());
    assert!(warning_codes(&out).is_empty());
    let u = json(&out);
    assert_eq!(u["installation"]["enabled"], true);
    assert_eq!(u["review"], "nothing-new");

    // A new command, a new host, a new env name and a new skill.
    let wider = env.plugin("widen", "2.0.0", "widen-audit");
    write(
        &wider.join("skills/widen-extra/SKILL.md"),
        "---\nname: widen-extra\ndescription: More.\n---\n# extra\nDo more.\n",
    );
    write(
        &wider.join("mcp.json"),
        &json!({"$schema": MCP_SCHEMA, "mcpServers": {
            "local": {"type": "stdio", "command": "./bin/server", "env": {"MODE": "b"}},
            "helper": {"type": "stdio", "command": "./bin/helper", "env": {"HELPER_TOKEN": "tok-new-secret"}},
            "remote": {"type": "streamable-http", "url": "https://widen.example.test/mcp"}
        }})
        .to_string(),
    );
    write(&wider.join("bin/server"), "#!/bin/sh\n");
    write(&wider.join("bin/helper"), "#!/bin/sh\n");
    let out = env.run(&["plugin", "update", &id, wider.to_str().unwrap(), "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(warning_codes(&out), ["plugin/update-review-required"]);
    let u = json(&out);
    assert_eq!(u["installation"]["enabled"], false);
    assert_eq!(u["review"], "required");
    let change = &u["trust_change"];
    let commands: Vec<&str> = change["added_commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["executable"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["./bin/helper"]);
    assert_eq!(change["added_hosts"][0]["host"], "widen.example.test");
    assert_eq!(change["added_environment_fields"], json!(["HELPER_TOKEN"]));
    let sources: Vec<&str> = change["added_capabilities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["source"].as_str().unwrap())
        .collect();
    assert!(sources.contains(&"widen-extra"), "{sources:?}");
    assert!(
        sources.contains(&"helper") && sources.contains(&"remote"),
        "{sources:?}"
    );
    assert!(!String::from_utf8_lossy(&out.stdout).contains("tok-new-secret"));
    assert!(env.info_skill_owner("widen-extra").is_none());
    assert_eq!(
        env.registry()["installations"][0]["enabled"],
        false,
        "the disabled state is what the registry holds"
    );

    // The human output names the difference.
    env.ok(&["plugin", "enable", &id]);
    let wider3 = env.plugin("widen", "3.0.0", "widen-audit");
    write(
        &wider3.join("mcp.json"),
        &json!({"$schema": MCP_SCHEMA, "mcpServers": {
            "other": {"type": "streamable-http", "url": "https://other.example.test/mcp"}
        }})
        .to_string(),
    );
    let out = env.run(&["plugin", "update", &id, wider3.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("other.example.test"), "{text}");
    assert!(text.contains("(disabled)"), "{text}");

    // --enabled keeps it enabled whatever the new version adds.
    env.ok(&["plugin", "enable", &id]);
    let u = env.ok(&[
        "plugin",
        "update",
        &id,
        wider.to_str().unwrap(),
        "--enabled",
    ]);
    assert_eq!(u["installation"]["enabled"], true);
    assert_eq!(u["review"], "enabled-on-request");
    assert!(
        !u["trust_change"]["added_commands"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert!(env.info_skill_owner("widen-extra").is_some());
}

#[test]
fn pack_leaves_out_secrets_and_ignored_files_and_says_so() {
    let env = Env::new();
    let root = env.plugin("packy", "1.0.0", "packy-audit");
    write(&root.join(".env"), "TOKEN=tok-root-secret");
    write(&root.join(".env.local"), "TOKEN=tok-local-secret");
    write(&root.join("scratch/notes.txt"), "private notes");
    write(&root.join("debug.log"), "log");
    write(&root.join(".evopluginignore"), "scratch/\n*.log\n");

    let packed = env.ok(&[
        "plugin",
        "pack",
        root.to_str().unwrap(),
        "--output",
        env.tmp.path().join("packy.evoplugin").to_str().unwrap(),
    ]);
    let excluded: Vec<(&str, &str)> = packed["excluded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["path"].as_str().unwrap(), e["by"].as_str().unwrap()))
        .collect();
    assert_eq!(
        excluded,
        [
            (".env", "default"),
            (".env.local", "default"),
            ("debug.log", "ignore-file"),
            ("scratch", "ignore-file"),
        ]
    );
    assert_eq!(
        packed["entries"], 3,
        "plugin.json, SKILL.md, .evopluginignore"
    );

    // Installing the archive yields the packed tree, with the packed digest.
    let archive = packed["path"].as_str().unwrap();
    let installed = env.ok(&["plugin", "install", archive]);
    assert_eq!(
        installed["installation"]["content_sha256"],
        packed["content_sha256"]
    );
    let tree = PathBuf::from(installed["installation"]["root"].as_str().unwrap());
    assert!(tree.join("plugin.json").exists());
    for gone in [".env", ".env.local", "scratch", "debug.log"] {
        assert!(!tree.join(gone).exists(), "{gone} was packed");
    }

    // The human output names what was left out.
    let out = env.run(&[
        "plugin",
        "pack",
        root.to_str().unwrap(),
        "--output",
        env.tmp.path().join("packy-2.evoplugin").to_str().unwrap(),
    ]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [".env", ".env.local", "scratch/", "debug.log"] {
        assert!(text.contains(name), "{name} not named: {text}");
    }
    assert!(!text.contains("tok-root-secret"), "{text}");
}

#[test]
fn one_installation_per_name_and_kept_data_is_reattached() {
    let env = Env::new();
    let v1 = env.plugin("solo", "1.0.0", "solo-audit");
    let id = id_of(&env.ok(&["plugin", "install", v1.to_str().unwrap()]));

    // The same name from another source is refused, pointing to update.
    let v2 = env.plugin("solo", "2.0.0", "solo-audit");
    let out = env.run(&["plugin", "install", v2.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["plugin/already-installed"]);
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    let message = err["diagnostics"][0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("plugin update {id}")),
        "{message}"
    );
    // Linking it is refused too.
    let out = env.run(&["plugin", "link", v2.to_str().unwrap(), "--json"]);
    assert_eq!(stderr_codes(&out), ["plugin/already-installed"]);
    assert_eq!(env.user_plugins().len(), 1);

    // Uninstall keeps the data; `data list` names it.
    let state = env.plugins_home().join("data").join(&id).join("state.json");
    write(&state, "kept state");
    env.ok(&["plugin", "uninstall", &id]);
    let listed = env.ok(&["plugin", "data", "list"]);
    assert_eq!(listed["kept"][0]["id"], id);
    assert_eq!(listed["kept"][0]["name"], "solo");
    assert_eq!(listed["kept"].as_array().unwrap().len(), 1);

    // Reinstalling (another version, another source) reattaches it.
    let again = env.ok(&["plugin", "install", v2.to_str().unwrap()]);
    assert_eq!(id_of(&again), id);
    assert_eq!(again["reattached_data"], true);
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "kept state");
    assert_eq!(env.ok(&["plugin", "data", "list"])["kept"], json!([]));
    // Its data is in use: `data remove` refuses it.
    let out = env.run(&["plugin", "data", "remove", "--id", &id, "--json"]);
    assert_eq!(stderr_codes(&out), ["plugin/data-in-use"]);

    // Kept again, then removed by name: a fresh install starts empty.
    env.ok(&["plugin", "uninstall", &id]);
    let removed = env.ok(&["plugin", "data", "remove", "solo"]);
    assert_eq!(removed["removed"][0]["id"], id);
    assert!(!state.exists());
    let out = env.run(&["plugin", "data", "remove", "solo", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["plugin/kept-data-not-found"]);
    let fresh = env.ok(&["plugin", "install", v1.to_str().unwrap()]);
    assert_ne!(id_of(&fresh), id);
    assert_eq!(fresh["reattached_data"], false);

    // A data folder no record names is listed without a name and removed by id.
    let stray = "0123456789abcdef0123456789abcdef";
    write(
        &env.plugins_home().join("data").join(stray).join("x"),
        "left",
    );
    let listed = env.ok(&["plugin", "data", "list"]);
    assert_eq!(listed["kept"][0]["id"], stray);
    assert_eq!(listed["kept"][0]["name"], Value::Null);
    env.ok(&["plugin", "data", "remove", "--id", stray]);
    assert!(!env.plugins_home().join("data").join(stray).exists());
    // Uninstalling with --remove-data keeps nothing.
    env.ok(&["plugin", "uninstall", &id_of(&fresh), "--remove-data"]);
    assert_eq!(env.ok(&["plugin", "data", "list"])["kept"], json!([]));
}

/// Runs with `input` on standard input (a pipe, never a terminal).
fn run_with_stdin(env: &Env, args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = env
        .command(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn credential_secrets_are_read_from_stdin_and_never_printed() {
    let env = Env::new();
    let root = env.tmp.path().join("svc");
    write(
        &root.join("plugin.json"),
        &json!({
            "$schema": PLUGIN_SCHEMA,
            "name": "svc",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
                {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true}
            ]}}
        })
        .to_string(),
    );
    let id = id_of(&env.ok(&["plugin", "install", root.to_str().unwrap()]));
    let file = env
        .plugins_home()
        .join("data")
        .join(&id)
        .join("credentials.json");
    let stored = || -> Value { serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap() };
    let printed = |out: &std::process::Output| {
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr)
    };

    // --stdin: one line per bare KEY, in order; nothing about it printed.
    let secret = "tok-piped-SECRET-1";
    let out = run_with_stdin(
        &env,
        &[
            "plugin",
            "credentials",
            &id,
            "set",
            "endpoint",
            "token",
            "--stdin",
            "--json",
        ],
        &format!("https://svc.example/api\n{secret}\n"),
    );
    assert!(out.status.success(), "{}", printed(&out));
    assert!(out.stderr.is_empty(), "{}", printed(&out));
    assert_eq!(json(&out)["configured"], true);
    assert!(!printed(&out).contains(secret));
    assert_eq!(stored()["token"], secret);
    assert_eq!(stored()["endpoint"], "https://svc.example/api");

    // Standard input that is not a terminal is read without --stdin, and
    // human output never shows the secret either.
    let second = "tok-piped-SECRET-2";
    let out = run_with_stdin(
        &env,
        &["plugin", "credentials", &id, "set", "token"],
        &format!("{second}\r\n"),
    );
    assert!(out.status.success(), "{}", printed(&out));
    assert!(!printed(&out).contains(second), "{}", printed(&out));
    assert!(printed(&out).contains("********"));
    assert_eq!(stored()["token"], second);

    // Input that ends early or is empty changes nothing.
    let out = run_with_stdin(
        &env,
        &[
            "plugin",
            "credentials",
            &id,
            "set",
            "endpoint",
            "token",
            "--json",
        ],
        "https://other.example/api\n",
    );
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["plugin/credential-input-missing"]);
    let out = run_with_stdin(
        &env,
        &["plugin", "credentials", &id, "set", "token", "--json"],
        "\n",
    );
    assert_eq!(stderr_codes(&out), ["plugin/credential-input-empty"]);
    assert_eq!(stored()["token"], second);
    assert_eq!(stored()["endpoint"], "https://svc.example/api");

    // An unknown key is refused before anything is read.
    let out = run_with_stdin(
        &env,
        &["plugin", "credentials", &id, "set", "nope", "--json"],
        "x\n",
    );
    assert_eq!(stderr_codes(&out), ["plugin/credential-unknown"]);

    // KEY=VALUE still works for a secret, with a warning and a hint.
    let argv = "tok-argv-SECRET-3";
    let out = env.run(&[
        "plugin",
        "credentials",
        &id,
        "set",
        &format!("token={argv}"),
        "--json",
    ]);
    assert!(out.status.success());
    assert_eq!(stderr_codes(&out), ["plugin/credential-secret-in-argv"]);
    assert!(!String::from_utf8_lossy(&out.stdout).contains(argv));
    assert_eq!(stored()["token"], argv);
}
