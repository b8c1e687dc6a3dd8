//! `evoflux info` and `evoflux graph` end to end, on the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox as Env, json};

use std::path::{Path, PathBuf};

use serde_json::Value;

fn assert_schema_valid(v: &Value) {
    let schema: Value = serde_json::from_str(evoflux_graph::info::INFO_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(v)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    assert_eq!(
        evoflux_graph::info::check_invariants(v),
        Vec::<String>::new()
    );
}

const TOOL: &str = "description = \"Deploy\"\nargv = [\"./deploy.sh\", \"{{env}}\"]\n[input_schema]\ntype = \"object\"\n[input_schema.properties.env]\ntype = \"string\"\n";

#[test]
fn info_on_embedded_defaults() {
    let env = Env::new();
    let out = env.run(&["info", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_schema_valid(&v);
    assert_eq!(v["status"], "ok");
    assert_eq!(v["config"]["default_model"], "local:smollm2-135m-instruct");
    assert_eq!(v["config"]["source"]["owner"]["kind"], "framework");
    assert_eq!(v["config"]["source"]["binding"]["kind"], "builtin");
    assert_eq!(v["tools"]["total"], 23);
    let ask = v["tools"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "ask_user")
        .unwrap();
    assert_eq!(ask["handling"]["kind"], "request-input");
    assert_eq!(
        ask["availability"],
        serde_json::json!(["requires-request-input"])
    );
    assert_eq!(ask["executor"]["kind"], "native");

    let text = String::from_utf8_lossy(&env.run(&["info"]).stdout)
        .replace(env.tmp.path().to_str().unwrap(), "[TMP]");
    insta::assert_snapshot!("info_defaults", text);
}

#[test]
fn info_marks_the_tools_that_need_something_of_the_session() {
    let env = Env::new();
    // A command tool may take code_context's slot: what is marked follows
    // the selected definition, not the name.
    env.project("tools/code_context.toml", TOOL);
    env.trust();
    let v = json(&env.run(&["info", "--json"]));
    assert_schema_valid(&v);
    let tools = v["tools"]["entries"].as_array().unwrap();
    let tool = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap();
    // web_search is built, and runs only where the session's provider
    // searches the web: info says which providers do.
    let search = tool("web_search");
    assert_eq!(search["runnable"], true);
    assert!(search.get("unavailable_code").is_none());
    assert!(
        search["needs_provider"]
            .as_str()
            .is_some_and(|n| n.contains("anthropic") && n.contains("wire_api = \"responses\"")),
        "{search}"
    );
    for name in [
        "read",
        "shell",
        "ask_user",
        "code_context",
        "agent",
        "task_cancel",
        "task_update",
    ] {
        assert_eq!(tool(name)["runnable"], true, "{name}");
        assert!(tool(name).get("unavailable_code").is_none(), "{name}");
        assert!(tool(name).get("needs_provider").is_none(), "{name}");
    }
    let text = String::from_utf8_lossy(&env.run(&["info"]).stdout).into_owned();
    let line = |name: &str| {
        text.lines()
            .find(|l| l.trim_start().starts_with(&format!("{name} ")))
            .unwrap()
            .to_owned()
    };
    assert!(
        line("web_search").contains("(needs a provider that searches the web: "),
        "{text}"
    );
    assert!(!line("web_search").contains("not in this build"), "{text}");
    assert!(!line("agent").contains("not in this build"), "{text}");
    assert!(
        !line("code_context").contains("not in this build"),
        "{text}"
    );
    assert!(!line("read").contains("not in this build"), "{text}");
}

#[test]
fn info_mode_projects_tools() {
    let env = Env::new();
    let names = |mode: &str| -> Vec<String> {
        let v = json(&env.run(&["info", "--json", "--mode", mode]));
        assert_schema_valid(&v);
        v["tools"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(names("coding").contains(&"code_context".to_owned()));
    assert!(!names("Work").contains(&"code_context".to_owned()));
    assert_eq!(env.run(&["info", "--mode", "play"]).status.code(), Some(2));
}

#[test]
fn info_shows_replacement_and_disable_provenance() {
    let env = Env::new();
    env.project("tools/web_fetch.toml", TOOL);
    env.user("tools/shell.toml", "disable = true\n");
    env.trust();
    let out = env.run(&["info", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v = json(&out);
    assert_schema_valid(&v);
    let tools = v["tools"]["entries"].as_array().unwrap();
    assert!(!tools.iter().any(|t| t["name"] == "shell"));
    let wf = tools.iter().find(|t| t["name"] == "web_fetch").unwrap();
    assert_eq!(
        wf["executor"],
        serde_json::json!({"kind": "command", "argv0": "./deploy.sh"})
    );
    assert_eq!(wf["source"]["owner"]["root"], "project");
    let kinds: Vec<(&str, &str)> = v["composition"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["kind"].as_str().unwrap(), e["slot"].as_str().unwrap()))
        .filter(|(kind, _)| *kind != "layered")
        .collect();
    assert_eq!(
        kinds,
        [
            ("disabled", "tools/shell"),
            ("shadowed", "tools/shell"),
            ("shadowed", "tools/web_fetch")
        ]
    );
}

#[test]
fn info_exits_3_listing_every_error() {
    let env = Env::new();
    env.project("tools/a.toml", "nonsense");
    env.project("tools/ghost.toml", "disable = true\n");
    env.user("config.toml", "[model]\ndefault = \"x\"\n");
    env.trust();
    let out = env.run(&["info", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let v = json(&out);
    assert_schema_valid(&v);
    assert_eq!(v["status"], "failed");
    let mut codes: Vec<&str> = v["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    codes.sort_unstable();
    assert_eq!(
        codes,
        [
            "compile/disable-without-target",
            "compile/syntax-invalid",
            "config/toml-invalid"
        ]
    );
    assert_eq!(v["diagnostics"]["errors"], 3);
    let text = String::from_utf8_lossy(&env.run(&["info"]).stdout).into_owned();
    assert!(
        text.contains("error[compile/disable-without-target]"),
        "{text}"
    );
}

#[test]
fn explicit_workspaces_are_authorized_repositories() {
    let env = Env::new();
    let other = env.tmp.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    env.write(other.join(".evoflux/tools/deploy.toml"), TOOL);
    let ws = other.to_str().unwrap();
    // Untrusted, the repository's command tool is listed and not loaded.
    let v = json(&env.run(&["info", "--json", "--workspace", ws]));
    let names = |v: &Value| -> Vec<String> {
        v["tools"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert!(!names(&v).contains(&"deploy".to_owned()));
    assert_eq!(v["awaiting_trust"][0]["slot"], "tools/deploy");
    assert_eq!(v["repositories"][0]["trust"]["state"], "untrusted");
    assert_eq!(
        v["diagnostics"]["items"][0]["code"], "trust/withheld",
        "{v:#}"
    );
    env.trust_dir(&other);
    let v = json(&env.run(&["info", "--json", "--workspace", ws]));
    assert_eq!(v["repositories"][0]["trust"]["state"], "trusted");
    assert_eq!(v["awaiting_trust"], serde_json::json!([]));
    assert!(
        v["tools"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["name"] == "deploy")
    );
    let out = env.run(&["info", "--workspace", "/definitely/not/here"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/definitely/not/here"));
}

fn graph_file(env: &Env) -> PathBuf {
    env.tmp.path().join("graph.json")
}

#[test]
fn graph_compile_then_check_and_reject_tampering() {
    let env = Env::new();
    env.project("tools/deploy.toml", TOOL);
    env.trust();
    let file = graph_file(&env);
    let f = file.to_str().unwrap();
    let out = env.run(&["graph", "compile", "--out", f, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written = json(&out);
    let out = env.run(&["graph", "check", f, "--json"]);
    assert!(out.status.success());
    assert_eq!(json(&out)["hash"], written["hash"]);

    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let key = v["bindings"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| k.ends_with("tools/deploy.toml"))
        .unwrap()
        .clone();
    v["bindings"].as_object_mut().unwrap().remove(&key);
    std::fs::write(&file, v.to_string()).unwrap();
    let out = env.run(&["graph", "check", f]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("error[graph/binding-missing]"), "{err}");
    assert!(err.contains(&format!("--> {}", file.display())), "{err}");
}

#[test]
fn graph_compile_refuses_a_graph_with_errors() {
    let env = Env::new();
    env.project("tools/x.toml", "disable = true\n");
    env.trust();
    let file = graph_file(&env);
    let out = env.run(&["graph", "compile", "--out", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    assert!(!file.exists());
    assert!(String::from_utf8_lossy(&out.stderr).contains("compile/disable-without-target"));
}

#[test]
fn graph_bench_reports_json() {
    let env = Env::new();
    let out = env.run(&[
        "graph",
        "bench",
        "--candidates",
        "60",
        "--runs",
        "2",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["candidates"], 60);
    assert_eq!(v["runs"], 2);
    // 20 triples: the user file shadows the admin one in each; and each
    // layer's team derives the delegation tool, so the user layer's
    // derived one shadows the admin layer's and the framework's own.
    assert_eq!(v["shadowed"], 22);
    assert!(v["median_ms"].as_f64().unwrap() >= v["min_ms"].as_f64().unwrap());
    let _ = Path::new("");
}

#[test]
fn info_names_the_instruction_file_that_serves_each_repository() {
    let env = Env::new();
    let claude = env.write(env.repo().join("CLAUDE.md"), "Rules for Claude Code.\n");
    let v = json(&env.run(&["info", "--json"]));
    assert_schema_valid(&v);
    let files = &v["repositories"][0]["instructions"];
    assert_eq!(
        files,
        &serde_json::json!([claude.canonicalize().unwrap()]),
        "{v:#}"
    );
    // AGENTS.md wins in its directory; [compat] instructions = false reads only it.
    let agents = env.write(env.repo().join("AGENTS.md"), "Rules for every agent.\n");
    let v = json(&env.run(&["info", "--json"]));
    assert_eq!(
        v["repositories"][0]["instructions"],
        serde_json::json!([agents.canonicalize().unwrap()])
    );
    std::fs::remove_file(&agents).unwrap();
    env.write(
        env.config().join("config.toml"),
        "[compat]\ninstructions = false\n",
    );
    let v = json(&env.run(&["info", "--json"]));
    assert_eq!(v["repositories"][0]["instructions"], serde_json::json!([]));
    let human = String::from_utf8_lossy(&env.run(&["info"]).stdout).into_owned();
    assert!(!human.contains("CLAUDE.md"), "{human}");
}

/// The standing in WebBridge conversations of every MCP server: a user's
/// `mcp.json` server is hidden (only a plugin can declare
/// `webbridge-safe`), a plugin's server is offered when its manifest
/// declares it and hidden, saying so, when it does not. The same code and
/// reason a WebBridge session reports.
#[test]
fn info_says_which_mcp_servers_webbridge_conversations_offer_and_why_not() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    env.user(
        "mcp.json",
        &serde_json::json!({"mcpServers": {"docs": {"type": "stdio", "command": "docs-server"}}})
            .to_string(),
    );
    let root = env.tmp.path().join("plugins/web");
    env.write(
        root.join("plugin.json"),
        &serde_json::json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "web",
            "version": "1.0.0",
            "extensions": {"org.evoelsewhere.evoflux.mcp": {"servers": {
                "safe": {"capabilities": ["webbridge-safe"]},
                "plain": {"capabilities": []}
            }}}
        })
        .to_string(),
    );
    env.write(
        root.join("mcp.json"),
        &serde_json::json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/mcp.schema.json",
            "mcpServers": {
                "safe": {"type": "stdio", "command": "./bin/server"},
                "plain": {"type": "stdio", "command": "./bin/server"}
            }
        })
        .to_string(),
    );
    let script = env.write(root.join("bin/server"), "#!/bin/sh\nexit 0\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let linked = env.run(&["plugin", "link", root.to_str().unwrap(), "--enabled"]);
    assert!(
        linked.status.success(),
        "{}",
        String::from_utf8_lossy(&linked.stderr)
    );

    let v = json(&env.run(&["info", "--json"]));
    assert_schema_valid(&v);
    let docs = v["connections"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "docs")
        .unwrap();
    assert_eq!(docs["webbridge"]["state"], "hidden", "{docs:#}");
    assert_eq!(docs["webbridge"]["code"], "mcp/webbridge-hidden");
    assert!(
        docs["webbridge"]["reason"]
            .as_str()
            .unwrap()
            .contains("standard conversation"),
        "the reason says what to do: {docs:#}"
    );
    let servers = v["plugin_mcp_servers"].as_array().unwrap();
    let standing = |name: &str| {
        let s = servers.iter().find(|s| s["name"] == name).unwrap();
        assert_eq!(s["plugin"], "web");
        s["webbridge"].clone()
    };
    assert_eq!(
        standing("web/safe"),
        serde_json::json!({"state": "offered"})
    );
    let plain = standing("web/plain");
    assert_eq!(plain["state"], "hidden");
    assert_eq!(plain["code"], "mcp/webbridge-hidden");
    assert!(
        plain["reason"].as_str().unwrap().contains("webbridge-safe"),
        "{plain:#}"
    );

    let human = String::from_utf8_lossy(&env.run(&["info"]).stdout).into_owned();
    assert!(
        human.contains("web/safe") && human.contains("webbridge: offered"),
        "{human}"
    );
    assert!(
        human.contains("webbridge: hidden (mcp/webbridge-hidden)"),
        "{human}"
    );
}

#[test]
fn a_repositorys_remote_agent_waits_for_trust_then_shadows_the_users_on_the_roster() {
    let env = Env::new();
    let user = env.user(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"user-acp\"]\n",
    );
    let other = env.tmp.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    let declared = other.join(".evoflux/config.toml");
    env.write(
        &declared,
        "[agents.external.helper]\ncommand = [\"repo-acp\"]\ncwd = \"scratch\"\n",
    );
    let ws = other.to_str().unwrap();
    // Each lead's roster entry for `helper`: its command, origin and file.
    let helpers = |v: &Value| -> Vec<(String, String, PathBuf)> {
        v["remote_agents"]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["name"] == "helper")
            .map(|e| {
                (
                    e["command"][0].as_str().unwrap().to_owned(),
                    e["provenance"]["origin"].as_str().unwrap().to_owned(),
                    PathBuf::from(e["provenance"]["path"].as_str().unwrap()),
                )
            })
            .collect()
    };
    // Untrusted, the repository's declaration waits; the user's serves.
    let v = json(&env.run(&["info", "--json", "--workspace", ws]));
    assert_schema_valid(&v);
    assert_eq!(v["awaiting_trust"][0]["slot"], "remote-agents/helper");
    let users = ("user-acp".to_owned(), "user".to_owned(), user.clone());
    assert_eq!(helpers(&v), [users.clone(), users]);

    env.trust_dir(&other);
    let v = json(&env.run(&["info", "--json", "--workspace", ws]));
    assert_schema_valid(&v);
    assert_eq!(v["awaiting_trust"], serde_json::json!([]));
    let repos = ("repo-acp".to_owned(), "project".to_owned(), declared);
    assert_eq!(helpers(&v), [repos.clone(), repos]);
    let shadowed: Vec<&Value> = v["composition"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["slot"] == "remote-agents/helper")
        .collect();
    assert_eq!(shadowed.len(), 1, "{v:#}");
    assert_eq!(shadowed[0]["kind"], "shadowed");
    assert_eq!(shadowed[0]["layer"], "user");
}
