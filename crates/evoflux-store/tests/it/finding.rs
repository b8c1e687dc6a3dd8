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

    assert_eq!(
        store
            .set_model_title(s.id, " Lisbon\n offsite plan ")
            .await
            .unwrap()
            .as_deref(),
        Some("Lisbon offsite plan")
    );
    assert_eq!(
        store.load(s.id).await.unwrap().title.as_deref(),
        Some("Lisbon offsite plan")
    );
    // A model titles once.
    assert_eq!(store.set_model_title(s.id, "Another").await.unwrap(), None);

    let renamed = store.rename_session(s.id, "  Offsite ").await.unwrap();
    assert_eq!(renamed.title.as_deref(), Some("Offsite"));
    // A rename is not activity.
    assert_eq!(renamed.updated_at_ms, loaded.updated_at_ms);
    assert_eq!(
        store.set_model_title(s.id, "Model again").await.unwrap(),
        None
    );
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
    // Word forms: "offsites" and "planning" find "Plan the offsite";
    // "good weathers" finds "good weather".
    assert_eq!(find("planning offsites").await, [a.id]);
    assert_eq!(find("good weathers").await, [a.id]);
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

async fn search_finds_word_forms_the_same_on_both_backends(t: Target) {
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let b = store.create_session(work()).await.unwrap();
    say(&store, a.id, "the tests keep running for an hour").await;
    say(&store, b.id, "I ran it once; see parse_args in cli.rs v2").await;
    // Titles that hold none of the words, so only message search finds.
    store.rename_session(a.id, "Alpha").await.unwrap();
    store.rename_session(b.id, "Beta").await.unwrap();
    let find = |q: &str| {
        let store = store.clone();
        let q = q.to_owned();
        async move {
            let mut found = ids(&store
                .find_sessions(&SessionQuery {
                    search: Some(q),
                    ..SessionQuery::default()
                })
                .await
                .unwrap());
            found.sort();
            found
        }
    };
    assert_eq!(find("run").await, [a.id]);
    assert_eq!(find("runs").await, [a.id]);
    assert_eq!(find("RUNNING test").await, [a.id]);
    // Stop words are words like any other on both backends.
    assert_eq!(find("the").await, [a.id]);
    assert_eq!(find("for an hour").await, [a.id]);
    // Identifiers and numbers are found as written.
    assert_eq!(find("parse_args").await, [b.id]);
    assert_eq!(find("v2").await, [b.id]);
    assert_eq!(find("ran").await, [b.id]);
    assert!(find("walking").await.is_empty());
}

async fn a_child_s_activity_moves_its_ancestors_up(t: Target) {
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let a1 = store.create_session(child_of(&a, "call_1")).await.unwrap();
    let a11 = store.create_session(child_of(&a1, "call_2")).await.unwrap();
    let b = store.create_session(work()).await.unwrap();
    say(&store, a.id, "a").await;
    say(&store, b.id, "b").await;
    let list = store.find_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(ids(&list), [b.id, a.id, a1.id, a11.id]);
    // The grandchild works: its parent and the top-level session are
    // active now, so the family moves up.
    say(&store, a11.id, "the grandchild works").await;
    let list = store.find_sessions(&SessionQuery::default()).await.unwrap();
    assert_eq!(ids(&list), [a.id, a1.id, a11.id, b.id]);
    let at = |id| list.iter().find(|s| s.id == id).unwrap().updated_at_ms;
    assert_eq!(at(a.id), at(a11.id));
    assert_eq!(at(a1.id), at(a11.id));
    // Usage is activity too.
    store
        .add_usage(a1.id, evoflux_store::Usage::default())
        .await
        .unwrap();
    assert!(store.load(a.id).await.unwrap().updated_at_ms >= at(a11.id));
    let b_before = store.load(b.id).await.unwrap().updated_at_ms;
    // Times are in milliseconds: let one pass, so `a`'s next activity is
    // later than `a1`'s usage above and not the same millisecond.
    tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    // Siblings and other sessions are not touched.
    say(&store, a.id, "again").await;
    assert_eq!(store.load(b.id).await.unwrap().updated_at_ms, b_before);
    assert!(
        store.load(a1.id).await.unwrap().updated_at_ms
            < store.load(a.id).await.unwrap().updated_at_ms
    );
}

async fn tree_usages_sum_each_family_in_one_query(t: Target) {
    use evoflux_store::Usage;
    let store = t.open().await.unwrap();
    let a = store.create_session(work()).await.unwrap();
    let a1 = store.create_session(child_of(&a, "call_1")).await.unwrap();
    let a11 = store.create_session(child_of(&a1, "call_2")).await.unwrap();
    let b = store.create_session(work()).await.unwrap();
    let spend = |n: u64| Usage {
        requests: 1,
        input_tokens: n,
        ..Usage::default()
    };
    store.add_usage(a.id, spend(1)).await.unwrap();
    store.add_usage(a1.id, spend(10)).await.unwrap();
    store.add_usage(a11.id, spend(100)).await.unwrap();
    store.add_usage(b.id, spend(1000)).await.unwrap();
    let totals = store.tree_usages(&[a1.id, a.id]).await.unwrap();
    assert_eq!(totals.len(), 2);
    assert_eq!(totals[&a.id].input_tokens, 111);
    assert_eq!(totals[&a.id].requests, 3);
    assert_eq!(totals[&a1.id].input_tokens, 110);
    // What was not asked for is not computed.
    assert!(!totals.contains_key(&b.id));
    assert_eq!(totals[&a.id], store.tree_usage(a.id).await.unwrap());
    assert!(store.tree_usages(&[]).await.unwrap().is_empty());
}

on_both_backends!(
    search_finds_word_forms_the_same_on_both_backends,
    a_child_s_activity_moves_its_ancestors_up,
    tree_usages_sum_each_family_in_one_query,
    the_first_message_titles_a_session_until_a_model_or_a_rename,
    the_list_is_by_last_activity_paged_with_children_under_parents,
    search_finds_titles_and_message_words,
);
