#![allow(clippy::unwrap_used, clippy::expect_used)]

//! One writer per session, through the real binary: a `sessions resume` of
//! a session another process runs a turn on is refused, naming that
//! process, instead of interleaving its messages with the other's; and a
//! process that died holding a session blocks it only until its lease
//! expires.

use crate::common;

use std::io::{BufRead, BufReader, Lines};
use std::process::{Child, ChildStdout, Output, Stdio};
use std::time::Duration;

use common::{Sandbox, events, of_type, run, run_ok, script, session_id, typed};

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The sandbox's session store, as the binary opens it.
async fn store(s: &Sandbox) -> evoflux_store::Store {
    let dirs = evoflux_app::testing::dirs(s.tmp.path());
    evoflux_store::Store::open(dirs.data_dir()).await.unwrap()
}

/// A session with one finished turn, and its scripted model.
fn session(s: &Sandbox) -> (String, String) {
    let model = script(s, "model.yaml", "turns:\n  - reply: {text: first}\n");
    let ev = run_ok(s, &["--json", "run", "--model", &model, "hello"]);
    (session_id(&ev), model)
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Runtime::new().unwrap().block_on(future)
}

/// Leaves a lease on session `id` for `ttl` under `holder`, as another
/// process holding it would.
async fn hold(s: &Sandbox, id: &str, holder: &str, ttl: Duration) {
    store(s)
        .await
        .acquire_lease(id.parse().unwrap(), holder, ttl)
        .await
        .unwrap()
        .expect("the session was free");
}

/// A `--json sessions resume` of `id` whose model streams `text` a word
/// every 100 ms, once it streams: the process and the rest of its stdout.
fn resume_streaming(
    s: &Sandbox,
    id: &str,
    text: &str,
    stderr: Stdio,
) -> (Child, Lines<BufReader<ChildStdout>>) {
    script(
        s,
        "model.yaml",
        &format!("turns:\n  - reply: {{text: {text}, word_delay_ms: 100}}\n"),
    );
    let mut child = s
        .command(&["--json", "sessions", "resume", id, "take your time"])
        .env("PATH", std::env::var("PATH").unwrap())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    // Streaming: the turn runs, under the session's lease.
    for line in lines.by_ref() {
        let line = line.unwrap();
        let streaming = line.contains("\"message_delta\"");
        seen.push(line);
        if streaming {
            break;
        }
    }
    assert!(
        seen.iter().any(|l| l.contains("message_delta")),
        "the resume never streamed: {seen:?}"
    );
    (child, lines)
}

/// Expects `out` refused, on stderr, because `holder` holds session `id`.
fn assert_busy(out: &Output, id: &str, holder: &str) {
    assert!(
        stderr(out).contains(&format!(
            "error[session/busy]: session {id} is busy: held by {holder}"
        )),
        "{}",
        stderr(out)
    );
}

/// The user's messages in session `id`'s transcript.
fn user_messages(s: &Sandbox, id: &str) -> Vec<String> {
    let shown = s.json(&["--json", "sessions", "show", id]);
    shown["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| e["message"]["content"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_second_resume_while_a_turn_runs_is_refused_naming_the_holder() {
    let s = Sandbox::new();
    let (id, _) = session(&s);
    // The next turn streams its answer for about three seconds.
    let words = vec!["word"; 30].join(" ");
    let (mut first, lines) = resume_streaming(&s, &id, &format!("{words} done"), Stdio::piped());

    let second = run(&s, &["--json", "sessions", "resume", &id, "me too"]);
    assert_eq!(second.status.code(), Some(5), "{}", stderr(&second));
    let ev = events(&second);
    let errors = of_type(&ev, "error");
    assert_eq!(errors.len(), 1, "{ev:?}");
    assert_eq!(errors[0]["code"], "session/busy");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!(
            "session {id} is busy: held by evoflux sessions resume (pid {}) on host ",
            first.id()
        )),
        "{message}"
    );
    assert!(message.contains(" since "), "{message}");
    assert!(
        of_type(&ev, "turn_started").is_empty(),
        "nothing ran: {ev:?}"
    );

    // People read the same on stderr.
    let human = run(&s, &["sessions", "resume", &id, "me too"]);
    assert_eq!(human.status.code(), Some(5));
    let holder = format!("evoflux sessions resume (pid {})", first.id());
    assert_busy(&human, &id, &holder);

    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    let status = first.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut first.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(
        rest.iter().any(|l| l.contains("\"turn_completed\"")),
        "{rest:?}"
    );

    // Its turn over, the session is free again.
    script(&s, "model.yaml", "turns:\n  - reply: {text: third}\n");
    let ev = run_ok(&s, &["--json", "sessions", "resume", &id, "and now"]);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "third");

    // One writer at a time: the refused message never reached the session.
    assert_eq!(
        user_messages(&s, &id),
        ["hello", "take your time", "and now"]
    );
}

#[test]
fn a_session_held_by_a_process_that_died_is_free_once_its_lease_expires() {
    let s = Sandbox::new();
    let (id, _) = session(&s);
    // A run killed mid-turn on another machine: its lease is never renewed
    // nor released.
    let dead = "evoflux run (pid 4242) on host elsewhere since 2026-01-01 00:00:00 UTC";
    block_on(hold(&s, &id, dead, Duration::from_secs(2)));
    let refused = run(&s, &["--json", "sessions", "resume", &id, "hello?"]);
    assert_eq!(refused.status.code(), Some(5), "{}", stderr(&refused));
    let ev = events(&refused);
    let message = of_type(&ev, "error")[0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains(&format!("held by {dead}")), "{message}");

    std::thread::sleep(Duration::from_millis(2500));
    script(&s, "model.yaml", "turns:\n  - reply: {text: back}\n");
    let ev = run_ok(&s, &["--json", "sessions", "resume", &id, "hello?"]);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "back");
    // And the lease is free after it, for anyone.
    block_on(async {
        let held = store(&s)
            .await
            .lease_holder(id.parse().unwrap())
            .await
            .unwrap()
            .unwrap();
        assert!(!held.running, "{held:?}");
        assert!(held.holder.starts_with("evoflux sessions resume (pid "));
    });
}

#[test]
fn run_with_session_takes_the_lease_too() {
    let s = Sandbox::new();
    let (id, model) = session(&s);
    let holder = "evoflux chat (pid 7) on host desk since 2026-01-01 00:00:00 UTC";
    block_on(hold(&s, &id, holder, Duration::from_secs(30)));
    let refused = run(
        &s,
        &["run", "--session", &id, "--model", &model, "hello again"],
    );
    assert_eq!(refused.status.code(), Some(5), "{}", stderr(&refused));
    assert_busy(&refused, &id, holder);
}

#[test]
fn a_chat_message_while_another_process_holds_the_session_is_refused_and_the_chat_goes_on() {
    let s = Sandbox::new();
    let (id, _) = session(&s);
    let holder = "evoflux run (pid 4242) on host elsewhere since 2026-01-01 00:00:00 UTC";
    block_on(hold(&s, &id, holder, Duration::from_secs(30)));
    // `typed` expects the chat to end successfully.
    let out = typed(&s, &["chat", "--session", &id], "are you there?\n");
    assert_busy(&out, &id, holder);
    let users = user_messages(&s, &id);
    assert_eq!(
        users.len(),
        1,
        "the refused message was not sent: {users:?}"
    );
}

#[test]
fn a_resume_killed_mid_turn_does_not_block_the_next() {
    let s = Sandbox::new();
    let (id, _) = session(&s);
    let words = vec!["word"; 100].join(" ");
    let (mut doomed, _stdout) = resume_streaming(&s, &id, &words, Stdio::null());
    // SIGKILL: no release, no renewal.
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    script(
        &s,
        "model.yaml",
        "turns:\n  - reply: {text: after the crash}\n",
    );
    let ev = run_ok(&s, &["--json", "sessions", "resume", &id, "are you back?"]);
    assert_eq!(of_type(&ev, "turn_completed")[0]["text"], "after the crash");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_refuses_a_turn_on_a_session_a_cli_holds_naming_it() {
    let s = Sandbox::new();
    let (id, _) = session(&s);
    let holder =
        "evoflux sessions resume (pid 4242) on host elsewhere since 2026-01-01 00:00:00 UTC";
    hold(&s, &id, holder, Duration::from_secs(30)).await;
    let server = common::server::Server::start(&s, &[]);
    let (status, refused) = server
        .call(
            "POST",
            &format!("/api/sessions/{id}/messages"),
            Some(serde_json::json!({"text": "me too"})),
        )
        .await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["code"], "session/busy");
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains(&format!("held by {holder}")),
        "{refused}"
    );
}
