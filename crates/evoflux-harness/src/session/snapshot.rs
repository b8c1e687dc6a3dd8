//! A session as a view opens it: the newest page of its stored
//! transcript up to the start of its last turn, and the event id to
//! follow from, so the last (perhaps running) turn arrives as events.
//!
//! A long session is never replayed from its first event: the stored
//! transcript holds every finished turn, and only the last turn — the one
//! that may still be streaming, asking or waiting for an approval — is
//! read from the event log. The two logs meet at a turn's start: its
//! `turn_started` event records the transcript entry it follows
//! (`after_entry`), so a view shows entries up to that one and the turn's
//! events after it, and nothing twice.
//!
//! Older history is read a page at a time ([`TranscriptPage`]); a page
//! never starts with a tool result cut off from the call that asked for
//! it.

use evoflux_core::ids::SessionId;
use evoflux_protocol::EventKind;
use evoflux_store::{
    EntryRole, Message, PendingInput, Session, Store, StoreError, StoredEvent, TranscriptEntry,
    Usage,
};
use serde::Serialize;

/// The most entries one page holds.
pub const MAX_PAGE: u32 = 500;

/// How many entries a page holds when the caller does not say.
pub const DEFAULT_PAGE: u32 = 120;

/// Up to this many entries are read at once when a page is widened to its
/// tool call.
const WIDEN_STEP: u32 = 16;

/// What a view of one session renders first.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSnapshot {
    pub session: Session,
    /// The newest stored entries before the last turn, in order.
    pub transcript: Vec<TranscriptEntry>,
    /// The first entry shown when older ones exist: page with
    /// `before=<earlier>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earlier: Option<u64>,
    /// Follow the session's events after this id: the last turn (running
    /// or not) and everything after it.
    pub after_event: u64,
    /// Questions the agent is waiting on that the events after
    /// `after_event` do not ask again (a turn logged elsewhere, or before
    /// turns recorded where they start).
    pub pending_inputs: Vec<PendingInput>,
    /// The questions the calls in `transcript` asked, answered or not: a
    /// view shows such a call as the question it was.
    pub questions: Vec<PendingInput>,
    /// This session's own model calls.
    pub usage: Usage,
    /// With every session its dispatches opened.
    pub usage_with_children: Usage,
    pub children: Vec<Session>,
    /// Every session below this one, as [`super::SessionRecord::tree`].
    pub tree: Vec<super::TreeEntry>,
}

/// One page of older history.
#[derive(Debug, Clone, Serialize)]
pub struct TranscriptPage {
    pub transcript: Vec<TranscriptEntry>,
    /// As [`SessionSnapshot::questions`].
    pub questions: Vec<PendingInput>,
    /// As [`SessionSnapshot::earlier`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earlier: Option<u64>,
}

/// Where the stored transcript ends for a view and its events begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seam {
    /// Follow events after this id.
    after_event: u64,
    /// Show stored entries up to this one (all when `None`).
    last_entry: Option<u64>,
}

impl SessionSnapshot {
    /// The snapshot of `id`, with at most `limit` entries. Whoever writes
    /// the session's events must have stored what it queued before this
    /// is called (a server flushes its event writer first).
    pub async fn load(
        store: &Store,
        id: SessionId,
        limit: u32,
    ) -> Result<SessionSnapshot, StoreError> {
        let session = store.load(id).await?;
        let last_event = store.last_event_id(id).await?;
        let seam = seam(last_event, &recent_turns(store, id).await?);
        let mut page = page(store, id, seam.last_entry.map(|e| e + 1), limit).await?;
        // A turn that started while the page was read stores entries the
        // page may hold; they belong to that turn's events.
        let now = seam_since(seam, &recent_turns(store, id).await?);
        if let Some(last) = now.last_entry {
            page.transcript.retain(|e| e.seq <= last);
        }
        // Every question once: the open ones the events will not ask again,
        // and those the page's calls asked.
        let asked = store.pending_inputs(id).await?;
        let pending_inputs = if seam.after_event == last_event {
            asked.iter().filter(|q| q.is_open()).cloned().collect()
        } else {
            Vec::new()
        };
        let questions = asked_in(asked, &page.transcript);
        Ok(SessionSnapshot {
            questions,
            transcript: page.transcript,
            earlier: page.earlier,
            after_event: now.after_event,
            pending_inputs,
            usage: store.usage(id).await?,
            usage_with_children: store.tree_usage(id).await?,
            children: store.children_of(id).await?,
            tree: super::record::tree(store, id).await?,
            session,
        })
    }
}

impl TranscriptPage {
    /// Up to `limit` entries before entry `before`.
    pub async fn load(
        store: &Store,
        id: SessionId,
        before: u64,
        limit: u32,
    ) -> Result<TranscriptPage, StoreError> {
        let mut page = page(store, id, Some(before), limit).await?;
        page.questions = asked_in(store.pending_inputs(id).await?, &page.transcript);
        Ok(page)
    }
}

/// Of the session's questions `asked`, those the calls in `entries` asked.
fn asked_in(mut asked: Vec<PendingInput>, entries: &[TranscriptEntry]) -> Vec<PendingInput> {
    let calls: std::collections::HashSet<&str> = entries
        .iter()
        .flat_map(|e| match &e.message {
            Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
            Message::System { .. } | Message::User { .. } | Message::Tool { .. } => &[],
        })
        .map(|c| c.id.as_str())
        .collect();
    asked.retain(|q| calls.contains(q.tool_call_id.as_str()));
    asked
}

/// The session's newest `turn_started` events, newest first.
async fn recent_turns(store: &Store, id: SessionId) -> Result<Vec<StoredEvent>, StoreError> {
    store
        .recent_events(id, &[EventKind::TurnStarted.as_str()], 4)
        .await
}

/// The transcript entry a logged `turn_started` follows, when it says.
fn after_entry(event: &StoredEvent) -> Option<u64> {
    serde_json::from_str::<serde_json::Value>(&event.data)
        .ok()?
        .get("after_entry")?
        .as_u64()
}

/// The seam for a session whose last event is `last_event` and whose
/// newest turns are `turns` (newest first): just before the last turn when
/// it says where it starts in the transcript, else after everything.
fn seam(last_event: u64, turns: &[StoredEvent]) -> Seam {
    match turns.first().and_then(|t| Some((t.id, after_entry(t)?))) {
        Some((id, entry)) => Seam {
            after_event: id.saturating_sub(1),
            last_entry: Some(entry),
        },
        None => Seam {
            after_event: last_event,
            last_entry: None,
        },
    }
}

/// `seam` narrowed by turns logged after it (`turns` newest first): their
/// entries come as their events.
fn seam_since(seam: Seam, turns: &[StoredEvent]) -> Seam {
    turns
        .iter()
        .filter(|t| t.id > seam.after_event)
        .filter_map(after_entry)
        .fold(seam, |s, entry| Seam {
            after_event: s.after_event,
            last_entry: Some(s.last_entry.map_or(entry, |l| l.min(entry))),
        })
}

/// Up to `limit` entries before `before` (from the end when `None`),
/// widened back to the call a leading tool result answers.
async fn page(
    store: &Store,
    id: SessionId,
    before: Option<u64>,
    limit: u32,
) -> Result<TranscriptPage, StoreError> {
    let limit = limit.clamp(1, MAX_PAGE);
    let mut transcript = store.transcript_page(id, before, limit).await?;
    while let Some(first) = transcript.first().filter(|e| starts_mid_call(e)) {
        let older = store
            .transcript_page(id, Some(first.seq), WIDEN_STEP)
            .await?;
        if older.is_empty() {
            break;
        }
        // Back to the newest entry that is not a result, and no further.
        let from = older.iter().rposition(|e| !starts_mid_call(e)).unwrap_or(0);
        transcript.splice(0..0, older.into_iter().skip(from));
    }
    let earlier = match transcript.first() {
        Some(first) if first.seq > 1 => Some(first.seq),
        Some(_) => None,
        // Nothing before `before` at all, or an empty transcript.
        None => None,
    };
    Ok(TranscriptPage {
        transcript,
        questions: Vec::new(),
        earlier,
    })
}

/// A tool result (its call is in the entry before it).
fn starts_mid_call(entry: &TranscriptEntry) -> bool {
    match EntryRole::of(&entry.message) {
        EntryRole::Tool => true,
        EntryRole::System | EntryRole::User | EntryRole::Assistant => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(id: u64, after_entry: Option<u64>) -> StoredEvent {
        let data = match after_entry {
            Some(e) => format!(r#"{{"type":"turn_started","session_id":"s","after_entry":{e}}}"#),
            None => r#"{"type":"turn_started","session_id":"s"}"#.to_owned(),
        };
        StoredEvent {
            id,
            kind: "turn_started".into(),
            data,
        }
    }

    #[test]
    fn the_last_turn_comes_as_events_and_the_transcript_stops_where_it_started() {
        let s = seam(40, &[turn(31, Some(12)), turn(20, Some(8))]);
        assert_eq!(
            s,
            Seam {
                after_event: 30,
                last_entry: Some(12)
            }
        );
    }

    #[test]
    fn a_log_without_recorded_turn_starts_shows_the_whole_transcript() {
        assert_eq!(
            seam(9, &[turn(3, None)]),
            Seam {
                after_event: 9,
                last_entry: None
            }
        );
        assert_eq!(
            seam(0, &[]),
            Seam {
                after_event: 0,
                last_entry: None
            }
        );
    }

    #[test]
    fn a_turn_started_while_the_page_was_read_cuts_the_page_at_its_start() {
        let first = seam(40, &[]);
        let now = seam_since(first, &[turn(41, Some(17)), turn(20, Some(8))]);
        assert_eq!(
            now,
            Seam {
                after_event: 40,
                last_entry: Some(17)
            }
        );
        // The turn the seam already starts at narrows nothing further.
        let at_turn = seam(40, &[turn(31, Some(12))]);
        assert_eq!(seam_since(at_turn, &[turn(31, Some(12))]), at_turn);
    }
}
