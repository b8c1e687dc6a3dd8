//! `evoflux doctor` on a healthy setup (exit 0) and on a broken one (exit
//! 3, each problem named by its code), through the real binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, json};
use serde_json::{Value, json};

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {report}"))
}

fn codes(c: &Value) -> Vec<String> {
    c["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect()
}

fn doctor(s: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, Value) {
    let mut all = vec!["doctor", "--json", "--mcp-wait", "20"];
    all.extend_from_slice(args);
    let mut cmd = s.command(&all);
    cmd.env("PATH", std::env::var("PATH").unwrap());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), json(&out))
}

#[test]
fn a_healthy_setup_passes_every_check() {
    let Some(server) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let model = common::script(&s, "hello.yaml", "turns:\n  - reply: {text: hello}\n");
    s.user(
        "skills/notes/SKILL.md",
        "---\nname: notes\ndescription: Keeps notes of a session.\n---\nWrite notes.\n",
    );
    s.user(
        "config.toml",
        "[providers.team]\nkind = \"openai\"\nbase_url = \"https://llm.example.com/v1\"\napi_key_env = \"TEAM_KEY\"\n",
    );
    // A server set up for Claude Code in the repository.
    s.write(
        s.repo().join(".mcp.json"),
        &json!({"mcpServers": {"tools": {"command": server}}}).to_string(),
    );
    s.trust();
    let (code, report) = doctor(&s, &["--model", &model], &[("TEAM_KEY", "k-secret-1")]);
    assert_eq!(code, Some(0), "{report:#}");
    assert_eq!(report["healthy"], true);
    let names: Vec<&str> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "data-dir",
            "sources",
            "keys",
            "model",
            "mcp",
            "skills",
            "agents",
            "sandbox",
            "other-harnesses",
            "commands"
        ]
    );
    for c in report["checks"].as_array().unwrap() {
        assert_ne!(c["status"], "problem", "{c:#}");
    }
    assert_eq!(check(&report, "mcp")["status"], "ok");
    assert_eq!(check(&report, "mcp")["summary"], "1 of 1 servers ready");
    let keys = check(&report, "keys")["details"].to_string();
    assert!(keys.contains("TEAM_KEY is set"), "{keys}");
    assert!(
        !report.to_string().contains("k-secret-1"),
        "a key value was shown"
    );
    // The sandbox check reports what the kernel gives each layer, as a
    // confined command sees it (run as root in CI, where bubblewrap keeps
    // every capability unless told otherwise).
    let sandbox = check(&report, "sandbox")["details"].to_string();
    if check(&report, "sandbox")["summary"]
        .as_str()
        .is_some_and(|s| s.starts_with("commands are confined"))
    {
        for layer in [
            "capabilities: none, and no new privileges",
            "seccomp: ",
            "process limit: ",
            "landlock: ",
        ] {
            assert!(sandbox.contains(layer), "{layer} missing: {sandbox}");
        }
    }
    let other = check(&report, "other-harnesses")["details"].to_string();
    assert!(other.contains(".mcp.json"), "{other}");
    assert_eq!(check(&report, "skills")["status"], "ok");
    assert!(
        check(&report, "model")["details"]
            .to_string()
            .contains("the script loads")
    );
}

#[test]
fn a_broken_setup_names_each_problem() {
    let s = Sandbox::new();
    // A port nothing listens on.
    let port = common::free_port();
    s.user(
        "config.toml",
        &format!(
            "[model]\ndefault = \"remote:m\"\n\n[providers.remote]\nkind = \"openai\"\n\
             base_url = \"http://127.0.0.1:{port}/v1\"\napi_key_env = \"REMOTE_KEY\"\n"
        ),
    );
    s.user(
        "mcp.json",
        &json!({"mcpServers": {"gone": {"command": "/nonexistent/evoflux-mcp-server"}}})
            .to_string(),
    );
    s.user(
        "skills/broken/SKILL.md",
        "---\nname: other-name\n---\nno description\n",
    );
    let (code, report) = doctor(
        &s,
        &["--model-timeout", "20"],
        &[("REMOTE_KEY", "k-2"), ("PATH", "/nonexistent")],
    );
    assert_eq!(code, Some(3), "{report:#}");
    assert_eq!(report["healthy"], false);
    let expect = [
        ("model", "doctor/model-unreachable"),
        ("mcp", "doctor/mcp-failed"),
        ("skills", "doctor/skill-invalid"),
        ("sandbox", "doctor/sandbox-unavailable"),
    ];
    for (name, code) in expect {
        let c = check(&report, name);
        assert_eq!(c["status"], "problem", "{c:#}");
        assert!(codes(c).contains(&code.to_owned()), "{name}: {c:#}");
    }
    // Without the key the model is not called, and the key is named.
    let (code, report) = doctor(&s, &[], &[]);
    assert_eq!(code, Some(3));
    let keys = check(&report, "keys");
    assert_eq!(codes(keys), ["doctor/key-missing"]);
    assert!(
        keys["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("REMOTE_KEY")
    );
    assert_eq!(check(&report, "model")["status"], "skipped");
}
