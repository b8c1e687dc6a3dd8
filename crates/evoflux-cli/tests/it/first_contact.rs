//! What a new user hit on first contact (issue #54, "smaller things"),
//! each through the real binary where the user meets it: a broken agent
//! file shown by name, a member hiding a worker, a flood of warnings
//! summarized, an archive inspected, a duplicate manifest key refused,
//! `serve --host localhost`, `.env` left out of an installed copy, and
//! an invalid schedule named when it is run.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::Path;
use std::process::Output;

use common::{Sandbox, json, stderr_codes};
use serde_json::Value;

/// The `--json` diagnostics a run printed on stderr.
fn stderr_diagnostics(out: &Output) -> Vec<Value> {
    let v: Value = serde_json::from_slice(&out.stderr).unwrap_or_else(|e| {
        panic!(
            "stderr not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    v["diagnostics"].as_array().unwrap().clone()
}

fn find<'a>(diags: &'a [Value], code: &str) -> &'a Value {
    diags
        .iter()
        .find(|d| d["code"] == code)
        .unwrap_or_else(|| panic!("no {code} in {diags:#?}"))
}

const BROKEN_FRONT_MATTER: &str = "---\nrole: member\ntools: [read\n---\nHelp.\n";

#[test]
fn agents_show_on_a_broken_agent_file_shows_its_diagnostic() {
    let s = Sandbox::new();
    let file = s.project("agents/coding/broken.md", BROKEN_FRONT_MATTER);
    let out = s.run(&["--json", "agents", "show", "coding/broken"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diags = stderr_diagnostics(&out);
    assert!(
        !diags.iter().any(|d| d["code"] == "agent/not-found"),
        "{diags:#?}"
    );
    let d = find(&diags, "frontmatter/yaml-invalid");
    assert_eq!(d["locator"]["file"], file.to_str().unwrap());
    assert!(d["locator"]["line"].as_u64().is_some(), "{d}");
    // The human form names the file and line too.
    let out = s.run(&["agents", "show", "coding/broken"]);
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("frontmatter/yaml-invalid"), "{text}");
    assert!(text.contains("broken.md:"), "{text}");

    // A broken file over a built-in of the same name is not shown as the
    // built-in, valid and silent.
    let over = s.project("agents/coding/coder.md", BROKEN_FRONT_MATTER);
    let out = s.run(&["--json", "agents", "show", "coding/coder"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(json(&out)["valid"], false);
    let d = find(&stderr_diagnostics(&out), "frontmatter/yaml-invalid").clone();
    assert_eq!(d["locator"]["file"], over.to_str().unwrap());
}

#[test]
fn a_member_named_like_a_builtin_worker_warns_that_it_shadows_it() {
    let s = Sandbox::new();
    // Nothing is reported for the built-in team as it ships.
    let out = s.run(&["--json", "agents", "validate", "--mode", "coding"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stderr.is_empty()
            || !stderr_codes(&out).contains(&"agent/member-shadows-worker".to_owned())
    );

    let file = s.project(
        "agents/coding/tester.md",
        "---\nrole: member\ndescription: Runs our test suite.\n---\nRun the tests.\n",
    );
    let out = s.run(&["--json", "agents", "validate", "--mode", "coding"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning, not an error: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diags = stderr_diagnostics(&out);
    let d = find(&diags, "agent/member-shadows-worker");
    assert_eq!(d["severity"], "warning");
    assert_eq!(d["locator"]["file"], file.to_str().unwrap());
    assert_eq!(
        diags
            .iter()
            .filter(|d| d["code"] == "agent/member-shadows-worker")
            .count(),
        1,
        "{diags:#?}"
    );
    // Showing the member says it too.
    let out = s.run(&["--json", "agents", "show", "coding/tester"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(stderr_codes(&out).contains(&"agent/member-shadows-worker".to_owned()));
}

#[test]
fn validate_summarizes_ten_thousand_identical_warnings() {
    let s = Sandbox::new();
    let keys: String = (0..10_000).map(|i| format!("unknown_{i}: 1\n")).collect();
    s.project(
        "agents/coding/many.md",
        &format!("---\nrole: member\n{keys}---\nHelp.\n"),
    );
    let out = s.run(&["agents", "validate", "--mode", "coding"]);
    assert_eq!(out.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().count() < 300,
        "{} lines",
        stderr.lines().count()
    );
    assert!(
        stderr.contains("… and 9950 more not shown (agent/key-unknown ×9950)"),
        "{stderr}"
    );
    let out = s.run(&["--json", "agents", "validate", "--mode", "coding"]);
    let listed = stderr_diagnostics(&out);
    assert_eq!(
        listed
            .iter()
            .filter(|d| d["code"] == "agent/key-unknown")
            .count(),
        10_000
    );

    // A worker recipe with as many unknown keys: each is counted once,
    // as the error that quarantines the recipe, not once more as a
    // warning.
    let (_, tester) = evoflux_agents::worker::FRAMEWORK_WORKERS
        .iter()
        .find(|(id, _)| *id == "tester")
        .unwrap();
    let recipe = tester
        .replacen("name: Tester", "name: Mine", 1)
        .replacen("audience: base", "audience: custom", 1)
        .replacen("\n---\n", &format!("\n{keys}---\n"), 1);
    s.project("workers/mine.md", &recipe);
    let out = s.run(&["workers", "validate"]);
    assert_eq!(out.status.code(), Some(3));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().count() < 300,
        "{} lines",
        stderr.lines().count()
    );
    assert!(stderr.contains("more not shown"), "{stderr}");
    let out = s.run(&["--json", "workers", "validate"]);
    let listed = stderr_diagnostics(&out);
    let unknown: Vec<&Value> = listed
        .iter()
        .filter(|d| d["code"] == "worker/key-unknown")
        .collect();
    assert_eq!(unknown.len(), 10_000);
    assert!(unknown.iter().all(|d| d["severity"] == "error"));
}

/// `plugin create` in the sandbox, returning the folder.
fn new_plugin(s: &Sandbox, name: &str) -> std::path::PathBuf {
    let dir = s.tmp.path().join(name);
    let out = s.run(&["plugin", "create", dir.to_str().unwrap(), "--name", name]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

#[test]
fn plugin_inspect_takes_an_evoplugin_archive() {
    let s = Sandbox::new();
    let dir = new_plugin(&s, "demo");
    let packed = s.json(&["--json", "plugin", "pack", dir.to_str().unwrap()]);
    let archive = packed["path"].as_str().unwrap();
    let out = s.run(&["--json", "plugin", "inspect", archive]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let inspection = json(&out);
    assert_eq!(inspection["valid"], true, "{inspection}");
    assert_eq!(inspection["manifest"]["name"], "demo");
    assert_eq!(inspection["root"], archive);
    // What it shows names the archive, not a staging folder gone by now.
    let skill = inspection["skills"][0]["path"].as_str().unwrap();
    assert_eq!(
        Path::new(skill),
        Path::new(archive).join("skills/demo/SKILL.md")
    );
    assert_eq!(inspection["content_sha256"], packed["content_sha256"]);
    // Nothing of the inspection stays in the cache.
    let staging = s.home().join(".cache/evoflux/agent-plugins/staging");
    let left: Vec<_> = std::fs::read_dir(&staging)
        .map(|d| d.collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");

    // A file that is no archive is refused by the archive's own code.
    let junk = s.write(s.tmp.path().join("junk.evoplugin"), "not a zip");
    let out = s.run(&["--json", "plugin", "inspect", junk.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let inspection = json(&out);
    assert_eq!(inspection["valid"], false);
    assert_eq!(
        inspection["diagnostics"][0]["code"],
        "plugin/archive-invalid"
    );
}

#[test]
fn a_duplicate_key_in_plugin_json_is_an_error_with_the_key_and_line() {
    let s = Sandbox::new();
    let dir = new_plugin(&s, "twice");
    s.write(
        dir.join("plugin.json"),
        "{\n  \"$schema\": \"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json\",\n  \"name\": \"twice\",\n  \"version\": \"1.0.0\",\n  \"version\": \"2.0.0\"\n}\n",
    );
    let out = s.run(&["--json", "plugin", "inspect", dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(3));
    let inspection = json(&out);
    assert_eq!(inspection["valid"], false);
    let diags = inspection["diagnostics"].as_array().unwrap();
    let d = find(diags, "plugin/manifest-duplicate-key");
    assert_eq!(d["severity"], "error");
    assert_eq!(d["locator"]["field"], "version");
    assert_eq!(d["locator"]["line"], 5);
    assert!(
        d["locator"]["file"]
            .as_str()
            .unwrap()
            .ends_with("plugin.json")
    );

    // The same rule holds in mcp.json: a server listed twice.
    s.write(
        dir.join("plugin.json"),
        "{\n  \"$schema\": \"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json\",\n  \"name\": \"twice\"\n}\n",
    );
    s.write(
        dir.join("mcp.json"),
        "{\n  \"$schema\": \"https://agent-plugins.org/schemas/1.0.0/mcp.schema.json\",\n  \"mcpServers\": {\n    \"a\": {\"type\": \"stdio\", \"command\": \"x\"},\n    \"a\": {\"type\": \"stdio\", \"command\": \"y\"}\n  }\n}\n",
    );
    let out = s.run(&["--json", "plugin", "inspect", dir.to_str().unwrap()]);
    let inspection = json(&out);
    let diags = inspection["diagnostics"].as_array().unwrap();
    let d = find(diags, "plugin/mcp-duplicate-key");
    assert_eq!(d["locator"]["field"], "mcpServers.a");
    assert_eq!(d["locator"]["line"], 5);
    assert_eq!(inspection["mcp_status"], "disabled");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_listens_on_localhost_by_name() {
    let s = Sandbox::new();
    let server = common::server::Server::start(&s, &["--host", "localhost"]);
    let authority = server.url.strip_prefix("http://").unwrap();
    let addr: std::net::SocketAddr = authority.parse().unwrap();
    assert!(addr.ip().is_loopback(), "{addr}");
    let (status, body) = server.call("GET", "/api/health", None).await;
    assert_eq!(status, 200, "{body}");
    // A request naming `localhost` is answered, as for 127.0.0.1.
    let response = server
        .http
        .get(format!("http://localhost:{}/api/health", addr.port()))
        .bearer_auth(&server.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    // What is neither an address nor a name is refused on the command line.
    let out = s.run(&["serve", "--host", "local host!", "--port", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("local host!"));
}

#[test]
fn plugin_install_from_a_folder_leaves_env_out_as_pack_does() {
    let s = Sandbox::new();
    let dir = new_plugin(&s, "secrets");
    s.write(dir.join(".env"), "API_KEY=not-for-sharing\n");
    s.write(dir.join("skills/secrets/.env.local"), "TOKEN=x\n");
    s.write(dir.join(".evopluginignore"), "notes/\n");
    s.write(dir.join("notes/todo.md"), "private\n");
    let packed = s.json(&["--json", "plugin", "pack", dir.to_str().unwrap()]);
    let installed = s.json(&["--json", "plugin", "install", dir.to_str().unwrap()]);
    let root = Path::new(installed["installation"]["root"].as_str().unwrap());
    assert!(root.join("plugin.json").is_file(), "{}", root.display());
    for gone in [".env", "skills/secrets/.env.local", "notes"] {
        assert!(!root.join(gone).exists(), "{gone} was installed");
    }
    // One rule: the install lists what pack lists, and its copy is the
    // packed tree.
    assert_eq!(installed["excluded"], packed["excluded"], "{installed}");
    assert_eq!(
        installed["installation"]["content_sha256"],
        packed["content_sha256"]
    );
    let text = s.run(&["plugin", "list"]);
    assert!(text.status.success());
}

#[test]
fn schedule_run_now_on_an_invalid_schedule_names_its_diagnostic() {
    let s = Sandbox::new();
    let file = s.user(
        "schedules/bad.toml",
        "cron = \"0 25 * * *\"\nprompt = \"p\"\n",
    );
    let out = s.run(&["--json", "schedule", "run-now", "bad"]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let diags = stderr_diagnostics(&out);
    let d = find(&diags, "schedule/cron-invalid");
    assert_eq!(d["locator"]["file"], file.to_str().unwrap());
    assert_eq!(d["locator"]["field"], "cron");
    // `show` and `history` say the same.
    for cmd in ["show", "history"] {
        let out = s.run(&["--json", "schedule", cmd, "bad"]);
        assert_eq!(out.status.code(), Some(3), "{cmd}");
        assert!(stderr_codes(&out).contains(&"schedule/cron-invalid".to_owned()));
    }
    // A schedule of a repository not trusted yet says it waits for trust.
    let waiting = s.project("schedules/nightly.toml", "every = \"1d\"\nprompt = \"p\"\n");
    let out = s.run(&["--json", "schedule", "run-now", "nightly"]);
    assert_eq!(out.status.code(), Some(3));
    let diags = stderr_diagnostics(&out);
    let d = find(&diags, "schedule/awaiting-trust");
    assert_eq!(d["locator"]["file"], waiting.to_str().unwrap());
    // A name no file defines is still "no schedule".
    let out = s.run(&["schedule", "run-now", "nosuch"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
}
