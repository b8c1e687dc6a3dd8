//! `evoflux store export/import` at the store level: a SQLite store moves
//! to PostgreSQL and back without losing or changing a row, and a bad
//! export is refused whole.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use evoflux_core::ids::Ids;
use evoflux_store::{
    Claim, ConnectionTool, Database, GrantKey, GrantScope, Message, NewSession, PendingRequest,
    RequestParts, RunStatus, RunTrigger, ScheduleState, SessionParent, Store, SystemPart, TABLES,
    ToolCall, Usage, WorkspaceRequest,
};
use serde_json::json;

async fn store(dir: &std::path::Path, database: &Database) -> Store {
    Store::connect(dir, database, Ids::system()).await.unwrap()
}

/// A store with a row in every table.
async fn populate(store: &Store) {
    let lead = store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Coding(vec!["/repo/a".into(), "/repo/b".into()]),
            lead: Some("lead".into()),
            model: Some("scripted:default".into()),
            parent: None,
            graph_hash: Some("abc".into()),
        })
        .await
        .unwrap();
    let child = store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Shared(lead.workspace.clone()),
            lead: Some("coder".into()),
            model: None,
            parent: Some(SessionParent {
                session_id: lead.id,
                call_id: "call_1".into(),
            }),
            graph_hash: None,
        })
        .await
        .unwrap();
    store
        .append_message(lead.id, &Message::user("héllo ✓"))
        .await
        .unwrap();
    store
        .append_message(
            lead.id,
            &Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: "call_1".into(),
                    name: "shell".into(),
                    arguments: json!({"command": "ls"}),
                }],
                provider_items: Vec::new(),
            },
        )
        .await
        .unwrap();
    store
        .append_with_artifact(
            lead.id,
            &Message::Tool {
                tool_call_id: "call_1".into(),
                content: "a\nb".into(),
                is_error: false,
                media: Vec::new(),
            },
            &json!({"locator": "artifacts/x", "bytes": 3}),
        )
        .await
        .unwrap();
    let answered = store
        .create_pending_input(
            lead.id,
            "call_2",
            &PendingRequest::question("ask_user", "ok?"),
        )
        .await
        .unwrap();
    store
        .answer_pending_input(lead.id, answered.id, &json!("yes"))
        .await
        .unwrap();
    store
        .create_pending_input(
            child.id,
            "call_3",
            &PendingRequest::question("ask_user", "and?"),
        )
        .await
        .unwrap();
    let usage = Usage {
        requests: 1,
        input_tokens: 120,
        output_tokens: 7,
        cost_usd: evoflux_core::price::Usd::from_picos(99),
        ..Usage::default()
    };
    store.add_usage(lead.id, usage).await.unwrap();
    let grant = GrantKey {
        tool: "shell".into(),
        command: Some("cargo".into()),
    };
    store
        .add_approval_grant(lead.id, &lead.workspace, GrantScope::Workspace, &grant)
        .await
        .unwrap();
    let state = ScheduleState {
        trigger_key: "{\"every\":\"1s\"}".into(),
        next_run_at_ms: Some(2_000),
    };
    store.set_schedule_state("nightly", &state).await.unwrap();
    let run = store
        .claim_occurrence(
            &Claim {
                name: "nightly",
                occurrence_at_ms: 1_000,
                trigger: RunTrigger::Scheduled,
                status: RunStatus::Running,
                detail: None,
            },
            Some(&state),
        )
        .await
        .unwrap()
        .unwrap();
    store
        .update_run(run, RunStatus::Done, Some(lead.id), None)
        .await
        .unwrap();
    store
        .activate_connection_tools(
            lead.id,
            &[ConnectionTool {
                owner: "global".into(),
                server: "docs".into(),
                tool: "search".into(),
            }],
        )
        .await
        .unwrap();
    store
        .claim_channel_thread("POST /hooks/chat", "t-1", lead.id)
        .await
        .unwrap();
    let parts = RequestParts {
        day: "2026-12-05".into(),
        system: vec![SystemPart {
            owner: "agent-prompt".into(),
            text: "You lead.".into(),
        }],
        tools: Vec::new(),
        input: vec![Message::user("héllo ✓")],
        turn_input: Some("héllo ✓".into()),
        turn_output_schema: Some(json!({"type": "object"})),
        shaping: evoflux_store::PromptShaping {
            context_window: Some(8_192),
            ..evoflux_store::PromptShaping::default()
        },
    };
    store
        .record_model_request(lead.id, &parts, 2, &usage)
        .await
        .unwrap();
    store
        .set_session_commits(lead.id, &[("/repo/a".into(), "deadbeef".into())])
        .await
        .unwrap();
    store
        .acquire_lease(lead.id, "replica-1", std::time::Duration::from_secs(1))
        .await
        .unwrap()
        .unwrap();
    store.release_lease(lead.id, "replica-1").await.unwrap();
    store
        .send_signal(child.id, &evoflux_store::Signal::Cancel)
        .await
        .unwrap();
    store
        .append_events(
            lead.id,
            &[("turn_completed", "{\"type\":\"turn_completed\"}")],
        )
        .await
        .unwrap();
}

async fn export(store: &Store) -> String {
    let mut out = Vec::new();
    store.export(&mut out).await.unwrap();
    String::from_utf8(out).unwrap()
}

/// The export without its header (which names the backend it came from).
fn rows(export: &str) -> Vec<&str> {
    export.lines().skip(1).collect()
}

#[tokio::test]
async fn a_sqlite_store_moves_to_postgres_and_back_without_losing_a_row() {
    let Some(pg) = evoflux_store::testing::postgres_database().await else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let sqlite = store(&tmp.path().join("one"), &Database::Sqlite).await;
    populate(&sqlite).await;
    let counts = sqlite.row_counts().await.unwrap();
    assert!(
        counts.values().all(|n| *n > 0),
        "every table has a row to move: {counts:?}"
    );
    let from_sqlite = export(&sqlite).await;

    let postgres = store(&tmp.path().join("two"), &pg).await;
    let moved = postgres.import(from_sqlite.as_bytes()).await.unwrap();
    assert_eq!(moved.rows(), counts.values().sum::<u64>());
    let from_postgres = export(&postgres).await;
    assert_eq!(rows(&from_postgres), rows(&from_sqlite));

    let back = store(&tmp.path().join("three"), &Database::Sqlite).await;
    back.import(from_postgres.as_bytes()).await.unwrap();
    assert_eq!(export(&back).await, from_sqlite);

    // The imported store works on: numbering continues after the imported
    // ids, transcripts after their last entry.
    let lead = postgres
        .list_sessions()
        .await
        .unwrap()
        .into_iter()
        .find(|s| s.parent.is_none())
        .unwrap();
    let next = postgres
        .create_pending_input(
            lead.id,
            "call_9",
            &PendingRequest::question("ask_user", "?"),
        )
        .await
        .unwrap();
    assert_eq!(next.id.0, 3);
    let entry = postgres
        .append_message(lead.id, &Message::user("again"))
        .await
        .unwrap();
    assert_eq!(entry.seq, 4);
}

#[tokio::test]
async fn an_export_names_every_table_of_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let sqlite = store(tmp.path(), &Database::Sqlite).await;
    sqlite.close().await;
    let pool = sqlx::SqlitePool::connect(&format!(
        "sqlite://{}",
        tmp.path().join(evoflux_store::DB_FILE).display()
    ))
    .await
    .unwrap();
    let mut tables: Vec<String> = sqlx::query_scalar(
        "SELECT name FROM sqlite_master WHERE type = 'table' \
         AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%' ORDER BY name",
    )
    .fetch_all(&pool)
    .await
    .unwrap();
    // The full-text index is derived: triggers rebuild it on import.
    tables.retain(|t| !t.starts_with(evoflux_store::DERIVED_TABLE_PREFIX));
    tables.sort();
    let mut listed: Vec<&str> = TABLES.iter().map(|t| t.name).collect();
    listed.sort_unstable();
    assert_eq!(tables, listed);
}

#[tokio::test]
async fn a_cut_off_or_foreign_export_imports_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let source = store(&tmp.path().join("src"), &Database::Sqlite).await;
    populate(&source).await;
    let full = export(&source).await;
    let cut: String = full
        .lines()
        .take(full.lines().count() - 1)
        .map(|l| format!("{l}\n"))
        .collect();

    let target = store(&tmp.path().join("dst"), &Database::Sqlite).await;
    let e = target.import(cut.as_bytes()).await.unwrap_err();
    assert_eq!(e.code(), "store/export-unusable");
    assert!(
        target.list_sessions().await.unwrap().is_empty(),
        "nothing of a refused import is kept"
    );
    let e = target
        .import("{\"kind\":\"row\",\"table\":\"sessions\",\"row\":{}}\n".as_bytes())
        .await
        .unwrap_err();
    assert_eq!(e.code(), "store/export-unusable");

    // A store in use is never imported into.
    let e = source.import(full.as_bytes()).await.unwrap_err();
    assert_eq!(e.code(), "store/import-not-empty");
}
