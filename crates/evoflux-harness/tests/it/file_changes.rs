#![allow(clippy::unwrap_used, clippy::expect_used)]

//! What a front end is given to show beside the model's view: the diff of
//! each `edit` and `write` (the `change` of a `tool_ended`'s metadata,
//! which the model never reads) and the folder a command would run in,
//! with its approval.

use crate::common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::{Recorder, Reply, World, call, text};
use evoflux_core::AppMode;
use evoflux_core::config::Approval;
use evoflux_harness::approval::{ApprovalFuture, ApprovalPolicy};
use evoflux_harness::client_files::{ClientFiles, FilesFuture};
use evoflux_harness::metadata::FileChange;
use evoflux_harness::{
    ApprovalDecision, ApprovalRequest, Approver, CollectEvents, Decided, DecidedBy, Event, Harness,
    ProcessRuntime, SessionRequest, TurnOptions, TurnStatus,
};
use evoflux_store::WorkspaceRequest;
use evoflux_tools::RuntimeConfig;
use serde_json::json;

fn coding(world: &World) -> SessionRequest {
    SessionRequest::New {
        workspace: WorkspaceRequest::Coding(vec![world.repo()]),
        graph_hash: None,
    }
}

/// The `change` of each `tool_ended`, by call id.
fn changes(events: &[Event]) -> HashMap<String, Option<FileChange>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::ToolEnded {
                call_id, metadata, ..
            } => Some((
                call_id.clone(),
                metadata.as_ref().and_then(|m| m.change.as_deref().cloned()),
            )),
            _ => None,
        })
        .collect()
}

/// Runs one turn of `replies` in a Coding session over `files`; the
/// world (to look at the files), the harness, the model's requests and
/// the events.
async fn run(
    files: &[(&str, &str)],
    replies: Vec<Reply>,
) -> (World, Harness, Arc<Recorder>, Vec<Event>) {
    let world = World::with_files(files);
    let provider = Recorder::new(replies);
    let events = Arc::new(CollectEvents::default());
    let setup = world
        .setup(AppMode::Coding, provider.clone(), events.clone())
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    let out = h
        .turn(Some("change it"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.status, TurnStatus::Completed);
    (world, h, provider, events.take())
}

#[tokio::test]
async fn edit_and_write_end_with_their_diff_which_the_model_never_sees() {
    let (world, h, provider, events) = run(
        &[
            ("src/lib.rs", "a\nb\nc\nd\ne\nf\ng\nh\n"),
            ("old.txt", "one\ntwo\n"),
        ],
        vec![
            call(
                "c1",
                "edit",
                json!({"path": "src/lib.rs", "old_string": "e\n", "new_string": "E\nE2\n"}),
            ),
            call(
                "c2",
                "write",
                json!({"path": "new.txt", "content": "x\ny\n"}),
            ),
            call(
                "c3",
                "write",
                json!({"path": "old.txt", "content": "one\n2\n"}),
            ),
            text("Done."),
        ],
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(world.repo().join("src/lib.rs")).unwrap(),
        "a\nb\nc\nd\nE\nE2\nf\ng\nh\n"
    );
    let changes = changes(&events);
    let edit = changes["c1"].clone().expect("the edit's change");
    assert_eq!(
        edit,
        FileChange {
            path: "src/lib.rs".into(),
            created: false,
            diff: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -2,7 +2,8 @@\n b\n c\n d\n-e\n+E\n+E2\n f\n g\n h\n"
                .into(),
            added: 2,
            removed: 1,
            truncated: false,
        }
    );
    let created = changes["c2"].clone().expect("the new file's change");
    assert_eq!(
        created,
        FileChange {
            path: "new.txt".into(),
            created: true,
            diff: "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+x\n+y\n".into(),
            added: 2,
            removed: 0,
            truncated: false,
        }
    );
    let overwritten = changes["c3"].clone().expect("the overwrite's change");
    assert_eq!(
        overwritten,
        FileChange {
            path: "old.txt".into(),
            created: false,
            diff: "--- a/old.txt\n+++ b/old.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n".into(),
            added: 1,
            removed: 1,
            truncated: false,
        }
    );

    // The model reads the tools' answers, never their diffs.
    let last = serde_json::to_string(&provider.last_request()).unwrap();
    assert!(
        last.contains("Replaced 1 occurrence in src/lib.rs"),
        "{last}"
    );
    assert!(last.contains("Created new.txt (4 bytes)"), "{last}");
    assert!(last.contains("Overwrote old.txt (6 bytes)"), "{last}");
    for diff in [&edit.diff, &created.diff, &overwritten.diff] {
        assert!(!last.contains(diff.as_str()));
    }
    assert!(!last.contains("+++ b/") && !last.contains("@@ -"), "{last}");

    // The transcript keeps the change beside the result, for a reload.
    let store = evoflux_store::Store::open(world.data()).await.unwrap();
    let stored: Vec<_> = store
        .transcript(h.session().id)
        .await
        .unwrap()
        .into_iter()
        .filter_map(|e| e.artifact)
        .collect();
    assert!(
        stored
            .iter()
            .any(|a| a["change"]["diff"] == json!(edit.diff)),
        "{stored:?}"
    );
}

/// A write whose change is huge: a large file replaced by one line (the
/// content sent with the call must fit the test model's window, so the
/// size is on the side of what was there; the executor's own tests cut a
/// huge new file the same way).
#[tokio::test]
async fn a_huge_write_has_a_diff_cut_at_the_limit_that_still_counts_every_line() {
    let before: String = (0..10_000).map(|i| format!("line number {i}\n")).collect();
    let (_world, _h, provider, events) = run(
        &[("big.txt", &before)],
        vec![
            call(
                "c1",
                "write",
                json!({"path": "big.txt", "content": "short\n"}),
            ),
            text("Done."),
        ],
    )
    .await;
    let change = changes(&events)["c1"].clone().expect("a change");
    assert!(!change.created && change.truncated);
    assert_eq!((change.added, change.removed), (1, 10_000));
    assert!(change.diff.len() <= evoflux_tools::DIFF_LIMIT_BYTES);
    assert!(change.diff.len() > evoflux_tools::DIFF_LIMIT_BYTES - 100);
    assert!(
        change
            .diff
            .starts_with("--- a/big.txt\n+++ b/big.txt\n@@ -1,10000 +1 @@\n-line number 0\n")
    );
    assert!(change.diff.ends_with('\n'));
    assert!(
        change
            .diff
            .lines()
            .skip(3)
            .all(|l| l.starts_with("-line number "))
    );
    let last = serde_json::to_string(&provider.last_request()).unwrap();
    assert!(last.contains("Overwrote big.txt (6 bytes)"), "{last}");
    assert!(!last.contains("-line number"));
}

#[tokio::test]
async fn a_binary_overwrite_has_no_change() {
    let (_world, _h, _provider, events) = run(
        &[("data.bin", "a\0b")],
        vec![
            call(
                "c1",
                "write",
                json!({"path": "data.bin", "content": "text\n"}),
            ),
            text("Done."),
        ],
    )
    .await;
    assert_eq!(changes(&events)["c1"], None);
}

/// An editor's buffers: what it holds (unsaved text included) and what it
/// was told to write.
#[derive(Debug, Default)]
struct Editor {
    buffers: Mutex<HashMap<PathBuf, String>>,
}

impl ClientFiles for Editor {
    fn reads(&self) -> bool {
        true
    }

    fn writes(&self) -> bool {
        true
    }

    fn read_text<'a>(&'a self, path: &'a Path) -> FilesFuture<'a, String> {
        Box::pin(async move {
            self.buffers
                .lock()
                .unwrap()
                .get(path)
                .cloned()
                .ok_or_else(|| "not open".to_owned())
        })
    }

    fn write_text<'a>(&'a self, path: &'a Path, content: &'a str) -> FilesFuture<'a, ()> {
        Box::pin(async move {
            self.buffers
                .lock()
                .unwrap()
                .insert(path.to_path_buf(), content.to_owned());
            Ok(())
        })
    }
}

#[tokio::test]
async fn changes_through_the_editor_diff_its_buffers() {
    let world = World::with_files(&[("a.txt", "on disk\n"), ("b.txt", "on disk\n")]);
    let editor = Arc::new(Editor::default());
    // Unsaved changes in the editor: the diffs are against these.
    for name in ["a.txt", "b.txt"] {
        editor
            .buffers
            .lock()
            .unwrap()
            .insert(world.repo().join(name), "unsaved\n".into());
    }
    let provider = Recorder::new(vec![
        call(
            "c1",
            "edit",
            json!({"path": "a.txt", "old_string": "unsaved", "new_string": "edited"}),
        ),
        call(
            "c2",
            "write",
            json!({"path": "b.txt", "content": "written\n"}),
        ),
        call("c3", "write", json!({"path": "c.txt", "content": "new\n"})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let setup = world
        .setup(AppMode::Coding, provider.clone(), events.clone())
        .await;
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    h.use_client_files(editor.clone());
    h.turn(Some("change it"), TurnOptions::default())
        .await
        .unwrap();
    let changes = changes(&events.take());
    let diff = |c: &str| changes[c].clone().expect("a change");
    assert_eq!(
        diff("c1").diff,
        "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-unsaved\n+edited\n"
    );
    assert_eq!(
        diff("c2").diff,
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-unsaved\n+written\n"
    );
    assert!(diff("c3").created);
    assert_eq!((diff("c3").added, diff("c3").removed), (1, 0));
    // The disk was left to the editor.
    assert_eq!(
        std::fs::read_to_string(world.repo().join("a.txt")).unwrap(),
        "on disk\n"
    );
    let last = serde_json::to_string(&provider.last_request()).unwrap();
    assert!(
        last.contains("in the editor") && !last.contains("@@ -"),
        "{last}"
    );
}

/// Keeps every request it is asked and denies it (nothing runs).
#[derive(Debug, Default)]
struct Refuses {
    asked: Mutex<Vec<ApprovalRequest>>,
}

impl Approver for Refuses {
    fn approve<'a>(&'a self, request: &'a ApprovalRequest) -> ApprovalFuture<'a> {
        self.asked.lock().unwrap().push(request.clone());
        Box::pin(async {
            Decided {
                decision: ApprovalDecision::Denied {
                    reason: "not now".into(),
                },
                by: DecidedBy::Policy,
            }
        })
    }
}

#[tokio::test]
async fn an_approval_names_the_folder_its_command_would_run_in() {
    let world = World::with_files(&[("sub/keep.txt", "")]);
    let provider = Recorder::new(vec![
        call(
            "c1",
            "shell",
            json!({"command": "touch made", "workdir": "sub"}),
        ),
        call("c2", "shell", json!({"command": "touch made"})),
        call("c3", "write", json!({"path": "w.txt", "content": "w\n"})),
        text("Done."),
    ]);
    let events = Arc::new(CollectEvents::default());
    let approver = Arc::new(Refuses::default());
    let mut setup = world
        .setup_with(
            AppMode::Coding,
            provider.clone(),
            events.clone(),
            approver.clone(),
        )
        .await;
    setup.processes = Some(ProcessRuntime::new(RuntimeConfig::new(
        world.data().join("artifacts"),
    )));
    setup.approvals = ApprovalPolicy {
        set: [
            ("shell".to_owned(), Approval::Always),
            ("write".to_owned(), Approval::Always),
        ]
        .into(),
        ..ApprovalPolicy::default()
    };
    let mut h = Harness::open(setup, coding(&world)).await.unwrap();
    h.turn(Some("make it"), TurnOptions::default())
        .await
        .unwrap();
    let root = world.repo();
    let asked: Vec<(String, Option<PathBuf>)> = approver
        .asked
        .lock()
        .unwrap()
        .iter()
        .map(|r| (r.call_id.clone(), r.workdir.clone()))
        .collect();
    assert_eq!(
        asked,
        [
            ("c1".to_owned(), Some(root.join("sub"))),
            ("c2".to_owned(), Some(root.clone())),
            // Not a command: no folder.
            ("c3".to_owned(), None),
        ]
    );
    // The event every front end sees says the same.
    let announced: Vec<Option<String>> = events
        .take()
        .iter()
        .filter_map(|e| match e {
            Event::ApprovalRequested { workdir, .. } => Some(workdir.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        announced,
        [
            Some(root.join("sub").display().to_string()),
            Some(root.display().to_string()),
            None,
        ]
    );
    assert!(!root.join("sub/made").exists() && !root.join("made").exists());
}
