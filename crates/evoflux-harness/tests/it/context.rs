#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The context owners in live runs: workspace instructions, offload,
//! projection, observation receipts and compaction, against a model that
//! enforces its context window.

use crate::context_support;

use std::collections::HashMap;
use std::sync::Arc;

use context_support::{Model, Reply, Repo, SUMMARY, call, redact, request_bytes, text};
use evoflux_agents::ToolCatalog;
use evoflux_core::AppMode;
use evoflux_graph::tool::Presentation;
use evoflux_harness::compaction::{
    COMPACTED_HEADER, Compacted, CompactionListener, CompactionRecord, MAX_DURABLE_SKILL_BYTES,
};
use evoflux_harness::hooks::{HookContext, ModelCall};
use evoflux_harness::prepared::{PreparedTools, SessionCapabilities};
use evoflux_harness::receipts::{COVERED_HEADER, REUSED_HEADER};
use evoflux_harness::workspace_instructions::{
    APPENDED_HEADER, INSTRUCTION_FILE_MAX_BYTES, PREFLIGHT_HEADER, TRUNCATION_NOTICE,
};
use evoflux_harness::{
    FixedClock, Harness, PipelineOptions, SessionRequest, TurnOptions, base_pipeline,
    standard_pipeline,
};
use evoflux_model::{Message, Request, ToolCall};
use evoflux_store::{NewSession, Store, WorkspaceRequest};
use serde_json::json;

fn pipeline(mode: AppMode) -> evoflux_harness::HookPipeline {
    standard_pipeline(PipelineOptions::new(mode)).unwrap()
}

fn system_text(r: &Request) -> String {
    match r.messages.first() {
        Some(Message::System { content }) => content.clone(),
        other => panic!("no system message: {other:?}"),
    }
}

fn tool_content<'a>(messages: &'a [Message], id: &str) -> &'a str {
    messages
        .iter()
        .find_map(|m| match m {
            Message::Tool {
                tool_call_id,
                content,
                ..
            } if tool_call_id == id => Some(content.as_str()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no result for {id}"))
}

async fn open(repo: &Repo, mode: AppMode, model: Arc<Model>, request: SessionRequest) -> Harness {
    let setup = repo.setup(mode, model, pipeline(mode), false).await;
    Harness::open(setup, request).await.unwrap()
}

// ---- workspace instructions ------------------------------------------------

#[tokio::test]
async fn claude_md_serves_a_directory_without_agents_md_and_only_then() {
    let repo = Repo::new(&[]);
    let top = repo.tmp.path().join("top");
    std::fs::create_dir_all(top.join(".git")).unwrap();
    std::fs::write(
        top.join("CLAUDE.md"),
        "CLAUDE-TOP: squash before merging.\n",
    )
    .unwrap();
    let app = top.join("app");
    std::fs::create_dir_all(&app).unwrap();
    std::fs::write(app.join("AGENTS.md"), "AGENTS-APP: run make check.\n").unwrap();
    std::fs::write(app.join("CLAUDE.md"), "CLAUDE-APP: must not appear.\n").unwrap();
    let app = app.canonicalize().unwrap();
    let model = Model::new(vec![text("Noted.")], Some(32_000), true);
    let mut h = open(
        &repo,
        AppMode::Coding,
        model.clone(),
        SessionRequest::New {
            workspace: WorkspaceRequest::Coding(vec![app]),
            graph_hash: None,
        },
    )
    .await;
    h.turn(Some("Hi."), TurnOptions::default()).await.unwrap();
    let system = system_text(&model.agent_requests()[0]);
    assert_eq!(system.matches("CLAUDE-TOP").count(), 1, "{system}");
    assert_eq!(system.matches("AGENTS-APP").count(), 1, "{system}");
    assert!(!system.contains("CLAUDE-APP"), "{system}");
}

#[tokio::test]
async fn multi_repo_prompts_contain_every_root_instruction_once() {
    let repo = Repo::new(&[]);
    // Two repositories inside one monorepo: its top file is shared.
    let mono = repo.tmp.path().join("mono");
    std::fs::create_dir_all(mono.join(".git")).unwrap();
    std::fs::write(
        mono.join("AGENTS.md"),
        "MONO-RULES: run the whole test suite.\n",
    )
    .unwrap();
    let a = mono.join("alpha");
    let b = mono.join("beta");
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    std::fs::write(
        a.join("AGENTS.md"),
        "ALPHA-RULES: use anyhow in binaries.\n",
    )
    .unwrap();
    std::fs::write(a.join("Cargo.toml"), "[package]\n").unwrap();
    std::fs::write(b.join("AGENTS.md"), "BETA-STANDARD: must not appear.\n").unwrap();
    std::fs::write(
        b.join("AGENTS.override.md"),
        "BETA-OVERRIDE: prefer pnpm.\n",
    )
    .unwrap();
    std::fs::write(b.join("package.json"), "{}").unwrap();
    std::fs::write(b.join("tsconfig.json"), "{}").unwrap();
    let (a, b) = (a.canonicalize().unwrap(), b.canonicalize().unwrap());
    let model = Model::new(
        vec![call("c1", "ls", json!({})), text("Both listed.")],
        Some(32_000),
        true,
    );
    let mut h = open(
        &repo,
        AppMode::Coding,
        model.clone(),
        SessionRequest::New {
            workspace: WorkspaceRequest::Coding(vec![a.clone(), b.clone()]),
            graph_hash: None,
        },
    )
    .await;
    h.turn(Some("Look around."), TurnOptions::default())
        .await
        .unwrap();
    let requests = model.agent_requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        let system = system_text(r);
        for rule in ["MONO-RULES", "ALPHA-RULES", "BETA-OVERRIDE"] {
            assert_eq!(system.matches(rule).count(), 1, "{rule} in:\n{system}");
        }
        assert!(!system.contains("BETA-STANDARD"));
        assert_eq!(system.matches("## Available Repositories").count(), 1);
    }
    // Byte-stable from call to call.
    assert_eq!(system_text(&requests[0]), system_text(&requests[1]));
    let system = system_text(&requests[0]);
    let section = &system[system.find("## Available Repositories").unwrap()..];
    let section = redact(section, &mono.canonicalize().unwrap(), "[MONO]");
    insta::assert_snapshot!(section);
}

#[tokio::test]
async fn nested_rules_are_held_back_once_for_an_edit_and_appended_for_a_read() {
    let repo = Repo::new(&[
        ("AGENTS.md", "ROOT: keep it simple.\n".into()),
        ("src/AGENTS.md", "NESTED-SRC: indent with tabs.\n".into()),
        ("src/main.rs", "fn main() {}\n".into()),
        ("docs/AGENTS.md", "NESTED-DOCS: wrap at 80.\n".into()),
        ("docs/guide.md", "# Guide\n".into()),
    ]);
    let edit = json!({"path": "src/main.rs", "old_string": "fn main() {}", "new_string": "fn main() { run() }"});
    let model = Model::new(
        vec![
            call("e1", "edit", edit.clone()),
            call("e2", "edit", edit),
            call("r1", "read", json!({"path": "docs/guide.md"})),
            call(
                "r2",
                "read",
                json!({"path": "docs/guide.md", "offset": 1, "limit": 1}),
            ),
            text("Done."),
        ],
        Some(32_000),
        true,
    );
    let mut h = open(&repo, AppMode::Coding, model.clone(), repo.coding()).await;
    h.turn(Some("Edit main."), TurnOptions::default())
        .await
        .unwrap();
    let m = h.messages();
    let held = tool_content(m, "e1");
    assert!(held.starts_with(PREFLIGHT_HEADER), "{held}");
    // The held-back result carries the file and its rules: the system
    // prompt never changes under the session.
    assert!(held.contains("src/AGENTS.md"), "{held}");
    assert!(held.contains("NESTED-SRC"), "{held}");
    // Held back once: the same edit then runs.
    assert!(!tool_content(m, "e2").contains(PREFLIGHT_HEADER));
    let source = std::fs::read_to_string(repo.repo().join("src/main.rs")).unwrap();
    assert!(source.contains("run()"), "{source}");
    // A read runs and gets the new rules appended, once.
    let read = tool_content(m, "r1");
    assert!(read.contains("# Guide"));
    assert!(read.contains(APPENDED_HEADER) && read.contains("docs/AGENTS.md"));
    assert!(read.contains("NESTED-DOCS"), "{read}");
    assert!(!tool_content(m, "r2").contains(APPENDED_HEADER));
    // The system prompt holds the root file only, and is the same on
    // every call; each nested file is in the last request once.
    let requests = model.agent_requests();
    let system = system_text(requests.last().unwrap());
    assert!(requests.iter().all(|r| system_text(r) == system));
    assert_eq!(system.matches("ROOT: keep it simple").count(), 1);
    assert!(!system.contains("NESTED"));
    let all = serde_json::to_string(&requests.last().unwrap().messages).unwrap();
    assert_eq!(all.matches("NESTED-SRC").count(), 1);
    assert_eq!(all.matches("NESTED-DOCS").count(), 1);
}

#[tokio::test]
async fn a_nested_instruction_file_appears_once_in_each_of_ten_later_requests() {
    let repo = Repo::new(&[
        ("AGENTS.md", "ROOT: keep it simple.\n".into()),
        ("docs/AGENTS.md", "NESTED-DOCS: wrap at 80.\n".into()),
        ("docs/guide.md", "# Guide\n".into()),
    ]);
    let mut replies = vec![call("r0", "read", json!({"path": "docs/guide.md"}))];
    for i in 1..=10 {
        replies.push(call(&format!("l{i}"), "ls", json!({"path": "."})));
    }
    replies.push(text("Done."));
    let model = Model::new(replies, Some(64_000), true);
    let mut h = open(&repo, AppMode::Coding, model.clone(), repo.coding()).await;
    h.turn(Some("Read the guide."), TurnOptions::default())
        .await
        .unwrap();
    let requests = model.agent_requests();
    // The first request predates the read; every later one has the file once.
    let later = &requests[1..];
    assert!(later.len() >= 10, "{} requests", later.len());
    for (i, r) in later.iter().enumerate() {
        let all = serde_json::to_string(&r.messages).unwrap();
        assert_eq!(all.matches("NESTED-DOCS").count(), 1, "request {i}");
        assert_eq!(
            all.matches("ROOT: keep it simple").count(),
            1,
            "request {i}"
        );
    }
    let system = system_text(requests.last().unwrap());
    let section = &system[system.find("## Workspace Instructions").unwrap()..];
    let section = redact(section, &repo.repo().canonicalize().unwrap(), "[REPO]");
    insta::assert_snapshot!(section);
}

#[tokio::test]
async fn oversized_instructions_are_truncated_visibly() {
    let mut body = String::from("HEAD-OF-RULES\n");
    while body.len() < INSTRUCTION_FILE_MAX_BYTES + 5_000 {
        body.push_str("- a long rule line that repeats to exceed the limit\n");
    }
    body.push_str("TAIL-OF-RULES\n");
    let repo = Repo::new(&[("AGENTS.md", body.clone())]);
    let model = Model::new(vec![text("Ok.")], None, false);
    let mut h = open(&repo, AppMode::Coding, model.clone(), repo.coding()).await;
    h.turn(Some("Hi."), TurnOptions::default()).await.unwrap();
    let system = system_text(&model.last_agent_request());
    assert!(system.contains("HEAD-OF-RULES"));
    assert!(!system.contains("TAIL-OF-RULES"));
    assert!(system.contains(TRUNCATION_NOTICE));
    assert!(system.contains(&format!("of {} bytes", body.len())));
}

#[tokio::test]
async fn work_sessions_get_no_workspace_context() {
    let repo = Repo::new(&[("AGENTS.md", "ROOT-RULE\n".into())]);
    let model = Model::new(vec![text("Ok.")], None, false);
    let mut h = open(
        &repo,
        AppMode::Work,
        model.clone(),
        SessionRequest::New {
            workspace: WorkspaceRequest::Work,
            graph_hash: None,
        },
    )
    .await;
    h.turn(Some("Hi."), TurnOptions::default()).await.unwrap();
    let system = system_text(&model.last_agent_request());
    assert!(!system.contains("Workspace Instructions"));
    assert!(!system.contains("ROOT-RULE"));
}

// ---- offload, projection, receipts ------------------------------------------

fn handlers(n: usize) -> String {
    (1..=n)
        .map(|i| format!("pub fn handler_{i}(req: Request) -> Response {{ route(req, {i}) }}\n"))
        .collect()
}

#[tokio::test]
async fn an_offload_that_cannot_write_its_file_keeps_the_result_and_warns() {
    let repo = Repo::new(&[("src/h.rs", handlers(900))]);
    let args = json!({"pattern": "handler_", "directory": "src", "max_results": 900});
    let model = Model::new(
        vec![call("g1", "grep", args), text("Found them.")],
        None,
        false,
    );
    let mut setup = repo
        .setup(
            AppMode::Coding,
            model.clone(),
            pipeline(AppMode::Coding),
            false,
        )
        .await;
    // A file where the artifacts folder must be: nothing can be written.
    let blocked = repo.tmp.path().join("blocked");
    std::fs::write(&blocked, "not a folder").unwrap();
    setup.artifacts_root = blocked;
    let events = Arc::new(evoflux_harness::CollectEvents::default());
    setup.events = events.clone();
    let mut h = Harness::open(setup, repo.coding()).await.unwrap();
    h.turn(Some("Find handlers."), TurnOptions::default())
        .await
        .unwrap();
    // The whole result stays in the conversation …
    assert!(tool_content(h.messages(), "g1").chars().count() > 40_000);
    // … and the user is told why it was not offloaded.
    let warnings: Vec<String> = events
        .take()
        .into_iter()
        .filter_map(|e| match e {
            evoflux_harness::Event::Warning { code, .. } => Some(code),
            _ => None,
        })
        .collect();
    assert_eq!(warnings, ["session/offload-failed"]);
}

#[tokio::test]
async fn offload_writes_the_artifact_once_with_exact_bytes() {
    let repo = Repo::new(&[("src/h.rs", handlers(900))]);
    let args = json!({"pattern": "handler_", "directory": "src", "max_results": 900});
    // The model reads a window of the offloaded result by its locator.
    let window = json!({"path": "artifact:g1.txt", "offset": 500, "limit": 1});
    let model = Model::new(
        vec![
            call("g1", "grep", args.clone()),
            call("r1", "read", window),
            text("Found them."),
        ],
        None,
        false,
    );
    let mut h = open(&repo, AppMode::Coding, model.clone(), repo.coding()).await;
    let session = h.session().id;
    h.turn(Some("Find handlers."), TurnOptions::default())
        .await
        .unwrap();
    // What grep printed, computed by the tool itself.
    let ws = evoflux_tools::Workspace::new([repo.repo()]).unwrap();
    let full = evoflux_tools::files::grep(&ws, &args).unwrap().text;
    assert!(full.chars().count() > 40_000);
    let artifact = repo
        .data()
        .join("artifacts")
        .join(session.to_string())
        .join("g1.txt");
    assert_eq!(std::fs::read_to_string(&artifact).unwrap(), full);
    let shown = tool_content(h.messages(), "g1");
    assert!(shown.contains("File: artifact:g1.txt"), "{shown}");
    assert!(
        !shown.contains(&repo.data().display().to_string()),
        "{shown}"
    );
    let line = full.lines().nth(499).unwrap();
    let read = tool_content(h.messages(), "r1");
    assert!(read.contains(line), "{read}");
    assert!(shown.len() < 3_000, "{}", shown.len());
    // The metadata is stored beside the message, in the shell's shape.
    let store = Store::open(repo.data()).await.unwrap();
    let entry = store
        .transcript(session)
        .await
        .unwrap()
        .into_iter()
        .find(|e| matches!(&e.message, Message::Tool { tool_call_id, .. } if tool_call_id == "g1"))
        .unwrap();
    let meta = entry.artifact.unwrap();
    assert_eq!(meta["artifact"], json!(artifact));
    assert_eq!(meta["output_bytes"], json!(full.len()));
    assert_eq!(
        meta["shown_bytes"].as_u64().unwrap() + meta["omitted_bytes"].as_u64().unwrap(),
        full.len() as u64
    );
    // Written once: nothing else was journalled.
    let files = std::fs::read_dir(artifact.parent().unwrap())
        .unwrap()
        .count();
    assert_eq!(files, 1);
}

/// A turn of `greps` grep calls against a model with `window` tokens;
/// returns the harness, the session's last request and the session id.
async fn grep_turn(
    greps: usize,
    window: u64,
) -> (
    Repo,
    Harness,
    evoflux_model::Request,
    evoflux_core::ids::SessionId,
) {
    let repo = Repo::new(&[("src/h.rs", handlers(60))]);
    let mut replies = Vec::new();
    for i in 0..greps {
        replies.push(call(
            &format!("g{i}"),
            "grep",
            json!({"pattern": "handler_", "directory": "src", "max_results": 30 + i}),
        ));
    }
    replies.push(text("Done."));
    let model = Model::new(replies, Some(window), true);
    let mut h = open(&repo, AppMode::Coding, model.clone(), repo.coding()).await;
    let session = h.session().id;
    h.turn(Some("Grep."), TurnOptions::default()).await.unwrap();
    let last = model.last_agent_request();
    (repo, h, last, session)
}

#[tokio::test]
async fn projection_changes_only_the_provider_request() {
    // Coding keeps the 3 most recent batches exact; older big ones become
    // receipts in the request only, in epochs the cost model chooses: a
    // prefix of the batches, never the recent ones.
    let greps = 24;
    let (repo, h, last, session) = grep_turn(greps, 256_000).await;
    let projected: Vec<bool> = (0..greps)
        .map(|i| {
            let id = format!("g{i}");
            let sent = tool_content(&last.messages, &id);
            let kept = tool_content(h.messages(), &id);
            assert!(kept.len() > 1_200, "{id}: {}", kept.len());
            if sent == kept {
                return false;
            }
            assert!(
                sent.starts_with("[Earlier grep result compacted]"),
                "{sent}"
            );
            assert!(sent.contains("Re-run the tool"));
            assert!(sent.len() < kept.len());
            true
        })
        .collect();
    let boundary = projected.iter().take_while(|p| **p).count();
    assert!(boundary > 0, "an epoch happened by batch {greps}");
    assert!(
        projected[boundary..].iter().all(|p| !p),
        "receipts are a prefix: {projected:?}"
    );
    assert!(boundary <= greps - 3, "the recent batches stay exact");
    // The request names where its stable part ends, for breakpoint wires.
    let anchor = last.cache.anchor.expect("an anchor after an epoch");
    assert!(matches!(
        &last.messages[anchor],
        Message::Tool { content, .. } if content.starts_with("[Earlier grep result compacted]")
    ));
    // The stored transcript is untouched.
    let store = Store::open(repo.data()).await.unwrap();
    let stored: Vec<Message> = store
        .transcript(session)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(stored, h.messages());
    for m in &stored {
        if let Message::Tool { content, .. } = m {
            assert!(!content.contains("[Earlier grep result compacted]"));
        }
    }
    let usage = store.usage(session).await.unwrap();
    assert!(usage.projected_results >= boundary as u64, "{usage:?}");
    assert!(usage.projection_saved_chars > 0);
}

#[tokio::test]
async fn a_request_that_fills_half_the_window_projects_all_but_the_recent_batches() {
    // Six batches against a roomy window stay exact: far from a step.
    let (_repo, h, roomy, _) = grep_turn(6, 1_000_000).await;
    for i in 0..6 {
        let id = format!("g{i}");
        assert_eq!(
            tool_content(&roomy.messages, &id),
            tool_content(h.messages(), &id)
        );
    }
    // Against a window that request fills to about 60% (under the
    // compaction threshold), the room matters more than the cache.
    let tokens = request_bytes(&roomy) as u64 / 4;
    let (_repo, h, last, _) = grep_turn(6, tokens * 10 / 6).await;
    for i in 0..3 {
        let sent = tool_content(&last.messages, &format!("g{i}"));
        assert!(
            sent.starts_with("[Earlier grep result compacted]"),
            "{sent}"
        );
    }
    for i in 3..6 {
        let id = format!("g{i}");
        assert_eq!(
            tool_content(&last.messages, &id),
            tool_content(h.messages(), &id)
        );
    }
}

#[tokio::test]
async fn repeated_reads_get_receipts_and_a_change_invalidates_them() {
    let body: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    let repo = Repo::new(&[("notes.txt", body)]);
    let model = Model::new(
        vec![
            call(
                "r1",
                "read",
                json!({"path": "notes.txt", "offset": 1, "limit": 30}),
            ),
            call(
                "r2",
                "read",
                json!({"path": "notes.txt", "offset": 1, "limit": 30}),
            ),
            call(
                "r3",
                "read",
                json!({"path": "./notes.txt", "offset": 5, "limit": 10}),
            ),
            call(
                "r4",
                "read",
                json!({"path": "notes.txt", "offset": 20, "limit": 20}),
            ),
            call(
                "w1",
                "edit",
                json!({"path": "notes.txt", "old_string": "line 7\n", "new_string": "line seven\n"}),
            ),
            call(
                "r5",
                "read",
                json!({"path": "notes.txt", "offset": 1, "limit": 30}),
            ),
            text("Done."),
        ],
        None,
        false,
    );
    let mut h = open(&repo, AppMode::Coding, model.clone(), repo.coding()).await;
    h.turn(Some("Read notes."), TurnOptions::default())
        .await
        .unwrap();
    let m = h.messages();
    let first = tool_content(m, "r1").to_owned();
    let sha = evoflux_core::hash::sha256_hex(first.as_bytes());
    let reused = tool_content(m, "r2");
    assert!(reused.starts_with(REUSED_HEADER), "{reused}");
    assert!(reused.contains("original_call_id: r1"));
    assert!(reused.contains(&format!("result_sha256: {sha}")));
    let covered = tool_content(m, "r3");
    assert!(covered.starts_with(COVERED_HEADER), "{covered}");
    assert!(covered.contains("covered_range: 1-30") && covered.contains("requested_range: 5-14"));
    // Outside the covered lines: it runs.
    assert!(tool_content(m, "r4").contains("   39| line 39"));
    // After the edit the file changed: the same read runs again.
    let again = tool_content(m, "r5");
    assert!(again.contains("line seven"), "{again}");
    assert!(!again.starts_with(REUSED_HEADER));
}

// ---- compaction ----------------------------------------------------------------

#[tokio::test]
async fn a_compaction_the_user_asks_for_runs_at_the_next_model_call_only() {
    let repo = Repo::new(&[("src/h.rs", handlers(40))]);
    let mut replies = Vec::new();
    for i in 0..5 {
        replies.push(call(
            &format!("g{i}"),
            "grep",
            json!({"pattern": format!("handler_{i}"), "directory": "src"}),
        ));
    }
    replies.push(text("Grepped."));
    replies.push(text("Compacted and answered."));
    replies.push(text("Still compact."));
    let model = Model::new(replies, Some(64_000), true);
    let events = Arc::new(evoflux_harness::CollectEvents::default());
    let mut setup = repo
        .setup(
            AppMode::Coding,
            model.clone(),
            pipeline(AppMode::Coding),
            false,
        )
        .await;
    setup.events = events.clone();
    let mut h = Harness::open(setup, repo.coding()).await.unwrap();
    h.turn(Some("Grep the handlers."), TurnOptions::default())
        .await
        .unwrap();
    // Far below the threshold: nothing was compacted on its own.
    assert_eq!(model.summaries.load(std::sync::atomic::Ordering::SeqCst), 0);
    h.request_compaction();
    let out = h
        .turn(Some("And now?"), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.text, "Compacted and answered.");
    assert_eq!(model.summaries.load(std::sync::atomic::Ordering::SeqCst), 1);
    let sent = model.last_agent_request();
    let Message::User { content, .. } = &sent.messages[1] else {
        panic!("{:?}", sent.messages[1]);
    };
    assert!(content.starts_with(COMPACTED_HEADER), "{content}");
    assert_pairs_intact(&sent.messages);
    // The request is used up: the next turn does not summarize again.
    h.turn(Some("Once more."), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(model.summaries.load(std::sync::atomic::Ordering::SeqCst), 1);
    let compacted = events
        .take()
        .into_iter()
        .filter(|e| matches!(e, evoflux_harness::Event::ContextCompacted { .. }))
        .count();
    assert_eq!(compacted, 1);
}

#[tokio::test]
async fn context_exceeded_triggers_compaction_and_one_retry() {
    let repo = Repo::new(&[("src/h.rs", handlers(40))]);
    let mut replies = Vec::new();
    for i in 0..5 {
        replies.push(call(
            &format!("g{i}"),
            "grep",
            json!({"pattern": format!("handler_{i}"), "directory": "src"}),
        ));
    }
    replies.push(Reply::RefuseOnce);
    replies.push(text("Done after compaction."));
    let model = Model::new(replies, Some(64_000), true);
    let events = Arc::new(evoflux_harness::CollectEvents::default());
    let mut setup = repo
        .setup(
            AppMode::Coding,
            model.clone(),
            pipeline(AppMode::Coding),
            false,
        )
        .await;
    setup.events = events.clone();
    let mut h = Harness::open(setup, repo.coding()).await.unwrap();
    let out = h
        .turn(Some("Grep the handlers."), TurnOptions::default())
        .await
        .unwrap();
    assert_eq!(out.text, "Done after compaction.");
    // The user sees it too: one context_compacted event.
    let compacted: Vec<_> = events
        .take()
        .into_iter()
        .filter(|e| matches!(e, evoflux_harness::Event::ContextCompacted { .. }))
        .collect();
    assert_eq!(compacted.len(), 1, "{compacted:?}");
    assert_eq!(model.refusals.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(model.summaries.load(std::sync::atomic::Ordering::SeqCst), 1);
    let retry = model.last_agent_request();
    let Message::User { content, .. } = &retry.messages[1] else {
        panic!("{:?}", retry.messages[1]);
    };
    assert!(content.starts_with(COMPACTED_HEADER), "{content}");
    assert!(content.contains(SUMMARY));
    assert!(content.contains("Grep the handlers."));
    // No orphan results: every result follows its call.
    assert_pairs_intact(&retry.messages);
    // The durable transcript still has everything.
    assert!(h.messages().len() > retry.messages.len());
    let record = CompactionRecord::load(
        &repo
            .data()
            .join("artifacts")
            .join(h.session().id.to_string()),
    )
    .unwrap();
    assert_eq!(
        record.last.reason,
        evoflux_harness::compaction::CompactionReason::ContextExceeded
    );
}

fn assert_pairs_intact(messages: &[Message]) {
    let mut open: Vec<String> = Vec::new();
    for m in messages {
        match m {
            Message::Assistant { tool_calls, .. } => {
                assert!(open.is_empty(), "calls without results: {open:?}");
                open = tool_calls.iter().map(|c| c.id.clone()).collect();
            }
            Message::Tool { tool_call_id, .. } => {
                assert!(open.contains(tool_call_id), "orphan result {tool_call_id}");
                open.retain(|c| c != tool_call_id);
            }
            Message::User { .. } | Message::System { .. } => {}
        }
    }
}

/// The hook pipeline run directly on a hand-built transcript whose
/// session has a skill-presentation tool.
struct Direct {
    repo: Repo,
    store: Store,
    session: evoflux_store::Session,
    agent: evoflux_agents::team::EffectiveAgentConfig,
    tools: PreparedTools,
    workspace: evoflux_tools::Workspace,
}

impl Direct {
    async fn new() -> Direct {
        let repo = Repo::new(&[]);
        let store = Store::open(repo.data()).await.unwrap();
        let session = store
            .create_session(NewSession {
                workspace: WorkspaceRequest::Coding(vec![repo.repo()]),
                lead: None,
                model: None,
                graph_hash: None,
                parent: None,
            })
            .await
            .unwrap();
        let agent = repo.lead(AppMode::Coding);
        let catalog = ToolCatalog::from_graph(&repo.graph);
        let caps = SessionCapabilities {
            root_session: true,
            delegated_task_child: false,
            can_request_input: false,
            processes: false,
            skills: true,
            network: false,
            host_network: false,
            checks: false,
            schedules: false,
            browser: Some("not needed here"),
            provider: evoflux_core::config::ProviderKind::Scripted,
            provider_tools: Vec::new(),
        };
        let names: Vec<String> = ["read", "grep", "skill"].map(String::from).to_vec();
        let tools = PreparedTools::prepare(&catalog, &names, AppMode::Coding, &caps);
        assert_eq!(
            tools.get("skill").unwrap().definition.behavior.presentation,
            Presentation::Skill
        );
        let workspace = evoflux_tools::Workspace::new([repo.repo()]).unwrap();
        Direct {
            repo,
            store,
            session,
            agent,
            tools,
            workspace,
        }
    }

    fn artifacts(&self) -> std::path::PathBuf {
        self.repo
            .data()
            .join("artifacts")
            .join(self.session.id.to_string())
    }

    async fn before_model(
        &self,
        pipeline: &evoflux_harness::HookPipeline,
        model: Arc<Model>,
        messages: Vec<Message>,
        window: Option<u64>,
    ) -> ModelCall {
        let clock = FixedClock("2026-11-30".into());
        let artifacts = self.artifacts();
        let ctx = HookContext {
            session: &self.session,
            agent: &self.agent,
            clock: &clock,
            model: "test-model",
            context_window: window,
            price: None,
            artifacts_dir: &artifacts,
            workspace: &self.workspace,
            tools: &self.tools,
            events: &evoflux_harness::NoEvents,
        };
        let mut call = ModelCall::new(Request::new("test-model", messages), model);
        pipeline.before_model(&ctx, &mut call).await.unwrap();
        let _ = &self.store;
        call
    }
}

fn pair(id: &str, tool: &str, args: serde_json::Value, result: &str) -> Vec<Message> {
    vec![
        Message::Assistant {
            provider_items: Vec::new(),
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: id.into(),
                name: tool.into(),
                arguments: args,
            }],
        },
        Message::tool_result(id, result),
    ]
}

#[tokio::test]
async fn projection_never_touches_skill_results() {
    let d = Direct::new().await;
    let skill_body = format!(
        "<skill_content name=\"review\">{}</skill_content>",
        "S".repeat(5_000)
    );
    let mut messages = vec![Message::user("go")];
    messages.extend(pair(
        "s1",
        "skill",
        json!({"skill_name": "review"}),
        &skill_body,
    ));
    // Enough large results before the three recent ones that the cost
    // model has rewritten the history: the skill's is old enough too.
    for i in 0..19 {
        messages.extend(pair(
            &format!("g{i}"),
            "grep",
            json!({"pattern": "x"}),
            &"g".repeat(14_000),
        ));
    }
    let p = base_pipeline().unwrap();
    let mut p = p;
    p.add(
        evoflux_harness::HookStage::ContextControl,
        evoflux_harness::projection::OWNER,
        evoflux_harness::projection::ToolContextProjectionHook::default(),
    )
    .unwrap();
    let call = d
        .before_model(&p, Model::new(vec![], None, false), messages.clone(), None)
        .await;
    assert_eq!(tool_content(&call.request.messages, "s1"), skill_body);
    assert!(tool_content(&call.request.messages, "g0").starts_with("[Earlier grep result"));
    let receipts = (0..19)
        .filter(|i| {
            tool_content(&call.request.messages, &format!("g{i}"))
                .starts_with("[Earlier grep result")
        })
        .count();
    assert!(receipts > 0 && receipts <= 16, "{receipts}");
    assert_eq!(call.stats.projected_results, receipts as u64);
    // The caller's messages are untouched (the request holds a copy).
    assert_eq!(tool_content(&messages, "g0"), "g".repeat(14_000));
}

#[tokio::test]
async fn compaction_keeps_skill_pairs_exact_and_tells_the_model() {
    let d = Direct::new().await;
    // An old activation that no longer fits the budget, and a newer one
    // that does; then enough tool output to pass the threshold.
    let old_skill = format!(
        "<skill_content name=\"old\">{}</skill_content>",
        "o".repeat(MAX_DURABLE_SKILL_BYTES - 30_000)
    );
    let new_skill = format!(
        "<skill_content name=\"new\">{}</skill_content>",
        "n".repeat(50_000)
    );
    let mut messages = vec![Message::user("Refactor the parser.")];
    messages.extend(pair(
        "s_old",
        "skill",
        json!({"skill_name": "old"}),
        &old_skill,
    ));
    for i in 0..4 {
        messages.extend(pair(
            &format!("a{i}"),
            "grep",
            json!({"pattern": "x"}),
            &"a".repeat(1_000),
        ));
    }
    messages.extend(pair(
        "s_new",
        "skill",
        json!({"skill_name": "new"}),
        &new_skill,
    ));
    for i in 0..10 {
        messages.extend(pair(
            &format!("g{i}"),
            "grep",
            json!({"pattern": "y"}),
            &"b".repeat(1_000),
        ));
    }
    let seen: Arc<std::sync::Mutex<Vec<Compacted>>> = Arc::default();
    let listener = {
        let seen = seen.clone();
        CompactionListener(Arc::new(move |c: &Compacted| {
            seen.lock().unwrap().push(c.clone())
        }))
    };
    let p = standard_pipeline(PipelineOptions {
        on_compacted: Some(listener),
        ..PipelineOptions::new(AppMode::Coding)
    })
    .unwrap();
    // A window small enough that the transcript passes 75% of it.
    let window = Some(40_000);
    let model = Model::new(vec![], window, false);
    let call = d
        .before_model(&p, model.clone(), messages.clone(), window)
        .await;
    let sent = &call.request.messages;
    // The model is told, and the summary came from the same provider.
    let Message::User { content, .. } = &sent[0] else {
        panic!("{:?}", sent[0]);
    };
    assert!(content.starts_with(COMPACTED_HEADER));
    assert!(content.contains(SUMMARY));
    assert!(content.contains("Refactor the parser."));
    assert_eq!(model.summaries.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The summarizer never saw a protected skill body.
    let summarizer = model
        .requests()
        .into_iter()
        .find(|r| r.tools.is_empty())
        .unwrap();
    assert!(
        !serde_json::to_string(&summarizer)
            .unwrap()
            .contains("nnnnnnnnnn")
    );
    // The newer activation pair survives byte-exact, whole.
    assert_eq!(tool_content(sent, "s_new"), new_skill);
    let at = sent
        .iter()
        .position(
            |m| matches!(m, Message::Assistant { tool_calls, .. } if tool_calls[0].id == "s_new"),
        )
        .unwrap();
    assert_eq!(
        sent[at],
        messages[messages.iter().position(|m| *m == sent[at]).unwrap()]
    );
    // The older one fell outside the budget: dropped and reported.
    assert!(
        !sent
            .iter()
            .any(|m| matches!(m, Message::Tool { tool_call_id, .. } if tool_call_id == "s_old"))
    );
    let compacted = call.compacted.clone().unwrap();
    assert_eq!(compacted.dropped_skill_calls, ["s_old"]);
    assert_eq!(compacted.kept_skill_calls, ["s_new"]);
    assert_eq!(seen.lock().unwrap().as_slice(), [compacted]);
    assert_pairs_intact(sent);
    // Persisted: a second call applies it without summarizing again.
    let p2 = standard_pipeline(PipelineOptions::new(AppMode::Coding)).unwrap();
    let again = d
        .before_model(&p2, model.clone(), messages.clone(), window)
        .await;
    assert_eq!(model.summaries.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert!(again.compacted.is_none());
    assert_eq!(again.request.messages, call.request.messages);
    assert_eq!(
        evoflux_harness::compaction::dropped_skill_calls(&d.artifacts()),
        ["s_old"]
    );
}

// ---- the long session ------------------------------------------------------------

#[tokio::test]
async fn long_coding_session_stays_within_budget() {
    let repo = Repo::new(&context_support::long_session_files());
    // Small enough that projection alone cannot hold the whole session.
    let window = 20_000u64;
    let (h, model) =
        context_support::run_long_session(&repo, pipeline(AppMode::Coding), Some(window), true)
            .await;
    let requests = model.agent_requests();
    assert_eq!(requests.len(), 2 * context_support::LONG_SESSION_TURNS);
    assert_eq!(model.refusals.load(std::sync::atomic::Ordering::SeqCst), 0);
    let max = requests.iter().map(request_bytes).max().unwrap();
    eprintln!(
        "largest request {max} bytes, {} summaries",
        model.summaries.load(std::sync::atomic::Ordering::SeqCst)
    );
    assert!((max as u64) / 4 <= window, "largest request {max} bytes");
    // Compaction ran, and not on every call.
    let summaries = model.summaries.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..20).contains(&summaries), "{summaries} summaries");
    assert_pairs_intact(&requests.last().unwrap().messages[1..]);
    // Repeated reads of an unchanged range were answered by receipts.
    let receipts = h
        .messages()
        .iter()
        .filter(
            |m| matches!(m, Message::Tool { content, .. } if content.starts_with(REUSED_HEADER)),
        )
        .count();
    assert!(receipts >= 1, "no receipts");
    let last = requests.last().unwrap();
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for m in &last.messages {
        if let Message::Tool { tool_call_id, .. } = m {
            *by_id.entry(tool_call_id.as_str()).or_default() += 1;
        }
    }
    assert!(by_id.values().all(|n| *n == 1));
}

#[test]
fn standard_pipeline_registers_the_context_owners_in_order() {
    use evoflux_harness::HookStage::{ContextControl, Workspace};
    let owners = |mode| pipeline(mode).owners();
    let coding = owners(AppMode::Coding);
    assert!(coding.contains(&(Workspace, "workspace-context")));
    let control: Vec<&str> = coding
        .iter()
        .filter(|(s, _)| *s == ContextControl)
        .map(|(_, o)| *o)
        .collect();
    assert_eq!(
        control,
        [
            "tool-result-offload",
            "summarization",
            "tool-context-projection",
            "observation-receipts"
        ]
    );
    let work = owners(AppMode::Work);
    assert!(!work.iter().any(|(_, o)| *o == "workspace-context"));
    assert!(work.iter().any(|(_, o)| *o == "tool-context-projection"));
}
