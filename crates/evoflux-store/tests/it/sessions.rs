#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

use evoflux_core::AppMode;
use evoflux_core::ids::{Ids, SessionId};
use evoflux_core::price::Usd;
use evoflux_store::{
    DB_FILE, Database, Message, NewSession, PendingRequest, SessionSurface, Store, StoreError,
    ToolCall, Usage, Workspace, WorkspaceRequest,
};
use serde_json::json;

fn work() -> NewSession {
    NewSession {
        workspace: WorkspaceRequest::Work,
        lead: Some("lead".into()),
        model: None,
        graph_hash: Some("sha256:abc".into()),
        parent: None,
    }
}

fn coding(repos: &[&str]) -> NewSession {
    NewSession {
        workspace: WorkspaceRequest::Coding(repos.iter().map(PathBuf::from).collect()),
        lead: None,
        model: None,
        graph_hash: None,
        parent: None,
    }
}

fn sample_messages() -> Vec<Message> {
    vec![
        Message::User {
            content: "grep for TODO".into(),
            media: Vec::new(),
        },
        Message::Assistant {
            provider_items: Vec::new(),
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: "call_1".into(),
                name: "grep".into(),
                arguments: json!({"pattern": "TODO", "path": "."}),
            }],
        },
        Message::Tool {
            tool_call_id: "call_1".into(),
            content: "src/a.rs:3: TODO".into(),
            is_error: false,
            media: Vec::new(),
        },
        Message::Assistant {
            provider_items: Vec::new(),
            content: "One TODO in src/a.rs.".into(),
            tool_calls: vec![],
        },
    ]
}

async fn create_load_and_list_newest_first(t: Target) {
    let store = t.open_with_ids(Ids::sequential()).await.unwrap();
    // The SQLite file is in the data directory; PostgreSQL keeps none there.
    assert_eq!(
        t.data().join(DB_FILE).is_file(),
        t.database == Database::Sqlite
    );

    let w = store.create_session(work()).await.unwrap();
    let c = store
        .create_session(coding(&["/repo/a", "/repo/b"]))
        .await
        .unwrap();
    assert_eq!(w.id.as_uuid().get_version_num(), 7);
    assert_eq!(w.mode(), AppMode::Work);
    assert_eq!(c.mode(), AppMode::Coding);

    let folder = store.work_folder(w.id);
    assert!(folder.starts_with(t.data()));
    assert!(folder.is_dir(), "the store creates the work folder");
    assert_eq!(w.workspace, Workspace::Work { folder });

    let loaded = store.load(w.id).await.unwrap();
    assert_eq!(loaded, w);
    assert_eq!(loaded.lead.as_deref(), Some("lead"));
    assert_eq!(loaded.graph_hash.as_deref(), Some("sha256:abc"));
    assert_eq!(store.load(c.id).await.unwrap().workspace.roots().len(), 2);

    let ids: Vec<SessionId> = store
        .list_sessions()
        .await
        .unwrap()
        .iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(ids, [c.id, w.id]);

    let missing: SessionId = "019b76da-a800-7000-8000-0000000000ff".parse().unwrap();
    assert!(store.session(missing).await.unwrap().is_none());
    assert_eq!(
        store.load(missing).await.unwrap_err().code(),
        "store/session-not-found"
    );
}

async fn invalid_coding_workspace_is_refused_before_writing(t: Target) {
    let store = t.open().await.unwrap();
    let e = store.create_session(coding(&[])).await.unwrap_err();
    assert_eq!(e.code(), "store/coding-workspace-empty");
    let e = store
        .create_session(coding(&["relative"]))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/workspace-not-absolute");
    assert!(store.list_sessions().await.unwrap().is_empty());
}

async fn resume_with_another_mode_or_workspace_is_refused(t: Target) {
    let store = t.open().await.unwrap();
    let w = store.create_session(work()).await.unwrap();
    let c = store.create_session(coding(&["/repo/a"])).await.unwrap();

    let e = store
        .resume(w.id, Some(AppMode::Coding), None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/mode-mismatch");
    match &e {
        StoreError::ModeMismatch {
            id,
            persisted,
            requested,
        } => {
            assert_eq!(
                (*id, *persisted, *requested),
                (w.id, AppMode::Work, AppMode::Coding)
            );
        }
        other => panic!("expected a mode mismatch, got {other:?}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("work") && msg.contains("coding"), "{msg}");

    let other = [PathBuf::from("/repo/other")];
    let e = store
        .resume(c.id, Some(AppMode::Coding), Some(&other))
        .await
        .unwrap_err();
    match &e {
        StoreError::WorkspaceMismatch {
            persisted,
            requested,
            ..
        } => {
            assert_eq!(persisted, &[PathBuf::from("/repo/a")]);
            assert_eq!(requested, &other);
        }
        other => panic!("expected a workspace mismatch, got {other:?}"),
    }
    assert_eq!(e.to_diagnostic().code, "store/workspace-mismatch");
    let msg = e.to_string();
    assert!(
        msg.contains("/repo/a") && msg.contains("/repo/other"),
        "{msg}"
    );

    // Nothing migrated: the sessions are unchanged and resume as persisted.
    assert_eq!(store.load(w.id).await.unwrap().mode(), AppMode::Work);
    let same = [PathBuf::from("/repo/a")];
    let resumed = store
        .resume(c.id, Some(AppMode::Coding), Some(&same))
        .await
        .unwrap();
    assert_eq!(resumed, c);
    assert_eq!(store.resume(w.id, None, None).await.unwrap(), w);
}

async fn transcript_keeps_order_and_round_trips(t: Target) {
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let b = store.create_session(work()).await.unwrap();

    let messages = sample_messages();
    let artifact = json!({"locator": "artifacts/s/1.log", "bytes": 18, "truncated": false});
    for (i, m) in messages.iter().enumerate() {
        let entry = match m {
            Message::Tool { .. } => store.append_with_artifact(a.id, m, &artifact).await,
            _ => store.append_message(a.id, m).await,
        }
        .unwrap();
        assert_eq!(entry.seq, i as u64 + 1);
    }
    // Another session numbers its own entries from 1.
    let other = store.append_message(b.id, &messages[0]).await.unwrap();
    assert_eq!(other.seq, 1);

    let entries = store.transcript(a.id).await.unwrap();
    assert_eq!(
        entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        [1, 2, 3, 4]
    );
    // The tool result's artifact metadata survives the reload beside it.
    assert_eq!(
        entries[2].artifact.as_ref().unwrap()["locator"],
        "artifacts/s/1.log"
    );
    assert!(
        entries
            .iter()
            .enumerate()
            .all(|(i, e)| (i == 2) == e.artifact.is_some())
    );
    let got: Vec<Message> = entries.into_iter().map(|e| e.message).collect();
    assert_eq!(got, messages);
    assert_eq!(store.transcript(b.id).await.unwrap().len(), 1);

    let missing: SessionId = "019b76da-a800-7000-8000-0000000000ff".parse().unwrap();
    let e = store
        .append_message(missing, &messages[0])
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/session-not-found");
    assert!(store.load(a.id).await.unwrap().updated_at_ms >= a.updated_at_ms);
}

async fn pending_input_lifecycle(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    assert!(store.open_pending_inputs(s.id).await.unwrap().is_empty());

    let q1 = store
        .create_pending_input(
            s.id,
            "call_1",
            &PendingRequest::question("ask_user", "Which branch?"),
        )
        .await
        .unwrap();
    let q2 = store
        .create_pending_input(
            s.id,
            "call_2",
            &PendingRequest {
                options: vec!["yes".into(), "no".into()],
                ..PendingRequest::question("ask_user", "Proceed?")
            },
        )
        .await
        .unwrap();
    assert!(q1.is_open());
    let open = store.open_pending_inputs(s.id).await.unwrap();
    assert_eq!(open, [q1.clone(), q2.clone()]);

    let answered = store
        .answer_pending_input(s.id, q1.id, &json!("main"))
        .await
        .unwrap();
    assert_eq!(answered.answer, Some(json!("main")));
    assert_eq!(answered.tool_call_id, "call_1");
    assert!(answered.answered_at_ms.is_some());
    assert_eq!(
        store.open_pending_inputs(s.id).await.unwrap(),
        std::slice::from_ref(&q2)
    );

    let e = store
        .answer_pending_input(s.id, q1.id, &json!("dev"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/pending-input-answered");

    // An id from another session is not found in this one.
    let other = store.create_session(work()).await.unwrap();
    let e = store
        .answer_pending_input(other.id, q2.id, &json!("yes"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/pending-input-not-found");
    assert_eq!(store.open_pending_inputs(s.id).await.unwrap(), [q2]);
}

async fn usage_accumulates(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    assert_eq!(store.usage(s.id).await.unwrap(), Usage::default());

    let one = Usage {
        requests: 1,
        input_tokens: 100,
        output_tokens: 20,
        cache_read_tokens: 50,
        cache_write_tokens: 0,
        ..Usage::default()
    };
    let two = Usage {
        requests: 1,
        input_tokens: 30,
        output_tokens: 5,
        cache_read_tokens: 0,
        cache_write_tokens: 7,
        projected_results: 2,
        projection_saved_chars: 900,
        cost_usd: Usd::from_picos(3),
        unpriced_requests: 0,
    };
    let one = Usage {
        cost_usd: Usd::from_picos(1_000_000_000_007),
        ..one
    };
    store.add_usage(s.id, one).await.unwrap();
    let total = store.add_usage(s.id, two).await.unwrap();
    let want = Usage {
        requests: 2,
        input_tokens: 130,
        output_tokens: 25,
        cache_read_tokens: 50,
        cache_write_tokens: 7,
        projected_results: 2,
        projection_saved_chars: 900,
        cost_usd: Usd::from_picos(1_000_000_000_010),
        unpriced_requests: 0,
    };
    assert_eq!(total, want);
    assert_eq!(store.usage(s.id).await.unwrap(), want);
    assert_eq!(want.cost_label(), "$1.0000");
}

async fn a_tree_s_usage_adds_up_every_child_exactly(t: Target) {
    let store = t.open().await.unwrap();
    let lead = store.create_session(work()).await.unwrap();
    let child = |call: &str| NewSession {
        parent: Some(evoflux_store::SessionParent {
            session_id: lead.id,
            call_id: call.into(),
        }),
        ..work()
    };
    let a = store.create_session(child("c1")).await.unwrap();
    let b = store.create_session(child("c2")).await.unwrap();
    let other = store.create_session(work()).await.unwrap();
    let call = |picos: u64, unpriced: u64| Usage {
        requests: 1,
        input_tokens: 10,
        output_tokens: 1,
        cost_usd: Usd::from_picos(picos),
        unpriced_requests: unpriced,
        ..Usage::default()
    };
    store.add_usage(lead.id, call(5, 0)).await.unwrap();
    store.add_usage(a.id, call(7, 0)).await.unwrap();
    store.add_usage(b.id, call(0, 1)).await.unwrap();
    store.add_usage(other.id, call(1_000, 0)).await.unwrap();
    let tree = store.tree_usage(lead.id).await.unwrap();
    assert_eq!(
        (
            tree.requests,
            tree.input_tokens,
            tree.cost_usd.picos(),
            tree.unpriced_requests
        ),
        (3, 30, 12, 1)
    );
    assert!(tree.cost_label().starts_with("≥ "));
    assert_eq!(store.tree_usage(a.id).await.unwrap().cost_usd.picos(), 7);
    assert_eq!(
        store.tree_usage(b.id).await.unwrap().cost_label(),
        "unpriced"
    );
}

async fn reopen_after_drop_keeps_everything(t: Target) {
    let (id, q) = {
        let store = t.open().await.unwrap();
        let s = store.create_session(coding(&["/repo/a"])).await.unwrap();
        for m in sample_messages() {
            store.append_message(s.id, &m).await.unwrap();
        }
        let q = store
            .create_pending_input(s.id, "call_9", &PendingRequest::question("ask_user", "ok?"))
            .await
            .unwrap();
        let usage = Usage {
            requests: 1,
            input_tokens: 9,
            ..Usage::default()
        };
        store.add_usage(s.id, usage).await.unwrap();
        (s.id, q)
        // The store is dropped here without `close`.
    };
    let store = t.open().await.unwrap();
    let all = store.list_sessions().await.unwrap();
    assert_eq!(all.iter().map(|s| s.id).collect::<Vec<_>>(), [id]);
    assert_eq!(all[0].workspace.roots(), [PathBuf::from("/repo/a")]);
    let msgs: Vec<Message> = store
        .transcript(id)
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.message)
        .collect();
    assert_eq!(msgs, sample_messages());
    assert_eq!(store.open_pending_inputs(id).await.unwrap(), [q]);
    assert_eq!(store.usage(id).await.unwrap().input_tokens, 9);
    // Appends continue the numbering.
    let next = store
        .append_message(id, &sample_messages()[0])
        .await
        .unwrap();
    assert_eq!(next.seq, 5);
}

async fn concurrent_appends_from_two_handles_stay_gapless(t: Target) {
    let one = t.open().await.unwrap();
    let two = t.open().await.unwrap();
    let s = one.create_session(work()).await.unwrap();
    let writer = |store: Store, who: &'static str| {
        tokio::spawn(async move {
            for i in 0..25 {
                let m = Message::User {
                    content: format!("{who} {i}"),
                    media: Vec::new(),
                };
                store.append_message(s.id, &m).await.unwrap();
            }
        })
    };
    let (a, b) = tokio::join!(writer(one.clone(), "one"), writer(two, "two"));
    a.unwrap();
    b.unwrap();
    let entries = one.transcript(s.id).await.unwrap();
    let seqs: Vec<u64> = entries.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=50).collect::<Vec<u64>>());
    // Each writer's own messages keep their order.
    for who in ["one", "two"] {
        let mine: Vec<String> = entries
            .iter()
            .filter_map(|e| match &e.message {
                Message::User { content, .. } if content.starts_with(who) => Some(content.clone()),
                _ => None,
            })
            .collect();
        let want: Vec<String> = (0..25).map(|i| format!("{who} {i}")).collect();
        assert_eq!(mine, want);
    }
}

async fn work_session_resumes_with_its_own_folder_only(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    let folder = [store.work_folder(s.id)];
    let resumed = store
        .resume(s.id, Some(AppMode::Work), Some(&folder))
        .await
        .unwrap();
    assert_eq!(resumed.id, s.id);
    let elsewhere = [t.data().join("elsewhere")];
    let e = store
        .resume(s.id, Some(AppMode::Work), Some(&elsewhere))
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/workspace-mismatch");
}

async fn a_session_keeps_its_model_and_a_switch_is_persisted(t: Target) {
    let store = t.open().await.unwrap();
    let s = store
        .create_session(NewSession {
            model: Some("scripted:demo.yaml".into()),
            ..work()
        })
        .await
        .unwrap();
    assert_eq!(s.model.as_deref(), Some("scripted:demo.yaml"));
    let reopened = t.open().await.unwrap();
    assert_eq!(
        reopened.load(s.id).await.unwrap().model.as_deref(),
        Some("scripted:demo.yaml")
    );
    let switched = reopened.set_model(s.id, "openai:gpt-4.1").await.unwrap();
    assert_eq!(switched.model.as_deref(), Some("openai:gpt-4.1"));
    assert_eq!(
        reopened.load(s.id).await.unwrap().model.as_deref(),
        Some("openai:gpt-4.1")
    );
    let missing = Ids::sequential().session_id();
    let err = reopened.set_model(missing, "x:y").await.unwrap_err();
    assert_eq!(err.code(), "store/session-not-found");
}

async fn a_sessions_surface_is_kept_and_survives_a_resume(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    assert_eq!(s.surface, SessionSurface::Standard);
    let tagged = store
        .set_surface(s.id, SessionSurface::WebBridge)
        .await
        .unwrap();
    assert_eq!(tagged.surface, SessionSurface::WebBridge);
    let reopened = t.open().await.unwrap();
    let resumed = reopened.resume(s.id, None, None).await.unwrap();
    assert_eq!(resumed.surface, SessionSurface::WebBridge);
    let listed = reopened.list_sessions().await.unwrap();
    assert_eq!(
        listed.iter().find(|l| l.id == s.id).map(|l| l.surface),
        Some(SessionSurface::WebBridge)
    );
    let back = reopened
        .set_surface(s.id, SessionSurface::Standard)
        .await
        .unwrap();
    assert_eq!(back.surface, SessionSurface::Standard);
    let missing = Ids::sequential().session_id();
    let err = reopened
        .set_surface(missing, SessionSurface::WebBridge)
        .await
        .unwrap_err();
    assert_eq!(err.code(), "store/session-not-found");
}

async fn approval_grants_reach_their_session_or_their_workspace(t: Target) {
    use evoflux_store::{GrantKey, GrantScope, NewSession, WorkspaceRequest};
    let repo = t.dir.path().join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let store = t.open().await.unwrap();
    let new = || NewSession {
        workspace: WorkspaceRequest::Coding(vec![repo.clone()]),
        lead: None,
        model: None,
        graph_hash: None,
        parent: None,
    };
    let first = store.create_session(new()).await.unwrap();
    let second = store.create_session(new()).await.unwrap();
    let cargo = GrantKey {
        tool: "shell".into(),
        command: Some("cargo".into()),
    };
    let write = GrantKey {
        tool: "write".into(),
        command: None,
    };
    store
        .add_approval_grant(first.id, &first.workspace, GrantScope::Session, &cargo)
        .await
        .unwrap();
    store
        .add_approval_grant(first.id, &first.workspace, GrantScope::Workspace, &write)
        .await
        .unwrap();
    let of = |s: &evoflux_store::Session| {
        let (store, id, ws) = (store.clone(), s.id, s.workspace.clone());
        async move { store.approval_grants(id, &ws).await.unwrap() }
    };
    assert_eq!(of(&first).await, [cargo.clone(), write.clone()]);
    // The next session in the workspace keeps only the workspace grant.
    assert_eq!(of(&second).await, [write]);
}

async fn model_requests_keep_parts_once_in_call_order_and_go_with_their_session(t: Target) {
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let b = store.create_session(work()).await.unwrap();
    let parts = |input: &str| evoflux_store::RequestParts {
        day: "2026-12-02".into(),
        system: vec![evoflux_store::SystemPart {
            owner: "agent-prompt".into(),
            text: "You are a lead.".into(),
        }],
        tools: Vec::new(),
        input: vec![Message::user(input)],
        turn_input: Some(input.into()),
        turn_output_schema: None,
        // Kept whole and read back as written.
        shaping: evoflux_store::PromptShaping {
            model: Some("openai:gpt-test".into()),
            context_window: Some(128_000),
            catalog_budget_bytes: Some(10_240),
            resolver: Some(evoflux_core::config::ResolverMode::Speculative),
            resolved: Some("build-fixer".into()),
        },
    };
    let priced = Usage {
        requests: 1,
        input_tokens: 120,
        cache_read_tokens: 100,
        output_tokens: 9,
        cost_usd: Usd::from_picos(42),
        ..Usage::default()
    };
    let unpriced = Usage {
        cost_usd: Usd::ZERO,
        unpriced_requests: 1,
        ..priced
    };
    store
        .record_model_request(a.id, &parts("one"), 2, &priced)
        .await
        .unwrap();
    store
        .record_model_request(b.id, &parts("two"), 2, &priced)
        .await
        .unwrap();
    store
        .record_model_request(a.id, &parts("three"), 4, &unpriced)
        .await
        .unwrap();
    assert_eq!(store.call_usages(a.id).await.unwrap(), [priced, unpriced]);
    // The system prompt and the empty tool list are stored once.
    let count = |table: &'static str| {
        let store = store.clone();
        async move { store.row_counts().await.unwrap()[table] }
    };
    assert_eq!(count("request_parts").await, 5);
    let both = store.model_requests(&[b.id, a.id]).await.unwrap();
    let inputs: Vec<_> = both
        .iter()
        .map(|r| r.parts.turn_input.clone().unwrap())
        .collect();
    assert_eq!(
        inputs,
        ["one", "two", "three"],
        "the order the calls were made"
    );
    assert_eq!(both[2].reply_seq, 4);
    assert_eq!(both[2].usage, Some(unpriced));
    assert_eq!(both[0].parts, parts("one"));
    store.delete_session(a.id).await.unwrap();
    assert_eq!(store.model_requests(&[a.id]).await.unwrap(), Vec::new());
    // Only the parts `b` still uses are left: its input, system and tools.
    assert_eq!(count("request_parts").await, 3);
}

/// A model call is stored whole: its reply joins the transcript, the
/// request is kept against that entry, and the usage is added — and an
/// unknown session stores none of it.
async fn a_model_call_is_recorded_whole_in_one_write(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    store
        .append_message(s.id, &Message::user("hello"))
        .await
        .unwrap();
    let parts = evoflux_store::RequestParts {
        day: "2026-12-06".into(),
        system: vec![evoflux_store::SystemPart {
            owner: "agent-prompt".into(),
            text: "You are a lead.".into(),
        }],
        tools: Vec::new(),
        input: Vec::new(),
        turn_input: Some("hello".into()),
        turn_output_schema: None,
        shaping: evoflux_store::PromptShaping::default(),
    };
    let usage = Usage {
        requests: 1,
        input_tokens: 10,
        output_tokens: 2,
        ..Usage::default()
    };
    let reply = Message::Assistant {
        content: "hi".into(),
        tool_calls: Vec::new(),
        provider_items: Vec::new(),
    };
    let first = store
        .record_model_call(s.id, &reply, &parts, usage)
        .await
        .unwrap();
    assert_eq!(first.entry.seq, 2);
    assert_eq!(first.total, usage);
    let second = store
        .record_model_call(s.id, &reply, &parts, usage)
        .await
        .unwrap();
    assert_eq!(second.entry.seq, 3);
    assert_eq!(second.total.input_tokens, 20);
    assert_eq!(store.transcript(s.id).await.unwrap().len(), 3);
    let recorded = store.model_requests(&[s.id]).await.unwrap();
    let seqs: Vec<u64> = recorded.iter().map(|r| r.reply_seq).collect();
    assert_eq!(seqs, [2, 3]);
    assert_eq!(recorded[0].parts, parts);
    // The empty tool list and the empty input are one part.
    assert_eq!(store.row_counts().await.unwrap()["request_parts"], 2);
    let gone: SessionId = "019b76da-a800-7000-8000-0000000000ff".parse().unwrap();
    let err = store
        .record_model_call(gone, &reply, &parts, usage)
        .await
        .unwrap_err();
    assert!(matches!(err, evoflux_store::StoreError::SessionNotFound(id) if id == gone));
    assert!(store.model_requests(&[gone]).await.unwrap().is_empty());
}

/// Two schedulers on one database (two replicas) race for the same thirty
/// occurrences: each is claimed exactly once.
async fn two_schedulers_claim_each_occurrence_once(t: Target) {
    let one = t.open().await.unwrap();
    let two = t.open().await.unwrap();
    let race = |store: Store| {
        tokio::spawn(async move {
            let mut won = Vec::new();
            for i in 0..30 {
                let claim = evoflux_store::Claim {
                    name: "every-second",
                    occurrence_at_ms: 1_000 * i,
                    trigger: evoflux_store::RunTrigger::Scheduled,
                    status: evoflux_store::RunStatus::Running,
                    detail: None,
                };
                if let Some(id) = store.claim_occurrence(&claim, None).await.unwrap() {
                    won.push((i, id));
                }
            }
            won
        })
    };
    let (a, b) = tokio::join!(race(one.clone()), race(two));
    let (a, b) = (a.unwrap(), b.unwrap());
    let mut occurrences: Vec<i64> = a.iter().chain(&b).map(|(i, _)| *i).collect();
    occurrences.sort_unstable();
    assert_eq!(occurrences, (0..30).collect::<Vec<i64>>());
    assert_eq!(
        one.schedule_runs("every-second", 100).await.unwrap().len(),
        30
    );
}

/// Two replicas race for the same session's turn fifty times: one wins
/// each time; the events one writes, the other reads in order.
async fn two_replicas_share_leases_and_events(t: Target) {
    let one = t.open().await.unwrap();
    let two = t.open().await.unwrap();
    let s = one.create_session(work()).await.unwrap();
    let ttl = std::time::Duration::from_secs(60);
    for round in 0..50_i64 {
        let (a, b) = tokio::join!(
            one.acquire_lease(s.id, "one", ttl),
            two.acquire_lease(s.id, "two", ttl)
        );
        let (a, b) = (a.unwrap(), b.unwrap());
        let (winner, lease) = match (a, b) {
            (Some(l), None) => ("one", l),
            (None, Some(l)) => ("two", l),
            other => panic!("round {round}: {other:?}"),
        };
        assert_eq!(lease.epoch, round + 1);
        let store = if winner == "one" { &one } else { &two };
        let id = u64::try_from(round + 1).unwrap();
        let data = format!("{{\"round\":{round}}}");
        let last = store
            .append_events(s.id, &[("turn_completed", data.as_str())])
            .await
            .unwrap();
        assert_eq!(last, id);
        store.release_lease(s.id, winner).await.unwrap();
    }
    let events = two.events_after(s.id, 10, 100).await.unwrap();
    assert_eq!(
        events.iter().map(|e| e.id).collect::<Vec<_>>(),
        (11..=50).collect::<Vec<u64>>()
    );
    assert_eq!(one.last_event_id(s.id).await.unwrap(), 50);
    assert_eq!(two.lease_epoch(s.id).await.unwrap(), 50);
}

/// A lease keeps who took it as data: name, process and where its pid is
/// counted; a holder that says only its key leaves them unknown, also when
/// it takes over the lease of one that said them.
async fn a_lease_keeps_who_holds_it(t: Target) {
    use evoflux_store::{LeaseClaim, LeaseProcess, PidNamespace};
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    let process = LeaseProcess {
        pid: 4242,
        host: "build-7".to_owned(),
        namespace: Some(PidNamespace {
            boot_id: "6d1f0c52-8a3b-4c52-9a0e-1f0d2f8b7c11".to_owned(),
            inode: 4_026_531_836,
        }),
    };
    let claim = LeaseClaim {
        holder: "evoflux run (pid 4242) on host build-7 since then",
        name: Some("evoflux run (pid 4242) on host build-7"),
        process: Some(&process),
    };
    store
        .acquire_lease(s.id, claim, std::time::Duration::ZERO)
        .await
        .unwrap()
        .unwrap();
    let held = store.lease_holder(s.id).await.unwrap().unwrap();
    assert_eq!(held.holder, claim.holder);
    assert_eq!(held.name.as_deref(), claim.name);
    assert_eq!(held.process.as_ref(), Some(&process));

    // Without a namespace: the process, and nothing of where its pid is.
    let elsewhere = LeaseProcess {
        namespace: None,
        ..process.clone()
    };
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store
        .acquire_lease(
            s.id,
            LeaseClaim {
                process: Some(&elsewhere),
                ..claim
            },
            std::time::Duration::ZERO,
        )
        .await
        .unwrap()
        .unwrap();
    let held = store.lease_holder(s.id).await.unwrap().unwrap();
    assert_eq!(held.process, Some(elsewhere));

    // Taken over by a holder that says nothing of itself.
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    store
        .acquire_lease(s.id, "replica-1", std::time::Duration::from_secs(60))
        .await
        .unwrap()
        .unwrap();
    let held = store.lease_holder(s.id).await.unwrap().unwrap();
    assert_eq!(held.holder, "replica-1");
    assert!(held.running);
    assert_eq!((held.name, held.process), (None, None));
}

/// The last events of some kinds, however many others came after them.
async fn recent_events_of_some_kinds_pass_over_the_others(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    let delta = ("message_delta", "{}");
    let mut events = vec![("turn_started", "{\"n\":1}")];
    events.extend([delta; 5]);
    events.push(("approval_requested", "{\"n\":7}"));
    events.extend([delta; 5]);
    store.append_events(s.id, &events).await.unwrap();
    let recent = store
        .recent_events(s.id, &["approval_requested", "turn_started"], 2)
        .await
        .unwrap();
    let got: Vec<(u64, &str)> = recent.iter().map(|e| (e.id, e.kind.as_str())).collect();
    assert_eq!(got, [(7, "approval_requested"), (1, "turn_started")]);
    let one = store
        .recent_events(s.id, &["approval_requested", "turn_started"], 1)
        .await
        .unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].data, "{\"n\":7}");
    assert!(store.recent_events(s.id, &[], 10).await.unwrap().is_empty());
}

/// Four replicas starting at once on a new database all open it.
async fn replicas_starting_together_all_open_the_database(t: Target) {
    let opened = futures_util::future::join_all((0..4).map(|_| t.open())).await;
    for store in opened {
        let store = store.unwrap();
        assert!(store.list_sessions().await.unwrap().is_empty());
    }
}

/// Where a test's store lives: a temporary data directory, with the
/// sessions in its SQLite file or in a fresh PostgreSQL database.
pub(crate) struct Target {
    dir: tempfile::TempDir,
    database: Database,
}

impl Target {
    pub(crate) fn sqlite() -> Target {
        Target {
            dir: tempfile::tempdir().unwrap(),
            database: Database::Sqlite,
        }
    }

    pub(crate) async fn postgres() -> Option<Target> {
        Some(Target {
            dir: tempfile::tempdir().unwrap(),
            database: evoflux_store::testing::postgres_database().await?,
        })
    }

    fn data(&self) -> std::path::PathBuf {
        self.dir.path().join("data")
    }

    pub(crate) async fn open(&self) -> Result<Store, StoreError> {
        self.open_with_ids(Ids::system()).await
    }

    async fn open_with_ids(&self, ids: Ids) -> Result<Store, StoreError> {
        Store::connect(self.data(), &self.database, ids).await
    }
}

/// Each test once on SQLite and once on PostgreSQL.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test]
            async fn $name() {
                super::$name(super::Target::sqlite()).await
            })*
        }
        mod postgres {
            $(#[tokio::test]
            async fn $name() {
                if let Some(t) = super::Target::postgres().await {
                    super::$name(t).await
                }
            })*
        }
    };
}

on_both_backends!(
    a_sessions_surface_is_kept_and_survives_a_resume,
    recent_events_of_some_kinds_pass_over_the_others,
    replicas_starting_together_all_open_the_database,
    two_replicas_share_leases_and_events,
    a_lease_keeps_who_holds_it,
    two_schedulers_claim_each_occurrence_once,
    create_load_and_list_newest_first,
    invalid_coding_workspace_is_refused_before_writing,
    resume_with_another_mode_or_workspace_is_refused,
    transcript_keeps_order_and_round_trips,
    pending_input_lifecycle,
    usage_accumulates,
    a_tree_s_usage_adds_up_every_child_exactly,
    reopen_after_drop_keeps_everything,
    concurrent_appends_from_two_handles_stay_gapless,
    work_session_resumes_with_its_own_folder_only,
    a_session_keeps_its_model_and_a_switch_is_persisted,
    approval_grants_reach_their_session_or_their_workspace,
    model_requests_keep_parts_once_in_call_order_and_go_with_their_session,
    a_model_call_is_recorded_whole_in_one_write,
);
