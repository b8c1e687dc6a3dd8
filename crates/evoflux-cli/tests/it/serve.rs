#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux serve` end to end: the real binary on a loopback port, driven
//! over HTTP with the scripted provider.

use crate::common;

use std::time::Duration;

use common::server::{Server, read_events};
use common::{Sandbox, script};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_over_http_with_a_question_answered_and_a_reconnect_that_replays() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "trip.yaml",
        r#"
turns:
  - expect: {user: {contains: "plan a trip"}}
    reply:
      tool_calls:
        - {name: ask_user, arguments: {question: "Where to?"}}
  - expect: {tool_result: {contains: "Lisbon"}}
    reply: {text: "Lisbon it is: three days."}
"#,
    );
    let server = Server::start(&s, &[]);

    // Health is public; everything else needs the token.
    let health = server
        .http
        .get(format!("{}/api/health", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let unauth = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(unauth.status(), 401);
    assert_eq!(
        unauth.json::<Value>().await.unwrap()["code"],
        "server/token-missing"
    );
    let wrong = server
        .http
        .get(format!("{}/api/sessions", server.url))
        .bearer_auth("not-the-token")
        .send()
        .await
        .unwrap();
    assert_eq!(
        wrong.json::<Value>().await.unwrap()["code"],
        "server/token-invalid"
    );

    // Unknown fields are refused with the one error shape.
    let bad = server
        .post("/api/sessions", json!({"mode": "work", "colour": "blue"}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 422);
    assert_eq!(
        bad.json::<Value>().await.unwrap()["code"],
        "server/body-invalid"
    );

    let created = server
        .post(
            "/api/sessions",
            json!({"mode": "work", "model": model, "message": "plan a trip"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["turn_started"], true);
    let id = created["session_id"].as_str().unwrap().to_owned();

    // The first connection reads up to the question and the turn's end
    // (the session takes the answer once the turn is over), then drops.
    let first = read_events(&server, &id, None, |e| e.kind == "turn_completed").await;
    assert_eq!(first[0].kind, "session_started");
    assert_eq!(first[0].id, 1);
    let asked = first
        .iter()
        .find(|e| e.kind == "input_requested")
        .expect("the question");
    assert_eq!(asked.data["question"], "Where to?");
    assert_eq!(first.last().unwrap().data["status"], "waiting_for_input");
    let last = first.last().unwrap().id;
    // Ids are consecutive.
    assert!(
        first.windows(2).all(|w| w[1].id == w[0].id + 1),
        "{first:#?}"
    );

    let answered = server
        .post(
            &format!("/api/sessions/{id}/input"),
            json!({"text": "Lisbon"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(answered.status(), 202);

    // The reconnect replays from Last-Event-ID: nothing lost, nothing twice.
    let second = read_events(&server, &id, Some(last), |e| {
        e.kind == "turn_completed" && e.data["text"] == "Lisbon it is: three days."
    })
    .await;
    assert_eq!(second[0].id, last + 1, "{second:#?}");
    assert!(second.windows(2).all(|w| w[1].id == w[0].id + 1));
    assert!(second.iter().all(|e| e.id > last));

    // The durable record.
    let shown: Value = server
        .get(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["session"]["id"], id.as_str());
    assert!(
        shown["transcript"].as_array().unwrap().len() >= 4,
        "{shown:#}"
    );
    let listed: Value = server
        .get("/api/sessions")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let row = listed
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["session"]["id"] == id.as_str())
        .unwrap();
    assert_eq!(row["live"], true);
    assert_eq!(row["busy"], false);
    assert_eq!(row["usage"], shown["usage_with_children"]);
    assert!(row["usage"]["requests"].as_u64().unwrap() >= 1, "{row:#}");

    // No open question now: an answer is refused.
    let again = server
        .post(
            &format!("/api/sessions/{id}/input"),
            json!({"text": "Porto"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);
    assert_eq!(
        again.json::<Value>().await.unwrap()["code"],
        "session/no-open-question"
    );

    // A stream open when the session is deleted ends with session_stopped.
    let open_stream = server
        .get(&format!("/api/sessions/{id}/events"))
        .header("Last-Event-ID", second.last().unwrap().id.to_string())
        .send()
        .await
        .unwrap();
    let deleted = server
        .request("DELETE", &format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let rest = tokio::time::timeout(Duration::from_secs(10), open_stream.text())
        .await
        .expect("the stream of a deleted session ended")
        .unwrap();
    assert!(rest.contains("event: session_stopped"), "{rest}");
    let gone = server
        .get(&format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    assert_eq!(
        gone.json::<Value>().await.unwrap()["code"],
        "store/session-not-found"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_cancel_over_http() {
    let s = Sandbox::new();
    // `shell` asks before a command that changes anything.
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    // A duration no other test uses: the command's own process is
    // `sleep 601` once the sandbox is set up.
    let marker = format!("sleep 601 # cancel-{}", std::process::id());
    let model = script(
        &s,
        "approve.yaml",
        &format!(
            r#"
turns:
  - reply:
      tool_calls:
        - {{name: shell, arguments: {{command: "touch approved.txt"}}}}
  - reply:
      tool_calls:
        - {{name: shell, arguments: {{command: "{marker}", yield_time_ms: 30000}}}}
  - reply: {{text: "never"}}
"#
        ),
    );
    let server = Server::start(&s, &[]);
    let created: Value = server
        .post(
            "/api/sessions",
            json!({"mode": "work", "model": model, "message": "go"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"].as_str().unwrap().to_owned();
    let asked = read_events(&server, &id, None, |e| e.kind == "approval_requested").await;
    let call = asked.last().unwrap().data["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let nobody = server
        .post(
            &format!("/api/sessions/{id}/approvals/call_nope"),
            json!({"decision": "approve"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(nobody.status(), 404);
    assert_eq!(
        nobody.json::<Value>().await.unwrap()["code"],
        "session/no-pending-approval"
    );
    let ok = server
        .post(
            &format!("/api/sessions/{id}/approvals/{call}"),
            json!({"decision": "approve"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 202);
    let last = asked.last().unwrap().id;
    // A second client, connecting with the id of the request (a reload, a
    // reconnect, another browser), reads the decision before the call's
    // end, and its own decision comes too late.
    let second = read_events(&server, &id, Some(last), |e| {
        e.kind == "tool_ended" && e.data["call_id"] == call.as_str()
    })
    .await;
    let decided = second
        .iter()
        .position(|e| e.kind == "approval_decided" && e.data["call_id"] == call.as_str())
        .expect("no approval_decided for the call");
    assert_eq!(second[decided].data["decision"], "approved");
    assert_eq!(second[decided].data["by"], "user");
    assert_eq!(second.last().unwrap().data["status"], "completed");
    assert!(decided < second.len() - 1);
    let late = server
        .post(
            &format!("/api/sessions/{id}/approvals/{call}"),
            json!({"decision": "deny"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(late.status(), 404);
    assert_eq!(
        late.json::<Value>().await.unwrap()["code"],
        "session/no-pending-approval"
    );
    // The approved call ran; the next one asks to start a long command.
    let more = read_events(&server, &id, Some(last), |e| {
        e.kind == "approval_requested" && e.data["call_id"] == "call_2_1"
    })
    .await;
    let ok = server
        .post(
            "/api/sessions/{id}/approvals/call_2_1"
                .replace("{id}", &id)
                .as_str(),
            json!({"decision": "approve_for_session"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 202);
    assert!(more.iter().any(|e| e.kind == "tool_ended"
        && e.data["call_id"] == call.as_str()
        && e.data["is_error"] == false));
    let busy = server
        .post(
            &format!("/api/sessions/{id}/messages"),
            json!({"text": "hello"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(busy.status(), 409);
    assert_eq!(busy.json::<Value>().await.unwrap()["code"], "session/busy");
    // Wait until the command itself runs inside its sandbox (its setup is
    // done), then cancel.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !running_exactly("sleep 601") && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(running(&marker), "the command never started");
    let cancelled = server
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(cancelled.status(), 202);
    let after = more.last().unwrap().id;
    let ended = read_events(&server, &id, Some(after), |e| e.kind == "turn_cancelled").await;
    assert!(
        !ended.iter().any(|e| e.kind == "turn_completed"),
        "{ended:#?}"
    );
    // The cancelled command's call ends `cancelled` before the turn's end,
    // so no client shows it running.
    let call_ended = ended
        .iter()
        .position(|e| e.kind == "tool_ended" && e.data["call_id"] == "call_2_1")
        .expect("the cancelled call never ended");
    assert_eq!(ended[call_ended].data["status"], "cancelled");
    assert!(call_ended < ended.len() - 1);
    // The cancelled turn's command is gone with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while running(&marker) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        !running(&marker),
        "the cancelled turn's command still runs: {}",
        holders(&marker)
    );
    // Idle now: a second cancel has nothing to stop.
    let idle = server
        .post(&format!("/api/sessions/{id}/cancel"), json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(idle.status(), 409);
    assert_eq!(idle.json::<Value>().await.unwrap()["code"], "session/idle");
}

fn holders(marker: &str) -> String {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let c = std::fs::read(e.path().join("cmdline")).ok()?;
            let c = String::from_utf8_lossy(&c).replace('\0', " ");
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            c.contains(marker)
                .then(|| format!("{:?}: {c} [{stat}]", e.file_name()))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a process whose whole command line is `cmdline` runs.
fn running_exactly(cmdline: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " ").trim() == cmdline)
            .unwrap_or(false)
    })
}

/// Whether a process whose command line contains `marker` runs.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

/// A request to `path` with `method`, with the token.
async fn probe(server: &Server, method: &str, path: &str) -> (u16, Value) {
    let r = server
        .request(method, path)
        .header("content-type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let body = r.json::<Value>().await.unwrap_or(Value::Null);
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_serves_exactly_the_route_plan() {
    let s = Sandbox::new();
    // A user channel, and the home channel disabled.
    s.user("channels/home.toml", "disable = true\n");
    let server = Server::start(&s, &[]);
    let info: Value = server
        .get("/api/info")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let routes = info["routes"]["effective"].as_array().unwrap();
    assert!(!routes.is_empty());
    for r in routes {
        let method = r["method"].as_str().unwrap();
        let path = r["path"]
            .as_str()
            .unwrap()
            .replace(":id", "01a2334a-0000-7000-8000-000000000000")
            .replace(":call_id", "call_x");
        if path.ends_with("/events") {
            continue; // a stream; served (its 404 below is the session's)
        }
        let (status, body) = probe(&server, method, &path).await;
        assert_ne!(
            body["code"], "server/route-not-found",
            "{method} {path} is in the plan but not served"
        );
        assert_ne!(status, 405, "{method} {path}");
    }
    // Nothing else is: the disabled home page, an unplanned path, an
    // unplanned method on a planned path.
    assert_eq!(
        probe(&server, "GET", "/").await.1["code"],
        "server/route-not-found"
    );
    assert_eq!(
        probe(&server, "GET", "/api/nothing").await.1["code"],
        "server/route-not-found"
    );
    assert_eq!(probe(&server, "PUT", "/api/sessions").await.0, 405);
    // The host inventory is mounted: readiness answers, reserved routes say why.
    let ready = server
        .http
        .get(format!("{}/.well-known/evoflux/ready", server.url))
        .send()
        .await
        .unwrap();
    assert_eq!(ready.status(), 204);
    let (status, body) = probe(&server, "POST", "/internal/schedules/nightly").await;
    assert_eq!(status, 501);
    assert_eq!(body["code"], "server/host-route-not-built");
    // Every API route is in the OpenAPI document, and the document's paths
    // are routes of the plan.
    let doc: Value = server
        .get("/openapi.json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let documented: Vec<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(p, item)| {
            item.as_object()
                .unwrap()
                .keys()
                .map(|m| (m.to_uppercase(), p.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let planned: Vec<(String, String)> = routes
        .iter()
        .filter(|r| r["action"]["kind"] == "api")
        .map(|r| {
            let path = r["path"]
                .as_str()
                .unwrap()
                .split('/')
                .map(|seg| match seg.strip_prefix(':') {
                    Some(n) => format!("{{{n}}}"),
                    None => seg.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("/");
            (r["method"].as_str().unwrap().to_owned(), path)
        })
        .collect();
    // Besides the plan's API routes, the document viewer's host routes,
    // which no channel can claim.
    let mut b = planned.clone();
    for path in ["/api/viewer/document", "/api/viewer/files"] {
        b.push(("GET".to_owned(), path.to_owned()));
        let (status, body) = probe(&server, "GET", path).await;
        assert_eq!(
            (status, body["code"].as_str()),
            (400, Some("viewer/query-invalid")),
            "{path}: {body}"
        );
    }
    let mut a = documented.clone();
    a.sort();
    b.sort();
    assert_eq!(a, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listings_are_the_clis_projections() {
    let s = Sandbox::new();
    s.project(
        "agents/helper.md",
        "---\nrole: member\ndescription: Helps.\n---\nHelp.\n",
    );
    s.trust();
    let server = Server::start(&s, &[]);
    let agents: Value = server
        .get("/api/agents?mode=work")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let cli = s.json(&["--json", "agents", "list", "--mode", "work"]);
    assert_eq!(agents["items"], cli);
    let helper = agents["items"][0]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "helper")
        .unwrap();
    assert!(
        helper["effective"]["tools"]
            .as_array()
            .unwrap()
            .contains(&"read".into())
    );
    let skills: Value = server
        .get("/api/settings/skills")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(skills["items"], s.json(&["--json", "skills", "list"]));
    let plugins: Value = server
        .get("/api/plugins")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(plugins["items"].is_array());
    let info: Value = server
        .get("/api/info")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut cli_info = s.json(&["--json", "info"]);
    // The same projection (the CLI compiles with its cwd, the repository).
    cli_info["graph_hash"] = info["graph_hash"].clone();
    assert_eq!(info["routes"], cli_info["routes"]);
    assert_eq!(info["teams"], cli_info["teams"]);
}

#[test]
fn the_token_file_is_private_and_a_public_address_needs_a_chosen_token() {
    use std::os::unix::fs::PermissionsExt;
    let s = Sandbox::new();
    let out = s.run(&["serve", "--print-token"]);
    assert!(out.status.success());
    let token = String::from_utf8(out.stdout).unwrap();
    assert_eq!(token.trim().len(), 64);
    let file = s.home().join(".local/share/evoflux/server-token");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{}", file.display());
    let refused = s.run(&["--json", "serve", "--host", "0.0.0.0", "--port", "0"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("server/public-without-token"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let s = Sandbox::new();
    let mut server = Server::start(&s, &[]);
    let status = server.stop();
    assert!(status.success(), "{status:?}");
}

/// The Python tools CI installs (`.ci/run`): `EVOFLUX_TEST_PYTHON`, a
/// Python with openapi-spec-validator and schemathesis. Skipped, with a
/// note, when unset.
fn python_tools() -> Option<std::path::PathBuf> {
    match std::env::var_os("EVOFLUX_TEST_PYTHON") {
        Some(p) if !p.is_empty() => Some(p.into()),
        _ => {
            eprintln!("note: EVOFLUX_TEST_PYTHON is not set; skipping the OpenAPI validator test");
            None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_validates_and_the_live_server_passes_schemathesis() {
    let Some(python) = python_tools() else { return };
    let s = Sandbox::new();
    let server = Server::start(&s, &[]);
    // The document is public.
    let doc = server
        .http
        .get(format!("{}/openapi.json", server.url))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let file = s.tmp.path().join("openapi.json");
    std::fs::write(&file, &doc).unwrap();
    let validated = std::process::Command::new(&python)
        .args(["-m", "openapi_spec_validator"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(
        validated.status.success(),
        "{}{}",
        String::from_utf8_lossy(&validated.stdout),
        String::from_utf8_lossy(&validated.stderr)
    );
    // Property-based requests against the live server: no 5xx, and every
    // response matches the document.
    let url = server.url.clone();
    let auth = format!("Authorization: Bearer {}", server.token);
    // schemathesis keeps a cache in `.schemathesis/` under its working
    // directory: the sandbox's, never the source tree.
    let cwd = s.tmp.path().to_path_buf();
    let checked = tokio::task::spawn_blocking(move || {
        std::process::Command::new(&python)
            .current_dir(&cwd)
            .args(["-m", "schemathesis.cli", "run"])
            .arg(&file)
            .args(["--url", &url, "-H", &auth])
            .args(["--checks", "not_a_server_error,response_schema_conformance"])
            .args(["--max-examples", "15", "--seed", "1"])
            // These write wherever an absolute path in the request points
            // (a new package, an archive, a package file): generated paths
            // would reach outside the sandbox. Their own tests cover them.
            .args([
                "--exclude-path-regex",
                "^/api/plugins/(create|pack|workspace/.*)$",
            ])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(
        checked.status.success(),
        "{}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_crud_keeps_the_team_valid_and_get_never_writes() {
    let s = Sandbox::new();
    let server = Server::start(&s, &[]);
    let agents_dir = s.config().join("agents");
    // GET never writes: listing and showing a builtin leave no file.
    let shown: Value = server
        .get("/api/agents/evoflux")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(shown["editable"], false);
    assert!(shown["content"].is_null());
    server.get("/api/agents").send().await.unwrap();
    assert!(!agents_dir.exists(), "a GET wrote {}", agents_dir.display());

    // Create a Coding member; the API's effective config is the runtime's.
    let member = "---\nrole: member\ndescription: Reviews diffs.\n---\nReview carefully.\n";
    let created = server
        .post(
            "/api/agents",
            json!({"name": "coding/reviewer", "content": member}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 201);
    let created: Value = created.json().await.unwrap();
    assert_eq!(created["editable"], true);
    assert_eq!(created["content"], member);
    let file = agents_dir.join("coding/reviewer.md");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), member);
    let cli = s.json(&["--json", "agents", "list", "--mode", "coding"]);
    let from_cli = cli[0]["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"] == "reviewer")
        .unwrap()["effective"]
        .clone();
    assert_eq!(created["effective"], from_cli);
    let again = server
        .post(
            "/api/agents",
            json!({"name": "coding/reviewer", "content": member}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 409);

    // A broken file is refused and nothing is written.
    let broken = server
        .request("PUT", "/api/agents/coding/reviewer")
        .json(&json!({"content": "no front matter"}))
        .send()
        .await
        .unwrap();
    assert_eq!(broken.status(), 422);
    assert_eq!(
        broken.json::<Value>().await.unwrap()["code"],
        "agent/invalid"
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), member);
    let mismatch = server
        .request("PUT", "/api/agents/coding/reviewer")
        .json(&json!({"name": "coding/other", "content": member}))
        .send()
        .await
        .unwrap();
    assert_eq!(mismatch.status(), 422);

    // A change that leaves the mode without a lead is rolled back: a user
    // file named like the builtin lead that makes it a member.
    let demote_builtin = server
        .post(
            "/api/agents",
            json!({"name": "evoflux", "content": "---\nrole: member\ndescription: No lead now.\n---\nx\n"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(demote_builtin.status(), 422);
    assert_eq!(
        demote_builtin.json::<Value>().await.unwrap()["code"],
        "agent/team-invalid"
    );
    assert!(
        !agents_dir.join("evoflux.md").exists(),
        "the refused file was kept"
    );

    // A user lead, demoted to a member and deleted: the builtin lead
    // remains, so both are allowed.
    let lead = "---\nrole: lead\ndescription: My lead.\n---\nLead.\n";
    let made = server
        .post("/api/agents", json!({"name": "boss", "content": lead}))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 201);
    let demoted = server
        .request("PUT", "/api/agents/boss")
        .json(&json!({"content": "---\nrole: member\ndescription: Now a member.\n---\nHelp.\n"}))
        .send()
        .await
        .unwrap();
    assert_eq!(demoted.status(), 200);
    let deleted = server
        .request("DELETE", "/api/agents/boss")
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    assert!(!agents_dir.join("boss.md").exists());
    // A builtin is not the user's file.
    let builtin = server
        .request("DELETE", "/api/agents/evoflux")
        .send()
        .await
        .unwrap();
    assert_eq!(builtin.status(), 403);
    assert_eq!(
        builtin.json::<Value>().await.unwrap()["code"],
        "agent/not-editable"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_added_while_serving_is_served_and_starts_a_session_per_request() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "hook.yaml",
        "turns:\n  - expect: {user: {contains: \"opened evoflux\"}}\n    reply: {text: \"triaged\"}\n",
    );
    s.user("config.toml", &format!("[model]\ndefault = \"{model}\"\n"));
    let server = Server::start(&s, &[]);
    let (status, body) = probe(&server, "POST", "/hooks/evoflux").await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("server/route-not-found"))
    );
    // A live session hears the reload.
    let watcher: Value = server
        .post("/api/sessions", json!({"mode": "work"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let watcher_id = watcher["session_id"].as_str().unwrap().to_owned();
    s.user(
        "channels/hooks.toml",
        "[[route]]\nmethod = \"POST\"\npath = \"/hooks/:repo\"\nagent = \"evoflux\"\nprompt = \"{{body}} {{param.repo}}\"\n",
    );
    read_events(&server, &watcher_id, None, |e| e.kind == "graph_reloaded").await;
    let started = server
        .request("POST", "/hooks/evoflux")
        .body("opened")
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), 202);
    let started: Value = started.json().await.unwrap();
    let id = started["session_id"].as_str().unwrap().to_owned();
    let events = read_events(&server, &id, None, |e| e.kind == "turn_completed").await;
    assert_eq!(events.last().unwrap().data["text"], "triaged");
    // A broken channel keeps the routes the server has, and says so.
    s.user("channels/hooks.toml", "[[route]]\nmethod = \"BREW\"\n");
    let invalid = read_events(&server, &watcher_id, None, |e| e.kind == "graph_invalid").await;
    assert!(invalid.last().unwrap().data["diagnostics"].is_array());
    let again = server
        .request("POST", "/hooks/evoflux")
        .body("opened")
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 202);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skill_preferences_change_by_settings_id_and_a_stale_id_conflicts() {
    let s = Sandbox::new();
    let server = Server::start(&s, &[]);
    let listed: Value = server
        .get("/api/settings/skills")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let skill = &listed["items"][0];
    let name = skill["name"].as_str().unwrap().to_owned();
    let id = skill["settings_id"].as_str().unwrap().to_owned();
    let changed = server
        .request("PATCH", &format!("/api/skills/{name}"))
        .json(&json!({"settings_id": id, "modes": ["work"], "allow_implicit_invocation": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let changed: Value = changed.json().await.unwrap();
    assert_eq!(changed["prefs"]["allow_implicit_invocation"], false);
    // The runtime sees what the API set: the CLI reads the same overlay.
    let cli = s.json(&["--json", "skills", "prefs", "get", &name]);
    assert_eq!(cli["prefs"], changed["prefs"]);
    let stale = server
        .request("PATCH", &format!("/api/skills/{name}"))
        .json(&json!({"settings_id": "skill_0000", "user_invocable": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(stale.status(), 409);
    assert_eq!(
        stale.json::<Value>().await.unwrap()["code"],
        "skill/settings-id-stale"
    );
    let reset = server
        .request("DELETE", &format!("/api/skills/{name}?settings_id={id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 200);
    let cli = s.json(&["--json", "skills", "prefs", "get", &name]);
    assert_eq!(cli["prefs"]["allow_implicit_invocation"], skill["implicit"]);
    // A malformed preferences file is left alone and reported as a conflict.
    let store = s.config().join("skill-settings.json");
    std::fs::write(&store, "{ not json").unwrap();
    let malformed = server
        .request("PATCH", &format!("/api/skills/{name}"))
        .json(&json!({"settings_id": id, "user_invocable": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 409, "{}", store.display());
    assert_eq!(std::fs::read_to_string(&store).unwrap(), "{ not json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_servers_are_listed_with_their_state_and_last_error() {
    let s = Sandbox::new();
    s.project(
        "mcp.json",
        &json!({"mcpServers": {
            "broken": {"type": "stdio", "command": "/nonexistent/evoflux-server"},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
        }})
        .to_string(),
    );
    s.trust();
    let server = Server::start(&s, &[]);
    let listed: Value = server
        .get("/api/mcp/servers")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let by_name = |name: &str| {
        listed["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["server"] == name)
            .unwrap_or_else(|| panic!("no {name} in {listed}"))
            .clone()
    };
    assert_eq!(by_name("broken")["state"], "failed");
    assert_eq!(by_name("broken")["last_error"]["code"], "mcp/start-failed");
    assert_eq!(by_name("old")["state"], "skipped");
    // The same rows `evoflux mcp list` prints.
    let cli = s.json(&["mcp", "list", "--json"]);
    let cli_states: Vec<(Value, Value)> = cli["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["server"].clone(), x["state"].clone()))
        .collect();
    let api_states: Vec<(Value, Value)> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| (x["server"].clone(), x["state"].clone()))
        .collect();
    assert_eq!(api_states, cli_states);
    // One server by its reference; an unknown one is a 404.
    let (status, one) = server.call("GET", "/api/mcp/servers/old", None).await;
    assert_eq!((status, &one["state"]), (200, &json!("skipped")), "{one:#}");
    let (status, body) = server.call("GET", "/api/mcp/servers/nope", None).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("mcp/server-not-found"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skill_bundles_are_edited_whole_and_a_live_session_uses_the_new_skill_next_turn() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "skills.yaml",
        r#"
turns:
  - expect: {user: {contains: "first"}}
    reply: {text: "ok"}
  - expect: {user: {contains: "second"}}
    reply:
      tool_calls:
        - {name: skill, arguments: {action: load, skill_name: trip-notes}}
  - expect: {tool_result: {contains: "Pack light."}}
    reply: {text: "done"}
"#,
    );
    let server = Server::start(&s, &[]);
    let created: Value = server
        .post(
            "/api/sessions",
            json!({"mode": "work", "model": model, "message": "first"}),
        )
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"].as_str().unwrap().to_owned();
    let first = read_events(&server, &id, None, |e| e.kind == "turn_completed").await;
    let last = first.last().unwrap().id;

    let skill_md =
        "---\nname: trip-notes\ndescription: Notes for planning trips.\n---\nPack light.\n";
    // A path outside the bundle, and a name that is not portable, write nothing.
    let (status, body) = server
        .call(
            "POST",
            "/api/skills",
            Some(json!({"name": "trip-notes", "content": skill_md,
                       "files": [{"path": "../escape.md", "content": "x"}]})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("skill/edit-path-invalid"))
    );
    let (status, body) = server
        .call(
            "POST",
            "/api/skills",
            Some(json!({"name": "Trip Notes", "content": skill_md})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("skill/name-invalid"))
    );
    assert!(!s.config().join("skills/trip-notes").exists());

    let (status, body) = server
        .call(
            "POST",
            "/api/skills",
            Some(
                json!({"name": "trip-notes", "content": skill_md, "modes": ["work"],
                       "files": [{"path": "references/packing.md", "content": "Socks."}]}),
            ),
        )
        .await;
    assert_eq!(status, 201, "{body:#}");
    assert_eq!(body["editable"], true);
    assert_eq!(body["content"], skill_md);
    let paths: Vec<&str> = body["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, [".evoflux.json", "references/packing.md"]);
    let (status, body) = server
        .call(
            "POST",
            "/api/skills",
            Some(json!({"name": "trip-notes", "content": skill_md})),
        )
        .await;
    assert_eq!((status, body["code"].as_str()), (409, Some("skill/exists")));

    // The live session's next turn runs on the new sources.
    let sent = server
        .post(
            &format!("/api/sessions/{id}/messages"),
            json!({"text": "second"}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 202);
    let second = read_events(&server, &id, Some(last), |e| e.kind == "turn_completed").await;
    assert!(
        second.iter().any(|e| e.kind == "sources_applied"),
        "{second:#?}"
    );
    assert_eq!(second.last().unwrap().data["text"], "done", "{second:#?}");

    // An invalid replacement changes nothing; a valid one replaces the
    // bundle whole, and without `modes` leaves the sidecar alone.
    let (status, body) = server
        .call(
            "PUT",
            "/api/skills/trip-notes",
            Some(json!({"content": "no front matter"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("skill/invalid"))
    );
    assert!(
        body["diagnostics"]
            .as_array()
            .is_some_and(|d| !d.is_empty()),
        "{body:#}"
    );
    let dir = s.config().join("skills/trip-notes");
    assert_eq!(
        std::fs::read_to_string(dir.join("SKILL.md")).unwrap(),
        skill_md
    );
    let v2 = skill_md.replace("Pack light.", "Pack lighter.");
    let (status, body) = server.call("PUT", "/api/skills/trip-notes", Some(json!({"name": "trip-notes", "content": v2,
                          "files": [{"path": "icon.bin", "content": "AJ+SlA==", "encoding": "base64"}],
                          "deleted_files": ["references/packing.md"]}))).await;
    assert_eq!(status, 200, "{body:#}");
    assert_eq!(
        std::fs::read(dir.join("icon.bin")).unwrap(),
        [0u8, 0x9f, 0x92, 0x94]
    );
    assert!(!dir.join("references/packing.md").exists());
    assert!(dir.join(".evoflux.json").is_file());
    assert_eq!(body["modes"], json!(["work"]));

    // Builtin bundles are read-only.
    let listed: Value = server
        .get("/api/skills")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let builtin = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["source"] == "builtin")
        .expect("a builtin skill")["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, body) = server
        .call(
            "PUT",
            &format!("/api/skills/{builtin}"),
            Some(json!({"content": "---\nname: x\ndescription: y\n---\nz\n"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("skill/not-editable"))
    );
    let (status, _) = server
        .call("DELETE", &format!("/api/skills/{builtin}"), None)
        .await;
    assert_eq!(status, 403);
    let (status, shown) = server
        .call("GET", &format!("/api/skills/{builtin}"), None)
        .await;
    assert_eq!(status, 200);
    assert!(
        shown["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("---"))
    );
    assert!(shown["edit_refusal"].is_string());

    // A preference, then the bundle's deletion, which takes the
    // preference with it.
    let detail: Value = server
        .get("/api/skills/trip-notes")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let settings_id = detail["settings_id"].as_str().unwrap().to_owned();
    let changed = server
        .request("PATCH", "/api/skills/trip-notes")
        .json(&json!({"settings_id": settings_id, "user_invocable": false}))
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), 200);
    let (status, body) = server.call("DELETE", "/api/skills/trip-notes", None).await;
    assert_eq!(
        (status, body["result"].as_str()),
        (200, Some("bundle-deleted")),
        "{body:#}"
    );
    assert!(!dir.exists());
    let prefs = std::fs::read_to_string(s.config().join("skill-settings.json")).unwrap_or_default();
    assert!(!prefs.contains(&settings_id), "{prefs}");
    let (status, _) = server.call("GET", "/api/skills/trip-notes", None).await;
    assert_eq!(status, 404);
}

/// A URL query from pairs, percent-encoded.
fn query(pairs: &[(&str, &str)]) -> String {
    let enc = |v: &str| {
        v.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                    (b as char).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={}", enc(v)))
        .collect::<Vec<_>>()
        .join("&")
}

/// A multipart body with one file field.
fn multipart(field: &str, filename: &str, bytes: &[u8]) -> (String, Vec<u8>) {
    let boundary = "evofluxTestBoundary7MA4YWxkTrZu0gW";
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\nContent-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_lifecycle_over_http_never_shows_a_secret() {
    let s = Sandbox::new();
    let server = Server::start(&s, &[]);
    let pkg = s.tmp.path().join("work/svc");
    std::fs::create_dir_all(pkg.parent().unwrap()).unwrap();
    let mut seen = String::new();

    // Create, then edit the package in the editor.
    let (status, body) = server.call("POST", "/api/plugins/create", Some(json!({"destination": pkg, "name": "svc", "description": "A service.", "version": "1.0.0"}))).await;
    assert_eq!(status, 201, "{body:#}");
    let root = pkg.to_str().unwrap();
    let (status, tree) = server
        .call(
            "GET",
            &format!("/api/plugins/workspace/tree?{}", query(&[("root", root)])),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert!(
        tree["entries"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["path"] == "plugin.json"),
        "{tree:#}"
    );
    let (_, file) = server
        .call(
            "GET",
            &format!(
                "/api/plugins/workspace/file?{}",
                query(&[("root", root), ("path", "plugin.json")])
            ),
            None,
        )
        .await;
    let mut manifest: Value = serde_json::from_str(file["content"].as_str().unwrap()).unwrap();
    manifest["extensions"] = json!({"org.evoelsewhere.evoflux.credentials": {"fields": [
        {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
        {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true}
    ]}});
    let (status, saved) = server.call("PUT", "/api/plugins/workspace/file", Some(json!({"root": root, "path": "plugin.json", "content": serde_json::to_string_pretty(&manifest).unwrap()}))).await;
    assert_eq!(status, 200, "{saved:#}");
    assert_eq!(saved["inspection"]["valid"], true, "{saved:#}");
    let (status, body) = server
        .call(
            "PUT",
            "/api/plugins/workspace/file",
            Some(json!({"root": root, "path": "../outside.txt", "content": "x"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (400, Some("plugin/workspace-path-invalid"))
    );
    assert!(!pkg.parent().unwrap().join("outside.txt").exists());
    let (status, body) = server
        .call(
            "DELETE",
            &format!(
                "/api/plugins/workspace/entry?{}",
                query(&[("root", root), ("path", "plugin.json")])
            ),
            None,
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("plugin/workspace-manifest-required"))
    );
    let (status, _) = server
        .call(
            "POST",
            "/api/plugins/workspace/entry",
            Some(json!({"root": root, "path": "notes", "kind": "directory"})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, _) = server
        .call(
            "DELETE",
            &format!(
                "/api/plugins/workspace/entry?{}",
                query(&[("root", root), ("path", "notes")])
            ),
            None,
        )
        .await;
    assert_eq!(status, 200);

    // Pack, then upload the archive.
    let out = s.tmp.path().join("work/svc.evoplugin");
    let (status, packed) = server
        .call(
            "POST",
            "/api/plugins/pack",
            Some(json!({"path": pkg, "output": out})),
        )
        .await;
    assert_eq!(status, 200, "{packed:#}");
    let archive = std::fs::read(&out).unwrap();
    let (bad_type, bad_body) = multipart("archive", "svc.txt", &archive);
    let (status, body) = server
        .upload("/api/plugins/upload", bad_type, bad_body)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("plugin/upload-not-an-archive"))
    );
    let (content_type, upload) = multipart("archive", "svc.evoplugin", &archive);
    let (status, installed) = server
        .upload("/api/plugins/upload", content_type.clone(), upload.clone())
        .await;
    assert_eq!(status, 201, "{installed:#}");
    assert_eq!(
        installed["installation"]["source_ref"],
        "upload:svc.evoplugin"
    );
    assert_eq!(installed["installation"]["enabled"], false);
    assert_eq!(installed["capabilities"]["updatable"], true);
    let id = installed["installation"]["id"].as_str().unwrap().to_owned();
    let (status, body) = server
        .upload("/api/plugins/upload", content_type.clone(), upload.clone())
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("plugin/already-installed"))
    );
    // Update from the same archive (nothing new to review).
    let (status, updated) = server
        .upload(
            &format!("/api/plugins/{id}/update-upload"),
            content_type,
            upload,
        )
        .await;
    assert_eq!(status, 200, "{updated:#}");

    // Enable, then credentials: the secret is stored and never shown.
    let (status, enabled) = server
        .call(
            "PATCH",
            &format!("/api/plugins/{id}/enabled"),
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(
        (status, &enabled["installation"]["enabled"]),
        (200, &json!(true))
    );
    let secret = "tok-0123-SECRET";
    let (status, creds) = server
        .call(
            "PUT",
            &format!("/api/plugins/{id}/credentials"),
            Some(json!({"values": {"endpoint": "https://svc.example/api", "token": secret}})),
        )
        .await;
    assert_eq!(status, 200, "{creds:#}");
    assert_eq!(creds["configured"], true);
    seen.push_str(&creds.to_string());
    let (status, body) = server
        .call(
            "PUT",
            &format!("/api/plugins/{id}/credentials"),
            Some(json!({"values": {"colour": "blue"}})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (422, Some("plugin/credential-unknown"))
    );
    for path in [
        format!("/api/plugins/{id}/credentials"),
        format!("/api/plugins/{id}"),
        "/api/plugins".to_owned(),
    ] {
        let response = server.get(&path).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        seen.push_str(&response.text().await.unwrap());
    }
    assert!(!seen.contains(secret), "a secret was shown");
    assert!(seen.contains("********"));
    let stored = std::fs::read_to_string(s.home().join(format!(
        ".local/share/evoflux/agent-plugins/data/{id}/credentials.json"
    )))
    .unwrap();
    assert!(stored.contains(secret));
    let (_, cleared) = server
        .call("DELETE", &format!("/api/plugins/{id}/credentials"), None)
        .await;
    assert_eq!(cleared["configured"], false, "{cleared:#}");

    // Bundled plugins: capabilities all false, every mutation refused.
    let listed: Value = server
        .get("/api/plugins")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let bundled = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["installation"]["source_type"] == "builtin")
        .expect("a bundled plugin")
        .clone();
    assert!(
        bundled["capabilities"]
            .as_object()
            .unwrap()
            .values()
            .all(|v| v == false)
    );
    let bundled_id = bundled["installation"]["id"].as_str().unwrap();
    let (status, body) = server
        .call(
            "PATCH",
            &format!("/api/plugins/{bundled_id}/enabled"),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (403, Some("plugin/builtin-immutable"))
    );
    let (status, body) = server
        .call(
            "POST",
            "/api/plugins/install",
            Some(json!({"path": bundled["installation"]["root"], "mode": "link"})),
        )
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("plugin/inside-bundled-tree"))
    );

    // Uninstall with its data.
    let (status, gone) = server
        .call(
            "DELETE",
            &format!("/api/plugins/{id}?remove_data=true"),
            None,
        )
        .await;
    assert_eq!(
        (status, &gone["removed_data"]),
        (200, &json!(true)),
        "{gone:#}"
    );
    let (status, body) = server
        .call("GET", &format!("/api/plugins/{id}"), None)
        .await;
    assert_eq!(
        (status, body["code"].as_str()),
        (404, Some("plugin/installation-not-found"))
    );
}
