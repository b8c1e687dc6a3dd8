//! What a Claude Code, codex or opencode user already wrote works here as
//! it is, through the real binary: Claude's permission rules become
//! approval rules (a mapped allow runs without asking, a deny refuses,
//! the rest is named in one warning), the user's own `~/.codex/AGENTS.md`
//! and `~/.claude/CLAUDE.md` join the instructions, `@path` imports are
//! inlined inside the repository only, opencode's MCP servers are listed
//! and started, and `info`/`doctor` show the MCP bounds. Every file lives
//! in the sandbox's home and repository; none is ever written.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::fake_model::FakeModel;
use common::{Sandbox, of_type, run_ok, script};
use serde_json::{Value, json};

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {report}"))
}

fn finding<'a>(check: &'a Value, code: &str) -> Option<&'a Value> {
    check["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["code"] == code)
}

fn doctor(s: &Sandbox) -> Value {
    let model = script(s, "doctor.yaml", "turns:\n  - reply: {text: hello}\n");
    let out = s
        .command(&["doctor", "--json", "--mcp-wait", "20", "--model", &model])
        .env("PATH", std::env::var("PATH").unwrap())
        .output()
        .unwrap();
    common::json(&out)
}

const SETTINGS: &str = r#"{
  "model": "sonnet",
  "permissions": {
    "allow": ["Bash(touch:*)", "Task", "Bash(git * main)"],
    "deny": ["Bash(rm:*)"]
  }
}"#;

fn shell(command: &str) -> Value {
    json!({"name": "shell", "arguments": {"command": command}})
}

#[test]
fn claude_permission_rules_allow_without_asking_deny_and_name_the_rest() {
    let s = Sandbox::new();
    // evoflux's own setting asks before every command.
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let settings = s.write(s.repo().join(".claude/settings.json"), SETTINGS);
    s.write(s.repo().join("keep.txt"), "kept");
    s.trust();
    let model = script(
        &s,
        "rules.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {}\n  - expect: {{tool_result: {{contains: Succeeded}}}}\n    reply:\n      tool_calls:\n        - {}\n  - expect: {{tool_result: {{contains: \"denied by the rule `Bash(rm:*)`\"}}}}\n    reply: {{text: done}}\n",
            shell("touch made.txt"),
            shell("rm -f keep.txt")
        ),
    );
    let events = run_ok(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(
        s.repo().join("made.txt").exists(),
        "the allowed command ran"
    );
    assert!(s.repo().join("keep.txt").exists(), "the denied one did not");
    assert!(
        of_type(&events, "approval_requested").is_empty(),
        "nothing was asked: {events:#?}"
    );
    let denied: Vec<&Value> = of_type(&events, "warning")
        .into_iter()
        .filter(|w| w["code"] == "approval/denied-by-rule")
        .collect();
    assert_eq!(denied.len(), 1, "{events:#?}");

    // doctor names the file, how many rules apply, and each entry that
    // has no meaning here, in one warning.
    let report = doctor(&s);
    let other = check(&report, "other-harnesses");
    let details = other["details"].to_string();
    assert!(
        details.contains(&format!(
            "{}: 2 permission rules applied",
            settings.canonicalize().unwrap().display()
        )),
        "{details}"
    );
    let unmapped = finding(other, "claude/permission-not-mapped").unwrap();
    assert_eq!(unmapped["severity"], "warning");
    let message = unmapped["message"].as_str().unwrap();
    assert!(
        message.contains("allow: Task") && message.contains("allow: Bash(git * main)"),
        "{message}"
    );
    assert!(
        unmapped["locator"]["file"]
            .as_str()
            .unwrap()
            .ends_with(".claude/settings.json")
    );
    assert_eq!(
        std::fs::read_to_string(&settings).unwrap(),
        SETTINGS,
        "never written"
    );
}

#[test]
fn an_untrusted_repository_s_allow_rules_wait_and_its_denies_apply() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    s.write(s.repo().join(".claude/settings.local.json"), SETTINGS);
    s.write(s.repo().join("keep.txt"), "kept");
    let model = script(
        &s,
        "untrusted.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {}\n  - expect: {{tool_result: {{contains: \"non-interactive\"}}}}\n    reply:\n      tool_calls:\n        - {}\n  - expect: {{tool_result: {{contains: \"denied by the rule\"}}}}\n    reply: {{text: done}}\n",
            shell("touch made.txt"),
            shell("rm -f keep.txt")
        ),
    );
    run_ok(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(!s.repo().join("made.txt").exists());
    assert!(s.repo().join("keep.txt").exists());
    let report = doctor(&s);
    assert!(
        finding(
            check(&report, "other-harnesses"),
            "claude/permission-allow-untrusted"
        )
        .is_some(),
        "{report:#}"
    );
    // `[compat] permissions = false` reads none of them.
    s.user(
        "config.toml",
        "[approval]\nshell = \"never\"\n[compat]\npermissions = false\n",
    );
    let model = script(
        &s,
        "off.yaml",
        &format!(
            "turns:\n  - reply:\n      tool_calls:\n        - {}\n  - expect: {{tool_result: {{contains: Succeeded}}}}\n    reply: {{text: done}}\n",
            shell("rm -f keep.txt")
        ),
    );
    run_ok(
        &s,
        &["--json", "run", "--mode", "coding", "--model", &model, "go"],
    );
    assert!(!s.repo().join("keep.txt").exists());
}

#[test]
fn the_user_s_own_instruction_files_and_imports_reach_the_model() {
    let fake = FakeModel::start();
    let s = Sandbox::new();
    s.user(
        "config.toml",
        &format!(
            "[providers.fake]\nkind = \"openai\"\nbase_url = \"{}\"\n",
            fake.url
        ),
    );
    let home = s.home();
    let codex = s.write(home.join(".codex/AGENTS.md"), "CODEX-USER-RULE\n");
    let claude = s.write(
        home.join(".claude/CLAUDE.md"),
        "CLAUDE-USER-RULE\n@~/.claude/extra.md\n",
    );
    s.write(home.join(".claude/extra.md"), "USER-IMPORT-RULE\n");
    s.write(
        s.repo().join("CLAUDE.md"),
        "REPO-RULE\n@docs/style.md\n@../outside.md\n`@docs/style.md` stays text\n",
    );
    s.write(s.repo().join("docs/style.md"), "REPO-IMPORT-RULE\n");
    s.write(s.tmp.path().join("outside.md"), "OUTSIDE-SECRET\n");
    let events = run_ok(
        &s,
        &[
            "--json", "run", "--mode", "coding", "--model", "fake:m", "hi",
        ],
    );
    let bodies = fake.take();
    let body = bodies
        .iter()
        .find(|b| b.contains("REPO-RULE"))
        .unwrap_or_else(|| panic!("no request with the instructions: {bodies:#?}"));
    let at = |needle: &str| {
        body.find(needle)
            .unwrap_or_else(|| panic!("{needle} not sent: {body}"))
    };
    // The user's files first, then the repository's; imports inlined.
    assert!(at("CODEX-USER-RULE") < at("CLAUDE-USER-RULE"));
    assert!(at("CLAUDE-USER-RULE") < at("USER-IMPORT-RULE"));
    assert!(at("USER-IMPORT-RULE") < at("REPO-RULE"));
    assert!(at("REPO-RULE") < at("REPO-IMPORT-RULE"));
    assert_eq!(body.matches("REPO-IMPORT-RULE").count(), 1, "{body}");
    assert!(!body.contains("OUTSIDE-SECRET"), "outside the repository");
    let outside: Vec<&Value> = of_type(&events, "warning")
        .into_iter()
        .filter(|w| w["code"] == "instructions/import-outside")
        .collect();
    assert_eq!(outside.len(), 1, "{events:#?}");

    // info and doctor show them.
    let info = s.json(&["info", "--json"]);
    assert_eq!(
        info["user_instructions"],
        json!([codex.display().to_string(), claude.display().to_string()])
    );
    let human = String::from_utf8_lossy(&s.run(&["info"]).stdout).into_owned();
    assert!(
        human.contains(&format!("user instructions  {}", claude.display())),
        "{human}"
    );
    let report = doctor(&s);
    let other = check(&report, "other-harnesses");
    let details = other["details"].to_string();
    assert!(
        details.contains(&format!(
            "{}: your instructions, before every repository's",
            codex.display()
        )),
        "{details}"
    );
    assert!(details.contains("imports"), "{details}");
    assert!(finding(other, "instructions/import-outside").is_some());
    // Switched off with the other harnesses' instruction files.
    s.user("config.toml", "[compat]\ninstructions = false\n");
    let info = s.json(&["info", "--json"]);
    assert!(info.get("user_instructions").is_none(), "{info:#}");
}

#[test]
fn opencode_servers_are_listed_started_and_opted_out_like_the_others() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.write(
        s.repo().join("opencode.json"),
        &json!({
            "$schema": "https://opencode.ai/config.json",
            "mcp": {
                "oc-project": {"type": "local", "command": [bin, "--filler-tools", "1"],
                               "environment": {"CONFIGURED": "1"}, "enabled": true},
                "oc-off": {"type": "local", "command": ["never-started"], "enabled": false}
            }
        })
        .to_string(),
    );
    s.write(
        s.home().join(".config/opencode/opencode.json"),
        &json!({"mcp": {"oc-user": {"type": "local", "command": [bin]}}}).to_string(),
    );
    s.trust();
    let list = s.json(&["mcp", "list", "--json"]);
    let servers: Vec<(&str, &str, &str)> = list["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["server"].as_str().unwrap(),
                s["owner"]["layer"].as_str().unwrap_or_default(),
                s["state"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        servers,
        [
            ("oc-project", "project", "ready"),
            ("oc-user", "user", "ready")
        ],
        "{list:#}"
    );
    let out = s.run(&[
        "mcp",
        "call",
        "oc-project",
        "echo",
        "--args",
        r#"{"message": "hi"}"#,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Echo: hi\n");
    let info = s.json(&["info", "--json"]);
    let folders: Vec<&str> = info["connections"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["source"]["owner"]["folder"].as_str().unwrap())
        .collect();
    assert_eq!(folders, ["opencode", "opencode"]);
    let report = doctor(&s);
    assert!(
        check(&report, "other-harnesses")["details"]
            .to_string()
            .contains("opencode.json"),
        "{report:#}"
    );
    s.user("config.toml", "[compat]\nmcp = [\"codex\"]\n");
    let list = s.json(&["mcp", "list", "--json"]);
    assert_eq!(list["servers"], json!([]), "{list:#}");
}

#[test]
fn info_and_doctor_show_the_mcp_bounds() {
    let s = Sandbox::new();
    let info = s.json(&["info", "--json"]);
    assert_eq!(
        info["mcp_bounds"],
        json!({"max_result_mib": 8, "max_result_set": false, "call_timeout_secs": 300,
               "start_timeout_secs": 10})
    );
    s.user("config.toml", "[mcp]\nmax_result_mib = 2\n");
    let info = s.json(&["info", "--json"]);
    assert_eq!(info["mcp_bounds"]["max_result_mib"], 2);
    assert_eq!(info["mcp_bounds"]["max_result_set"], true);
    let human = String::from_utf8_lossy(&s.run(&["info"]).stdout).into_owned();
    assert!(
        human.contains("mcp      results up to 2 MiB ([mcp] max_result_mib), 300s per call"),
        "{human}"
    );
    let report = doctor(&s);
    let details = check(&report, "mcp")["details"].to_string();
    assert!(
        details.contains("bounds: each call's result up to 2 MiB ([mcp] max_result_mib)"),
        "{details}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_api_adds_to_either_scope_with_force_and_shows_claude_agents_read_only() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    s.write(
        s.home().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep\n---\nReview.\n",
    );
    s.trust();
    let mut server = common::server::Server::start(&s, &[]);
    let bin = bin.to_str().unwrap().to_owned();
    let entry = json!({"type": "stdio", "command": bin});
    let wider = json!({"type": "stdio", "command": bin, "args": ["--filler-tools", "1"]});

    // The repository's mcp.json: written, and waiting for trust.
    let (status, added) = server
        .call(
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "proj", "entry": entry, "scope": "project"})),
        )
        .await;
    assert_eq!(status, 202, "{added}");
    assert_eq!(added["state"], "awaiting-trust");
    assert_eq!(added["action"], "added");
    let project_file = s.repo().join(".evoflux/mcp.json");
    assert_eq!(added["file"], json!(project_file));
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(&project_file).unwrap()).unwrap();
    assert_eq!(on_disk["mcpServers"]["proj"], entry);
    // The same name again is refused; with `force` it is replaced.
    let again = json!({"name": "proj", "entry": wider, "scope": "project"});
    let (status, refused) = server
        .call("POST", "/api/mcp/servers", Some(again.clone()))
        .await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("mcp/server-exists"))
    );
    let mut forced = again;
    forced["force"] = json!(true);
    let (status, replaced) = server.call("POST", "/api/mcp/servers", Some(forced)).await;
    assert_eq!(status, 202, "{replaced}");
    assert_eq!(replaced["action"], "replaced");
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(&project_file).unwrap()).unwrap();
    assert_eq!(on_disk["mcpServers"]["proj"], wider);
    assert!(
        !s.config().join("mcp.json").exists()
            || !std::fs::read_to_string(s.config().join("mcp.json"))
                .unwrap()
                .contains("proj"),
        "the user's file is not touched"
    );

    // The user's own, with `force` over one of its own.
    let (status, mine) = server
        .call(
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "mine", "entry": entry})),
        )
        .await;
    assert_eq!(status, 201, "{mine}");
    let (status, mine) = server
        .call(
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "mine", "entry": wider, "scope": "user", "force": true})),
        )
        .await;
    assert_eq!(status, 201, "{mine}");
    assert_eq!(mine["entry"], wider);

    // A Claude Code subagent is Claude's file: read-only in the editor.
    let (status, agent) = server
        .call("GET", "/api/agents/coding/reviewer", None)
        .await;
    assert_eq!(status, 200, "{agent}");
    assert_eq!(agent["claude"], true);
    assert_eq!(agent["editable"], false);
    server.stop();
}

/// The control labelled `label` in the page, as a JS expression.
fn labelled(scope: &str, label: &str) -> String {
    format!(
        "(() => {{ const l = [...document.querySelectorAll('{scope} label')].find(l => l.textContent === '{label}'); return l && document.getElementById(l.htmlFor); }})()"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_web_ui_shows_a_claude_agent_read_only_and_adds_a_server_to_the_repository() {
    let Some(browser) = common::webdriver::Browser::start().await else {
        return;
    };
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let agent = s.write(
        s.home().join(".claude/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews code.\ntools: Read, Grep\n---\nReview.\n",
    );
    s.trust();
    let server = common::server::Server::start(&s, &[]);
    // Claude's subagents are Coding agents.
    browser.open_ui(&server, "settings/agents").await;
    browser.click("button[data-mode=coding]").await;
    browser
        .goto(&format!("{}/#/settings/agents/reviewer", server.url))
        .await;
    browser
        .wait("document.querySelector('.agent-editor .claude-agent')")
        .await;
    let description = labelled(".agent-editor", "Description");
    browser
        .wait(&format!("{description} && {description}.disabled"))
        .await;
    let buttons = browser
        .js(
            "return [...document.querySelectorAll('.agent-editor button')].map(b => b.textContent)",
            json!([]),
        )
        .await;
    let buttons: Vec<&str> = buttons
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(
        !buttons
            .iter()
            .any(|b| b.starts_with("Save") || *b == "Delete"),
        "{buttons:?}"
    );
    browser.screenshot("claude-agent-read-only").await;
    assert!(
        std::fs::read_to_string(&agent)
            .unwrap()
            .starts_with("---\nname: reviewer")
    );

    // The MCP editor: the repository's file, as `mcp add --scope project`.
    browser.open_ui(&server, "settings/mcp").await;
    browser.click_text("Add server").await;
    browser.wait("document.getElementById('mcp-force')").await;
    browser
        .js(
            &format!(
                "{}.value = 'from-web'; {}.value = arguments[0]; {}.value = 'project'; document.getElementById('mcp-force').checked = true;",
                labelled("section", "Name"),
                labelled("section", "Command"),
                labelled("section", "Save to")
            ),
            json!([bin.to_str().unwrap()]),
        )
        .await;
    browser.click_text("Save server").await;
    browser
        .wait("document.body.innerText.includes('starts once you trust')")
        .await;
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(s.repo().join(".evoflux/mcp.json")).unwrap())
            .unwrap();
    assert_eq!(
        on_disk["mcpServers"]["from-web"]["command"],
        json!(bin.to_str().unwrap())
    );
}
