//! `evoflux agents` and `evoflux workers` end to end, on the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox as Env, json, stderr_codes};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::{compile_agent_config, load_agents};
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::{BuiltinRegistry, RootOptions};
use serde_json::Value;

impl Env {
    /// Every configuration file (the user config dir and the repository)
    /// with its bytes. Caches are not configuration.
    fn tree(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            let Ok(rd) = std::fs::read_dir(dir) else {
                return;
            };
            for e in rd {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.config(), &mut out);
        walk(&self.repo(), &mut out);
        out
    }
}

#[test]
fn agents_list_shows_both_builtin_teams() {
    let env = Env::new();
    let out = env.run(&["agents", "list", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let modes: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["work", "coding"]);
    let coding = &v[1]["agents"];
    let names: Vec<&str> = coding
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["qualified_name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "coding/architect",
            "coding/coder",
            "coding/debate",
            "coding/evoflux",
            "coding/explorer"
        ]
    );
    let text = env.run(&["agents", "list", "--mode", "work"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("member of evoflux"));
}

#[test]
fn agents_cli_effective_config_equals_library() {
    let env = Env::new();
    env.project(
        "agents/coding/reviewer.md",
        "---\nrole: member\ntools_add: [web_fetch, nope]\ntools_opt_out: [shell]\nskills: [b, a, b]\nx-ui: keep\n---\nReview carefully.\n",
    );
    env.project(
        "agents/coding/coder.md",
        "---\nname: coder\nmodel: openai:gpt-4o\n---\n",
    );
    let out = env.run(&["agents", "compile", "--mode", "coding", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli = json(&out);
    assert_eq!(cli["lead"], "evoflux");
    // The same compile, in the library.
    let graph = evoflux_graph::compile(
        &[
            BuiltinRegistry::framework(),
            evoflux_skills::bundled::registry(),
        ],
        &evoflux_graph::discover::standard_roots(&RootOptions {
            admin_dir: Some(evoflux_app::testing::admin(env.tmp.path())),
            user_config_dir: Some(env.config()),
            home: Some(env.home()),
            workspaces: vec![std::fs::canonicalize(env.repo()).unwrap()],
            trusted: vec![std::fs::canonicalize(env.repo()).unwrap()],
            plugins: Vec::new(),
            foreign_mcp: Vec::new(),
        }),
    )
    .unwrap();
    let tools = ToolCatalog::from_graph(&graph);
    let dir = load_agents(&graph, AppMode::Coding, &mut Diagnostics::new());
    let team = dir.team(None).unwrap();
    let lib: Vec<Value> = std::iter::once(&team.lead)
        .chain(&team.members)
        .map(|n| {
            let e = dir.get(n).unwrap();
            serde_json::to_value(compile_agent_config(
                e.raw.as_ref().unwrap(),
                e.source.clone(),
                &tools,
                &mut Diagnostics::new(),
            ))
            .unwrap()
        })
        .collect();
    assert_eq!(cli["agents"], Value::Array(lib));
    let reviewer = cli["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "reviewer")
        .unwrap();
    assert_eq!(reviewer["skills"], serde_json::json!(["b", "a"]));
    assert!(
        !reviewer["tools"]
            .as_array()
            .unwrap()
            .contains(&Value::from("shell"))
    );
    // The unknown tool is reported, not silently added.
    assert!(stderr_codes(&out).contains(&"agent/tool-unknown".to_owned()));
}

#[test]
fn agents_compile_with_a_second_lead() {
    let env = Env::new();
    env.project("agents/research-lead.md", "---\nrole: lead\n---\n");
    env.project("agents/analyst.md", "---\nlead: research-lead\n---\n");
    let out = env.run(&["agents", "compile", "--lead", "research-lead", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["members"], serde_json::json!(["analyst"]));
    let out = env.run(&["agents", "compile", "--json"]);
    assert!(
        !json(&out)["members"]
            .as_array()
            .unwrap()
            .contains(&Value::from("analyst"))
    );
    let out = env.run(&["agents", "compile", "--lead", "analyst", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["agent/team-invalid"]);
}

#[test]
fn agents_validate_reports_every_problem_and_exits_3() {
    let env = Env::new();
    env.project("agents/a.md", "---\nrole: boss\n---\n");
    env.project("agents/b.md", "---\nlead: ghost\n---\n");
    env.project("agents/aim/c.md", "---\nrole: member\n---\n");
    let out = env.run(&["agents", "validate", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let codes = stderr_codes(&out);
    for code in [
        "agent/role-invalid",
        "agent/lead-unknown",
        "discover/agent-folder-invalid",
    ] {
        assert!(codes.contains(&code.to_owned()), "{code}: {codes:?}");
    }
    assert_eq!(json(&out)["valid"], false);
    let clean = Env::new();
    assert_eq!(
        clean
            .run(&["agents", "validate", "--mode", "coding"])
            .status
            .code(),
        Some(0)
    );
}

#[test]
fn agents_show_and_only_flat_or_coding_names() {
    let env = Env::new();
    let out = env.run(&["agents", "show", "coding/coder", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(v["effective"]["mode"], "coding");
    assert!(
        v["effective"]["prompt"]
            .as_str()
            .unwrap()
            .starts_with("You are the coder.")
    );
    let out = env.run(&["agents", "show", "aim/coder", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr_codes(&out), ["agent/path-invalid"]);
    let out = env.run(&["agents", "show", "nobody", "--json"]);
    assert_eq!(stderr_codes(&out), ["agent/not-found"]);
}

#[test]
fn listing_and_validation_never_write_but_init_does() {
    let env = Env::new();
    env.project("agents/helper.md", "---\nrole: member\nx-unknown: 1\n---\n");
    let before = env.tree();
    for args in [
        &["agents", "list"][..],
        &["agents", "list", "--mode", "coding", "--json"],
        &["agents", "validate", "--mode", "work"],
        &["agents", "show", "helper"],
        &["agents", "compile", "--mode", "coding"],
        &["workers", "list", "--all"],
        &["workers", "validate"],
    ] {
        env.run(args);
        let after = env.tree();
        assert!(
            after == before,
            "{args:?} wrote to the configuration: {:?}",
            after.keys().collect::<Vec<_>>()
        );
    }
    let out = env.run(&["agents", "init", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(json(&out)["created"].as_array().unwrap().len(), 10);
    let seed = std::fs::read_to_string(env.config().join("agents/coding/coder.md")).unwrap();
    assert!(seed.starts_with("---\nname: coder\nrole: member\n"));
    assert!(
        !seed.contains("\ntools:") && !seed.contains("\nskills:"),
        "seeds carry no capability list"
    );
    let again = env.run(&["agents", "init", "--json"]);
    assert_eq!(json(&again)["kept"].as_array().unwrap().len(), 10);
    // Seeds compile exactly like the built-ins they describe.
    let out = env.run(&["agents", "compile", "--mode", "coding", "--json"]);
    let lead = &json(&out)["agents"][0];
    assert_eq!(lead["source"]["kind"], "file");
    assert!(
        lead["prompt"]
            .as_str()
            .unwrap()
            .starts_with("You are evoflux")
    );
}

#[test]
fn workers_list_show_and_validate() {
    let env = Env::new();
    let out = env.run(&["workers", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let ids: Vec<String> = json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect();
    assert!(ids.contains(&"coder".to_owned()) && !ids.contains(&"scout".to_owned()));
    let all = json(&env.run(&["workers", "list", "--all", "--json"]));
    assert_eq!(all.as_array().unwrap().len(), 12);
    assert!(all[0].get("body").is_none() && all[0]["fingerprint"].is_string());
    let show = json(&env.run(&["workers", "show", "scout", "--json"]));
    assert_eq!(show["resultContract"]["kind"], "scout-report");
    assert!(show["body"].as_str().unwrap().contains("Scout"));
    assert_eq!(env.run(&["workers", "validate"]).status.code(), Some(0));
    env.project(
        "workers/sneaky.md",
        "---\nversion: 1\nname: S\ndescription: d\ntools: {required: [read], optional: []}\nskills: []\naudience: base\ncategory: explore\ncapabilityClass: read-only\nlatencyClass: fast\nprojectContextTier: none\nbudget: {toolCalls: 3, readReserve: 1, synthesis: true}\nresultContract: {kind: scout-report}\ntags: []\n---\nLook.\n",
    );
    let out = env.run(&["workers", "validate", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["quarantined"], serde_json::json!(["sneaky"]));
    assert!(stderr_codes(&out).contains(&"worker/audience-invalid".to_owned()));
    let out = env.run(&["workers", "show", "sneaky", "--json"]);
    assert_eq!(out.status.code(), Some(3));
}

/// Remote agents are dispatched like workers: the catalog lists them from
/// the compiled graph with how they are reached.
#[test]
fn workers_list_and_show_name_the_remote_agents_a_lead_reaches() {
    let env = Env::new();
    env.user(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"helper-acp\", \"--stdio\"]\ndescription = \"Helps.\"\n",
    );
    let all = json(&env.run(&["workers", "list", "--json"]));
    let remote: Vec<&Value> = all
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("remote").is_some())
        .collect();
    assert_eq!(remote.len(), 1, "{all:#}");
    assert_eq!(remote[0]["id"], "helper");
    assert_eq!(remote[0]["remote"]["protocol"], "acp");
    assert_eq!(
        remote[0]["remote"]["command"],
        serde_json::json!(["helper-acp", "--stdio"])
    );
    let text = env.run(&["workers", "list"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("helper ") && l.contains("remote=acp:helper-acp --stdio")),
        "{text}"
    );
    let show = json(&env.run(&["workers", "show", "helper", "--json"]));
    assert_eq!(show["description"], "Helps.");
    assert_eq!(show["remote"]["command"][0], "helper-acp");
    // A recipe is shown as before.
    let coder = json(&env.run(&["workers", "show", "coder", "--json"]));
    assert!(coder.get("remote").is_none(), "{coder:#}");
}

#[test]
fn workers_check_result_accepts_and_rejects() {
    let env = Env::new();
    let file = env.tmp.path().join("out.txt");
    std::fs::write(
        &file,
        "```json\n{\"verdict\":\"fail\",\"checks\":[{\"name\":\"cargo test\",\"passed\":false,\"evidence\":\"exit 101\"}]}\n```\n",
    )
    .unwrap();
    let f = file.to_str().unwrap();
    let out = env.run(&["workers", "check-result", "verifier-report", f, "--json"]);
    assert_eq!(out.status.code(), Some(0));
    let v = json(&out);
    assert_eq!(
        (v["conformance"].as_str(), v["quality"].as_str()),
        (Some("pass"), Some("fail"))
    );
    let out = env.run(&["workers", "check-result", "mutation-report", f, "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        json(&out)["reason"],
        "Mutation result must carry mutatedPaths and validations"
    );
    let out = env.run(&[
        "workers",
        "check-result",
        "architect-plan",
        f,
        "--path",
        "PLAN.md",
    ]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stdout).contains("required plan artifact is missing"));
    std::fs::write(env.repo().join("PLAN.md"), "# Plan\n").unwrap();
    let out = env.run(&[
        "workers",
        "check-result",
        "architect-plan",
        f,
        "--path",
        "PLAN.md",
    ]);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        env.run(&["workers", "check-result", "nope", f])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn agents_show_and_compile_mark_no_built_tool_as_missing() {
    let env = Env::new();
    let v = env.json(&["agents", "show", "coding/evoflux", "--json"]);
    let tools: Vec<&str> = v["effective"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert!(tools.contains(&"web_search"), "{tools:?}");
    // web_search is a provider tool now built (whether a session has it is
    // its provider's matter), and delegation and tasks run: none is marked.
    let gaps = v["tools_not_in_build"].as_array().unwrap();
    assert!(gaps.is_empty(), "{gaps:?}");
    let text = String::from_utf8_lossy(&env.run(&["agents", "show", "coding/evoflux"]).stdout)
        .into_owned();
    let line = text.lines().find(|l| l.starts_with("tools: ")).unwrap();
    assert!(line.contains("web_search"), "{line}");
    assert!(!line.contains("not in this build"), "{line}");

    let v = env.json(&["agents", "compile", "--mode", "coding", "--json"]);
    let gaps = v["tools_not_in_build"].as_array().unwrap();
    assert!(gaps.is_empty(), "{gaps:?}");
    let text = String::from_utf8_lossy(&env.run(&["agents", "compile", "--mode", "coding"]).stdout)
        .into_owned();
    assert!(!text.contains("not in this build"), "{text}");
}

#[test]
fn agents_validate_names_a_file_with_broken_front_matter_and_exits_3() {
    let env = Env::new();
    let broken = env.project("agents/broken.md", "---\nrole: [lead\n---\nHi.\n");
    let out = env.run(&["agents", "validate", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["valid"], false);
    let diags: Value = serde_json::from_slice(&out.stderr).unwrap();
    let named: Vec<&Value> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| {
            d["locator"]["file"]
                .as_str()
                .is_some_and(|f| Path::new(f).ends_with("agents/broken.md"))
        })
        .collect();
    assert!(
        named.iter().any(|d| d["severity"] == "error"),
        "no error names {}: {diags}",
        broken.display()
    );
    let text = env.run(&["agents", "validate"]);
    assert_eq!(text.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&text.stderr).contains("broken.md"));
    // The other mode is still valid.
    assert_eq!(
        env.run(&["agents", "validate", "--mode", "coding"])
            .status
            .code(),
        Some(0)
    );
    // The listing cannot show it as an agent, so it says why not.
    let out = env.run(&["agents", "list", "--json"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("broken.md"));
    assert!(!stderr_codes(&out).is_empty());
}

#[test]
fn unknown_agent_keys_are_warnings_naming_the_key_and_the_file() {
    let env = Env::new();
    env.project("agents/helper.md", "---\nrole: member\ncolour: blue\n---\n");
    let out = env.run(&["agents", "validate", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diags: Value = serde_json::from_slice(&out.stderr).unwrap();
    let unknown: Vec<&Value> = diags["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "agent/key-unknown")
        .collect();
    assert_eq!(unknown.len(), 1, "{diags}");
    assert_eq!(unknown[0]["severity"], "warning");
    let text = unknown[0].to_string();
    assert!(text.contains("colour"), "{text}");
    assert!(text.contains("helper.md"), "{text}");
    assert_eq!(json(&out)["warnings"], 1);
}

/// Writes a scripted model that answers once.
fn hello_model(env: &Env) -> String {
    let path = env.tmp.path().join("hello.yaml");
    std::fs::write(&path, "turns:\n  - reply: {text: hi}\n").unwrap();
    format!("scripted:{}", path.display())
}

#[test]
fn an_unknown_lead_lists_the_leads_and_coding_names_resolve() {
    let env = Env::new();
    let model = hello_model(&env);
    // `run`: exit 3, the valid leads named.
    let out = env.run(&["run", "--model", &model, "--lead", "nosuch", "hi"]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(err.contains("nosuch") && err.contains("evoflux"), "{err}");
    // `coding/<name>`, as `agents show` takes it.
    let out = env.run(&[
        "--json",
        "run",
        "--mode",
        "coding",
        "--model",
        &model,
        "--lead",
        "coding/evoflux",
        "hi",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let started: Value = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "session_started")
        .unwrap();
    assert_eq!(started["lead"], "evoflux");
    // A Coding name is no Work lead.
    let out = env.run(&["run", "--model", &model, "--lead", "coding/evoflux", "hi"]);
    assert_eq!(out.status.code(), Some(3));

    // `agents compile` and `agents list` resolve leads the same way.
    let v = env.json(&[
        "agents",
        "compile",
        "--mode",
        "coding",
        "--lead",
        "coding/evoflux",
        "--json",
    ]);
    assert_eq!(v["lead"], "evoflux");
    let out = env.run(&["agents", "compile", "--lead", "nosuch", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stderr_codes(&out), ["agent/team-invalid"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("evoflux"));
    let listed = env.json(&[
        "agents",
        "list",
        "--mode",
        "coding",
        "--lead",
        "coding/evoflux",
        "--json",
    ]);
    assert!(!listed[0]["agents"].as_array().unwrap().is_empty());
    let out = env.run(&["agents", "list", "--lead", "nosuch", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr_codes(&out).iter().all(|c| c == "agent/team-invalid"));
}

#[test]
fn validate_warns_about_an_mcp_server_no_one_defines() {
    let s = Env::new();
    s.project(
        "mcp.json",
        r#"{"mcpServers": {"docs": {"type": "stdio", "command": "docs-server"}}}"#,
    );
    s.project(
        "agents/reader.md",
        "---\nrole: member\ndescription: Reads the docs.\nmcp: [docs, nosuch, other/svc]\n---\nRead.\n",
    );
    s.trust();
    let out = s.run(&["--json", "agents", "validate", "--mode", "work"]);
    assert!(out.status.success(), "warnings do not fail validation");
    let codes = stderr_codes(&out);
    assert_eq!(
        codes
            .iter()
            .filter(|c| *c == "agent/mcp-server-unknown")
            .count(),
        2,
        "{codes:?}"
    );
    let v: Value = serde_json::from_slice(&out.stderr).unwrap();
    let named: Vec<String> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "agent/mcp-server-unknown")
        .map(|d| d["message"].as_str().unwrap().to_owned())
        .collect();
    assert!(named.iter().any(|m| m.contains("`nosuch`")), "{named:?}");
    assert!(named.iter().any(|m| m.contains("`other/svc`")), "{named:?}");
    assert!(!named.iter().any(|m| m.contains("`docs`,")), "{named:?}");
}
