#![allow(clippy::unwrap_used, clippy::expect_used)]

//! Sessions can be found (issue #48): titles from the first message, a
//! model's title and a rename; the list by last activity, paged, with
//! children under their parent; search over titles and messages. Each
//! test runs on both backends.

use std::time::Duration;

use evoflux_store::{
    ActivityCursor, Message, NewSession, SessionParent, SessionQuery, Store, TitleSource,
    WorkspaceRequest,
};

use crate::sessions::Target;

fn work() -> NewSession {
    NewSession {
        workspace: WorkspaceRequest::Work,
        lead: Some("lead".into()),
        model: None,
        graph_hash: None,
        parent: None,
    }
}

fn child_of(parent: &evoflux_store::Session, call: &str) -> NewSession {
    NewSession {
        parent: Some(SessionParent {
            session_id: parent.id,
            call_id: call.into(),
        }),
        ..work()
    }
}

async fn say(store: &Store, id: evoflux_core::ids::SessionId, text: &str) {
    store
        .append_message(id, &Message::user(text))
        .await
        .unwrap();
    // Distinct activity times, so the order is the one written.
    tokio::time::sleep(Duration::from_millis(3)).await;
}

fn ids(sessions: &[evoflux_store::Session]) -> Vec<evoflux_core::ids::SessionId> {
    sessions.iter().map(|s| s.id).collect()
}

async fn the_first_message_titles_a_session_until_a_model_or_a_rename(t: Target) {
    let store = t.open().await.unwrap();
    let s = store.create_session(work()).await.unwrap();
    assert_eq!(s.title, None);
    assert_eq!(store.title_source(s.id).await.unwrap(), None);
    say(&store, s.id, "  Plan the\nQ3 offsite   in Lisbon  ").await;
    say(&store, s.id, "a second message titles nothing").await;
    let loaded = store.load(s.id).await.unwrap();
    assert_eq!(
        loaded.title.as_deref(),
        Some("Plan the Q3 offsite in Lisbon")
    );
    assert_eq!(
        store.title_source(s.id).await.unwrap(),
        Some(TitleSource::Message)
    );

    assert!(
        store
            .set_model_title(s.id, "Lisbon offsite plan")
            .await
            .unwrap()
    );
    assert_eq!(
        store.load(s.id).await.unwrap().title.as_deref(),
        Some("Lisbon offsite plan")
    );
    // A model titles once.
    assert!(!store.set_model_title(s.id, "Another").await.unwrap());

    let renamed = store.rename_session(s.id, "  Offsite ").await.unwrap();
    assert_eq!(renamed.title.as_deref(), Some("Offsite"));
    // A rename is not activity.
    assert_eq!(renamed.updated_at_ms, loaded.updated_at_ms);
    assert!(!store.set_model_title(s.id, "Model again").await.unwrap());
    assert_eq!(
        store.rename_session(s.id, " \n ").await.unwrap_err().code(),
        "store/title-empty"
    );
    let missing = "019b76da-a800-7000-8000-0000000000ff".parse().unwrap();
    assert_eq!(
        store.rename_session(missing, "x").await.unwrap_err().code(),
        "store/session-not-found"
    );
}

async fn the_list_is_by_last_activity_paged_with_children_under_parents(t: Target) {
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let b = store.create_session(work()).await.unwrap();
    let c = store.create_session(work()).await.unwrap();
    let a1 = store.create_session(child_of(&a, "call_1")).await.unwrap();
    let a11 = store.create_session(child_of(&a1, "call_2")).await.unwrap();
    say(&store, b.id, "b").await;
    say(&store, c.id, "c").await;
    // The oldest session is the most recently active one.
    say(&store, a.id, "a").await;
    say(&store, a11.id, "the grandchild works").await;

    let all = store.find_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(ids(&all), [a.id, a1.id, a11.id, c.id, b.id]);

    let first = store
        .find_sessions(&SessionQuery {
            limit: Some(2),
            ..SessionQuery::default()
        })
        .await
        .unwrap();
    // Two top-level sessions, with the family of the first.
    assert_eq!(ids(&first), [a.id, a1.id, a11.id, c.id]);
    let cursor = ActivityCursor::after(first.last().unwrap());
    let cursor: ActivityCursor = cursor.to_string().parse().unwrap();
    let second = store
        .find_sessions(&SessionQuery {
            limit: Some(2),
            before: Some(cursor),
            ..SessionQuery::default()
        })
        .await
        .unwrap();
    assert_eq!(ids(&second), [b.id]);

    // One mode's sessions only.
    let coding = store
        .create_session(NewSession {
            workspace: WorkspaceRequest::Coding(vec!["/r/one".into()]),
            ..work()
        })
        .await
        .unwrap();
    let only = |mode| SessionQuery {
        mode: Some(mode),
        ..SessionQuery::default()
    };
    let work_only = store
        .find_sessions(&only(evoflux_core::AppMode::Work))
        .await
        .unwrap();
    assert_eq!(ids(&work_only), [a.id, a1.id, a11.id, c.id, b.id]);
    let coding_only = store
        .find_sessions(&only(evoflux_core::AppMode::Coding))
        .await
        .unwrap();
    assert_eq!(ids(&coding_only), [coding.id]);
}

async fn search_finds_titles_and_message_words(t: Target) {
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let b = store.create_session(work()).await.unwrap();
    let child = store.create_session(child_of(&a, "call_1")).await.unwrap();
    say(&store, a.id, "Plan the offsite").await;
    store
        .append_message(a.id, &Message::assistant("Lisbon has good weather in May."))
        .await
        .unwrap();
    say(&store, b.id, "Refactor the parser").await;
    say(&store, child.id, "look up flights to Porto").await;
    store.rename_session(b.id, "Grammar work").await.unwrap();
    let find = |q: &str| {
        let store = store.clone();
        let q = q.to_owned();
        async move {
            ids(&store
                .find_sessions(&SessionQuery {
                    search: Some(q),
                    ..SessionQuery::default()
                })
                .await
                .unwrap())
        }
    };
    // A word the model said, any case.
    assert_eq!(find("lisbon").await, [a.id]);
    // A word of a message in a child: the child is found itself.
    assert_eq!(find("Porto").await, [child.id]);
    // Part of a title.
    assert_eq!(find("ammar wo").await, [b.id]);
    // Every word must be there; FTS syntax is just words.
    assert!(find("offsite parser").await.is_empty());
    assert!(find("\"OR* (").await.is_empty());
    assert!(find("nowhere").await.is_empty());
    // A deleted session is found no more.
    store.delete_session(a.id).await.unwrap();
    assert!(find("lisbon").await.is_empty());
    assert!(find("porto").await.is_empty());
}

on_both_backends!(
    the_first_message_titles_a_session_until_a_model_or_a_rename,
    the_list_is_by_last_activity_paged_with_children_under_parents,
    search_finds_titles_and_message_words,
);
