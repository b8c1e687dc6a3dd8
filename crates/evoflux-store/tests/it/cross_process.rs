//! A writer process killed with SIGKILL loses nothing it committed.
//!
//! The writer is this same test binary re-run with the ignored helper test
//! selected; it learns the data directory and session from the environment
//! and prints the sequence number of every committed append on stdout.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use evoflux_core::ids::SessionId;
use evoflux_store::{
    Message, NewSession, PendingRequest, Store, ToolCall, Usage, WorkspaceRequest,
};
use serde_json::json;

const DATA_VAR: &str = "EVOFLUX_STORE_TEST_DATA";
const SESSION_VAR: &str = "EVOFLUX_STORE_TEST_SESSION";
/// Appends the parent waits to see committed before it kills the writer.
const BEFORE_KILL: u64 = 12;

fn message(n: u64) -> Message {
    match n % 3 {
        1 => Message::User {
            content: format!("message {n}"),
            media: Vec::new(),
        },
        2 => Message::Assistant {
            provider_items: Vec::new(),
            content: format!("message {n}"),
            tool_calls: vec![ToolCall {
                id: format!("call_{n}"),
                name: "read".into(),
                arguments: json!({"path": format!("f{n}.txt")}),
            }],
        },
        _ => Message::Tool {
            tool_call_id: format!("call_{}", n - 1),
            content: format!("message {n}"),
            is_error: false,
            media: Vec::new(),
        },
    }
}

/// Tool results carry artifact metadata beside the message.
fn artifact(n: u64) -> Option<serde_json::Value> {
    n.is_multiple_of(3).then(|| json!({"n": n}))
}

async fn append(store: &Store, id: SessionId, n: u64) -> evoflux_store::TranscriptEntry {
    match artifact(n) {
        Some(a) => store
            .append_with_artifact(id, &message(n), &a)
            .await
            .unwrap(),
        None => store.append_message(id, &message(n)).await.unwrap(),
    }
}

#[tokio::test]
#[ignore = "helper process for killed_writer_loses_no_committed_entry"]
async fn helper_appending_writer() {
    let data = PathBuf::from(std::env::var_os(DATA_VAR).expect("run by the parent test"));
    let id: SessionId = std::env::var(SESSION_VAR).unwrap().parse().unwrap();
    let store = Store::open(&data).await.unwrap();
    store
        .create_pending_input(
            id,
            "call_ask",
            &PendingRequest::question("ask_user", "continue?"),
        )
        .await
        .unwrap();
    // Append until killed; stop after a minute so a broken parent never
    // leaves this process behind for long.
    for n in 1..=6000u64 {
        let entry = append(&store, id, n).await;
        store
            .add_usage(
                id,
                Usage {
                    requests: 1,
                    ..Usage::default()
                },
            )
            .await
            .unwrap();
        println!("COMMITTED {}", entry.seq);
        if n >= BEFORE_KILL {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

#[tokio::test]
async fn killed_writer_loses_no_committed_entry() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(dir.path()).await.unwrap();
    let session = store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Work,
            lead: None,
            model: None,
            graph_hash: None,
            parent: None,
        })
        .await
        .unwrap();
    store.close().await;

    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            // The test binary holds every integration test of the crate.
            "cross_process::helper_appending_writer",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(DATA_VAR, dir.path())
        .env(SESSION_VAR, session.id.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());

    // Forward every committed sequence number; libtest may print the first
    // one after `test name ... ` on the same line.
    let (tx, rx) = mpsc::channel::<u64>();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            let Ok(line) = line else { break };
            if let Some((_, n)) = line.rsplit_once("COMMITTED ")
                && let Ok(n) = n.trim().parse()
                && tx.send(n).is_err()
            {
                break;
            }
        }
    });
    let mut committed = 0;
    while committed < BEFORE_KILL {
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(n) => committed = n,
            Err(_) => {
                let _ = child.kill();
                panic!("the writer never committed {BEFORE_KILL} entries");
            }
        }
    }
    child.kill().unwrap(); // SIGKILL: no destructor, no checkpoint
    child.wait().unwrap();
    // Anything printed before the kill was committed before it was printed.
    while let Ok(n) = rx.try_recv() {
        committed = n;
    }

    let store = Store::open(dir.path()).await.unwrap();
    let entries = store.transcript(session.id).await.unwrap();
    assert!(
        entries.len() as u64 >= committed,
        "{} entries on disk, {committed} reported committed",
        entries.len()
    );
    println!(
        "writer reported {committed} committed; {} entries on disk",
        entries.len()
    );
    for (i, entry) in entries.iter().enumerate() {
        let n = i as u64 + 1;
        assert_eq!(entry.seq, n, "sequence numbers are gapless");
        assert_eq!(entry.message, message(n));
        assert_eq!(entry.artifact, artifact(n));
    }
    let open = store.open_pending_inputs(session.id).await.unwrap();
    assert_eq!(open.len(), 1);
    assert_eq!(open[0].tool_call_id, "call_ask");
    // Each entry's usage is committed after it, and reported after both.
    let requests = store.usage(session.id).await.unwrap().requests;
    assert!(requests >= committed && requests <= entries.len() as u64);

    // The session resumes and keeps appending after the crash.
    let resumed = store.resume(session.id, None, None).await.unwrap();
    let next = append(&store, resumed.id, entries.len() as u64 + 1).await;
    assert_eq!(next.seq, entries.len() as u64 + 1);
}
