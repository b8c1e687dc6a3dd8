//! Several `evoflux serve` replicas on one PostgreSQL database (the real
//! binary, a real server on loopback ports, the scripted provider): any
//! replica takes any request, a turn runs on exactly one, every stream
//! sees every event once, and a replica killed mid-turn leaves its turn to
//! the other. Also `evoflux store` moving a data directory to PostgreSQL
//! and back. Skipped, saying so, without `EVOFLUX_TEST_POSTGRES_URL`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use common::server::{Server, Sse, read_events};
use common::{Sandbox, run_ok, script, session_id};
use serde_json::{Value, json};

/// A fresh database's URL on the test server.
async fn database() -> Option<String> {
    match evoflux_store::testing::postgres_database().await? {
        evoflux_store::Database::Postgres(url) => Some(url.expose().to_owned()),
        evoflux_store::Database::Sqlite => None,
    }
}

fn replica(s: &Sandbox, url: &str, lease_secs: &str) -> Server {
    Server::start_with_env(
        s,
        &["--lease-secs", lease_secs],
        &[("EVOFLUX_DATABASE_URL", url)],
    )
}

/// Reads `session`'s stream from the start until it holds `turns`
/// completed turns.
async fn until_turns(server: &Server, session: &str, turns: usize) -> Vec<Sse> {
    let counted = std::sync::atomic::AtomicUsize::new(0);
    read_events(server, session, None, |e| {
        e.kind == "turn_completed"
            && counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == turns
    })
    .await
}

/// Every event once, numbered 1, 2, 3… with nothing left out.
fn assert_gapless(events: &[Sse]) {
    let ids: Vec<u64> = events.iter().map(|e| e.id).collect();
    let want: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, want, "event ids of one stream");
}

async fn post(server: &Server, path: &str, body: Value) -> (u16, Value) {
    server.call("POST", path, Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_share_200_sessions_without_running_a_turn_twice() {
    let Some(url) = database().await else { return };
    let s = Sandbox::new();
    let model = script(
        &s,
        "replies.yaml",
        "turns:\n  - reply: {text: first answer}\n  - reply: {text: second answer}\n",
    );
    let replicas = [replica(&s, &url, "5"), replica(&s, &url, "5")];
    let sessions = 200;
    let started = std::time::Instant::now();
    let runs = (0..sessions).map(|i| {
        let (a, b) = (&replicas[i % 2], &replicas[(i + 1) % 2]);
        let model = model.clone();
        async move {
            // The first turn on one replica, followed on the other.
            let (status, created) = post(
                a,
                "/api/sessions",
                json!({"mode": "work", "model": model, "message": format!("first {i}")}),
            )
            .await;
            assert_eq!(status, 201, "{created}");
            let id = created["session_id"].as_str().unwrap().to_owned();
            until_turns(b, &id, 1).await;
            // The second turn on the other replica, followed on the first.
            let (status, body) = post(
                b,
                &format!("/api/sessions/{id}/messages"),
                json!({"text": format!("second {i}")}),
            )
            .await;
            assert_eq!(status, 202, "{body}");
            let seen_on_a = until_turns(a, &id, 2).await;
            let seen_on_b = until_turns(b, &id, 2).await;
            (id, seen_on_a, seen_on_b)
        }
    });
    let done = futures_util::future::join_all(runs).await;
    let elapsed = started.elapsed();
    eprintln!(
        "{sessions} sessions, {} turns over two replicas in {elapsed:?}",
        sessions * 2
    );
    for (id, on_a, on_b) in &done {
        assert_gapless(on_a);
        // Both replicas' streams carry the same events.
        let key = |e: &Sse| (e.id, e.kind.clone(), e.data.clone());
        assert_eq!(
            on_a.iter().map(key).collect::<Vec<_>>(),
            on_b.iter().map(key).collect::<Vec<_>>()
        );
        assert_eq!(of_kind(on_a, "turn_started"), 2, "{id}: {on_a:#?}");
        assert_eq!(of_kind(on_a, "turn_completed"), 2, "{id}");
        // The transcript holds each turn once.
        let (status, shown) = replicas[0]
            .call("GET", &format!("/api/sessions/{id}"), None)
            .await;
        assert_eq!(status, 200);
        let roles: Vec<&str> = shown["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["message"]["role"].as_str().unwrap())
            .collect();
        assert_eq!(roles, ["user", "assistant", "user", "assistant"], "{id}");
    }
}

fn of_kind(events: &[Sse], kind: &str) -> usize {
    events.iter().filter(|e| e.kind == kind).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_of_a_killed_replica_is_finished_by_the_other_after_its_lease() {
    let Some(url) = database().await else { return };
    let s = Sandbox::new();
    // A reply that takes about three seconds to stream.
    let words = vec!["word"; 30].join(" ");
    let model = script(
        &s,
        "slow.yaml",
        &format!("turns:\n  - reply: {{text: {words} done, word_delay_ms: 100}}\n"),
    );
    let mut doomed = replica(&s, &url, "2");
    let survivor = replica(&s, &url, "2");
    let (status, created) = post(
        &doomed,
        "/api/sessions",
        json!({"mode": "work", "model": model, "message": "take your time"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    // The turn is streaming on the doomed replica, as the survivor's
    // stream of it shows.
    read_events(&survivor, &id, None, |e| e.kind == "message_delta").await;
    let (status, refused) = post(
        &survivor,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "me too"}),
    )
    .await;
    assert_eq!(status, 409, "the turn is the doomed replica's: {refused}");
    assert_eq!(refused["code"], "session/busy");
    let _ = std::process::Command::new("kill")
        .args(["-KILL", &doomed.child.id().to_string()])
        .status();
    let _ = doomed.child.wait();
    // Past the lease, the survivor's sweeper finishes the turn.
    let events = tokio::time::timeout(Duration::from_secs(30), until_turns(&survivor, &id, 1))
        .await
        .expect("the survivor finished the turn");
    assert_gapless(&events);
    let completed = events.last().unwrap();
    assert_eq!(completed.kind, "turn_completed");
    let (_, shown) = survivor
        .call("GET", &format!("/api/sessions/{id}"), None)
        .await;
    let transcript = shown["transcript"].as_array().unwrap();
    let roles: Vec<&str> = transcript
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant"], "one answer: {shown:#}");
    assert!(
        transcript[1]["message"]["content"]
            .as_str()
            .unwrap()
            .ends_with("done")
    );
    // The session is the survivor's to go on with.
    let (status, _) = post(
        &survivor,
        &format!("/api/sessions/{id}/messages"),
        json!({"text": "thanks"}),
    )
    .await;
    assert_eq!(status, 202);
}

#[tokio::test]
async fn readiness_follows_the_database() {
    let Some(url) = database().await else { return };
    let s = Sandbox::new();
    let server = replica(&s, &url, "30");
    let ready = || async {
        server
            .http
            .get(format!("{}/.well-known/evoflux/ready", server.url))
            .send()
            .await
            .unwrap()
    };
    assert_eq!(ready().await.status(), 204);
    // The database goes away under the server.
    let name = url.rsplit('/').next().unwrap().to_owned();
    let admin = std::env::var(evoflux_store::testing::POSTGRES_ENV).unwrap();
    let dropped = std::process::Command::new("psql")
        .args([
            admin.as_str(),
            "-qc",
            &format!("DROP DATABASE {name} WITH (FORCE)"),
        ])
        .status()
        .unwrap();
    assert!(dropped.success());
    let answer = ready().await;
    assert_eq!(answer.status(), 503);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "server/database-unavailable");
}

#[tokio::test]
async fn a_data_dir_moves_to_postgres_and_back_and_its_sessions_go_on_there() {
    let Some(url) = database().await else { return };
    let s = Sandbox::new();
    let model = script(
        &s,
        "hi.yaml",
        "turns:\n  - reply: {text: hi}\n  - reply: {text: again}\n",
    );
    let id = session_id(&run_ok(
        &s,
        &[
            "--json", "run", "--mode", "work", "--model", &model, "hello",
        ],
    ));
    let dump = s.tmp.path().join("sessions.jsonl");
    let dump = dump.to_str().unwrap();
    let exported = s.json(&["--json", "store", "export", dump]);
    assert_eq!(exported["tables"]["sessions"], 1);
    // An existing file is never overwritten.
    let again = s.run(&["store", "export", dump]);
    assert!(!again.status.success());

    let on_pg = |args: &[&str]| {
        let mut c = s.command(args);
        c.env("EVOFLUX_DATABASE_URL", &url)
            .env("PATH", std::env::var("PATH").unwrap());
        c.output().unwrap()
    };
    let migrated = on_pg(&["--json", "store", "migrate"]);
    assert!(migrated.status.success());
    let migrated = common::json(&migrated);
    assert_eq!(migrated["backend"], "postgres");
    assert_eq!(migrated["sessions"], 0);
    let imported = on_pg(&["--json", "store", "import", dump]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    assert_eq!(common::json(&imported)["tables"]["transcript_entries"], 2);
    // The session goes on on PostgreSQL.
    let resumed = on_pg(&[
        "--json", "sessions", "resume", &id, "--model", &model, "more",
    ]);
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let shown = on_pg(&["--json", "sessions", "show", &id]);
    assert_eq!(
        common::json(&shown)["transcript"].as_array().unwrap().len(),
        4
    );
    // A second import into a database in use is refused.
    let twice = on_pg(&["--json", "store", "import", dump]);
    assert!(!twice.status.success());
    assert_eq!(common::stderr_codes(&twice), ["store/import-not-empty"]);

    // And back: PostgreSQL's sessions into a new data directory.
    let back = s.tmp.path().join("back.jsonl");
    let back = back.to_str().unwrap();
    assert!(on_pg(&["store", "export", back]).status.success());
    let other = Sandbox::new();
    other.json(&["--json", "store", "import", back]);
    let shown = other.json(&["--json", "sessions", "show", &id]);
    assert_eq!(shown["transcript"].as_array().unwrap().len(), 4);
}

#[test]
fn a_repository_cannot_name_the_session_database() {
    let s = Sandbox::new();
    s.project(
        "config.toml",
        "[store]\nurl = \"postgres://attacker.example/loot\"\n",
    );
    s.trust();
    let out = s.run(&["--json", "config", "check"]);
    assert!(!out.status.success());
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(text.contains("config/project-store"), "{text}");
}

/// An approval and a cancel sent to the replica that does not run the
/// turn reach the one that does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_cancels_reach_the_replica_running_the_turn() {
    let Some(url) = database().await else { return };
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let words = vec!["word"; 100].join(" ");
    let model = script(
        &s,
        "approve.yaml",
        &format!(
            r#"
turns:
  - reply:
      tool_calls:
        - {{name: shell, arguments: {{command: "touch approved.txt"}}}}
  - reply: {{text: "{words}", word_delay_ms: 100}}
"#
        ),
    );
    let runner = replica(&s, &url, "10");
    let other = replica(&s, &url, "10");
    let (status, created) = post(
        &runner,
        "/api/sessions",
        json!({"mode": "work", "model": model, "message": "go"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    let asked = read_events(&other, &id, None, |e| e.kind == "approval_requested").await;
    let call = asked.last().unwrap().data["call_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (status, nobody) = post(
        &other,
        &format!("/api/sessions/{id}/approvals/call_nope"),
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 404, "{nobody}");
    assert_eq!(nobody["code"], "session/no-pending-approval");
    let (status, approved) = post(
        &other,
        &format!("/api/sessions/{id}/approvals/{call}"),
        json!({"decision": "approve"}),
    )
    .await;
    assert_eq!(status, 202, "{approved}");
    // The approved command ran on the runner; its slow answer streams.
    let after = asked.last().unwrap().id;
    let ran = read_events(&other, &id, Some(after), |e| e.kind == "message_delta").await;
    assert!(
        ran.iter().any(|e| e.kind == "tool_ended"
            && e.data["call_id"] == call.as_str()
            && e.data["is_error"] == false),
        "{ran:#?}"
    );
    let (status, cancelled) = post(&other, &format!("/api/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(status, 202, "{cancelled}");
    let ended = read_events(&other, &id, Some(ran.last().unwrap().id), |e| {
        e.kind == "turn_cancelled" || e.kind == "turn_completed"
    })
    .await;
    assert_eq!(ended.last().unwrap().kind, "turn_cancelled", "{ended:#?}");
    // Nothing runs now: a cancel anywhere has nothing to stop.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, idle) = post(&other, &format!("/api/sessions/{id}/cancel"), json!({})).await;
    assert_eq!(status, 409, "{idle}");
    assert_eq!(idle["code"], "session/idle");
}

/// `moto_server` from PyPI (`EVOFLUX_TEST_MOTO` names it): an S3-compatible
/// server on a loopback port, with one bucket.
struct S3 {
    child: std::process::Child,
    endpoint: String,
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn s3() -> Option<S3> {
    let Ok(moto) = std::env::var("EVOFLUX_TEST_MOTO") else {
        eprintln!("skipping: EVOFLUX_TEST_MOTO (moto_server from PyPI) is not set");
        return None;
    };
    let port = common::free_port();
    let child = std::process::Command::new(moto)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed and waited for when dropped, whatever happens below.
    let server = S3 {
        child,
        endpoint: format!("http://127.0.0.1:{port}"),
    };
    let http = reqwest::Client::new();
    for _ in 0..200 {
        if http.get(&server.endpoint).send().await.is_ok() {
            let made = http
                .put(format!("{}/evoflux-test", server.endpoint))
                .send()
                .await
                .unwrap();
            assert!(made.status().is_success(), "{}", made.status());
            return Some(server);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("moto_server did not start");
}

/// A replica's turn writes a command's output; a replica with another
/// data directory serves it from the S3-compatible store; deleting the
/// session removes it there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn artifacts_reach_every_replica_through_an_s3_compatible_store() {
    evoflux_core::tls::install_crypto_provider();
    let Some(url) = database().await else { return };
    let Some(s3) = s3().await else { return };
    let env = [
        ("EVOFLUX_DATABASE_URL", url.as_str()),
        ("EVOFLUX_ARTIFACTS_URL", "s3://evoflux-test/artifacts"),
        (
            "EVOFLUX_SERVER_TOKEN",
            "replica-test-token-0123456789abcdef",
        ),
        ("AWS_ENDPOINT", s3.endpoint.as_str()),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
    ];
    let (one, two) = (Sandbox::new(), Sandbox::new());
    let model = script(
        &one,
        "echo.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "for i in $(seq 1 2000); do echo line $i from the first replica; done"}}
  - reply: {text: done}
"#,
    );
    let mut writer = Server::start_with_env(&one, &[], &env);
    let mut reader = Server::start_with_env(&two, &[], &env);
    writer.token = env[2].1.to_owned();
    reader.token = env[2].1.to_owned();
    let (status, created) = post(
        &writer,
        "/api/sessions",
        json!({"mode": "work", "model": model, "message": "write"}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    let events = until_turns(&reader, &id, 1).await;
    let ended = events
        .iter()
        .find(|e| e.kind == "tool_ended")
        .expect("the command ran");
    let artifact = ended.data["metadata"]["artifact"]
        .as_str()
        .unwrap_or_else(|| panic!("no artifact: {ended:#?}"))
        .to_owned();
    assert!(
        !two.home()
            .join(".local/share/evoflux/artifacts")
            .join(&id)
            .exists(),
        "the reader has no copy of its own"
    );
    // The locator is the writer's path: letters, digits, `/._-` only.
    // The file reached the store before the event naming it did.
    let got = reader
        .get(&format!("/api/sessions/{id}/artifact?path={artifact}"))
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    let text = got.text().await.unwrap();
    assert!(text.contains("line 2000 from the first replica"), "{text}");
    let outside = reader
        .get(&format!("/api/sessions/{id}/artifact?path=../x"))
        .send()
        .await
        .unwrap();
    assert_eq!(outside.status(), 403);
    // Deleted on the reader: gone from the store too.
    let deleted = reader
        .request("DELETE", &format!("/api/sessions/{id}"))
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 204);
    let listing = reqwest::Client::new()
        .get(format!(
            "{}/evoflux-test?list-type=2&prefix=artifacts/{id}",
            s3.endpoint
        ))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(!listing.contains("<Key>"), "{listing}");
}
