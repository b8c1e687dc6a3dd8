//! How sessions are found (issue #48): each has a title, the list is
//! ordered by last activity and paged, child sessions sit under their
//! parent, and a search looks through titles and what the user and the
//! model said (SQLite FTS5, PostgreSQL full-text search).
//!
//! A title has a source ([`TitleSource`]): the first user message, trimmed
//! (set by the store as that message is appended, so every session with a
//! message has one at once); a model's (one short side call after the
//! first turn, which replaces only a message title); or the user's (a
//! rename, which nothing but another rename replaces).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use sqlx::Row;

use crate::Usage;
use crate::database::Backend;
use crate::error::StoreError;
use crate::session::Session;
use crate::store::{SESSION_COLUMNS, Store, session_from_row, usage_from_row};

/// The longest title made from a message, in characters (an ellipsis
/// marks a cut).
pub const MESSAGE_TITLE_CHARS: usize = 60;
/// The longest title a rename or a model may set, in characters.
pub const TITLE_CHARS: usize = 120;
/// The most sessions one page holds.
pub const MAX_PAGE: u32 = 500;

/// Who set a session's title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleSource {
    /// The first user message, trimmed.
    Message,
    /// The session's model, asked once after the first turn.
    Model,
    /// A rename.
    User,
}

impl TitleSource {
    pub const fn as_str(self) -> &'static str {
        match self {
            TitleSource::Message => "message",
            TitleSource::Model => "model",
            TitleSource::User => "user",
        }
    }
}

/// `text` as a title: one line, inner whitespace collapsed, at most
/// `max` characters (cut at a word boundary when one is near, with an
/// ellipsis). `None` when nothing visible is left.
pub fn title_from(text: &str, max: usize) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    if words.is_empty() {
        return None;
    }
    let line = words.join(" ");
    if line.chars().count() <= max {
        return Some(line);
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    let cut = match cut.rfind(' ') {
        Some(at) if cut[..at].chars().count() * 3 >= max * 2 => cut[..at].to_owned(),
        _ => cut,
    };
    Some(format!("{}…", cut.trim_end()))
}

/// Where a page of the session list starts: after the session last
/// active at `updated_at_ms` with `id` (the last row of the previous
/// page). Written `<updated_at_ms>:<session id>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActivityCursor {
    pub updated_at_ms: i64,
    pub id: SessionId,
}

impl ActivityCursor {
    /// The cursor of the page after `session`.
    pub fn after(session: &Session) -> ActivityCursor {
        ActivityCursor {
            updated_at_ms: session.updated_at_ms,
            id: session.id,
        }
    }
}

impl fmt::Display for ActivityCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.updated_at_ms, self.id)
    }
}

impl FromStr for ActivityCursor {
    type Err = StoreError;

    fn from_str(s: &str) -> Result<ActivityCursor, StoreError> {
        let bad = || StoreError::Cursor(s.to_owned());
        let (ms, id) = s.trim().split_once(':').ok_or_else(bad)?;
        Ok(ActivityCursor {
            updated_at_ms: ms.parse().map_err(|_| bad())?,
            id: SessionId::from_str(id).map_err(|_| bad())?,
        })
    }
}

/// What [`Store::find_sessions`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionQuery {
    /// Words a session's title or messages must hold; blank is none.
    pub search: Option<String>,
    /// At most this many sessions (top-level ones, without a search),
    /// capped to [`MAX_PAGE`]; `None` (or 0) is every one.
    pub limit: Option<u32>,
    /// Only sessions last active before this one.
    pub before: Option<ActivityCursor>,
    /// Only sessions of this mode.
    pub mode: Option<AppMode>,
}

impl SessionQuery {
    fn search(&self) -> Option<&str> {
        self.search
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
    }

    fn limit(&self) -> Option<i64> {
        match self.limit {
            None | Some(0) => None,
            Some(n) => Some(i64::from(n.min(MAX_PAGE))),
        }
    }
}

/// An FTS5 query matching every word of `search` as a phrase of its own,
/// so no character of it is read as FTS5 syntax.
fn fts5_query(search: &str) -> String {
    search
        .split_whitespace()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" ")
}

impl Store {
    /// Renames a session: the user's title, which nothing but another
    /// rename replaces. Does not count as activity.
    pub async fn rename_session(&self, id: SessionId, title: &str) -> Result<Session, StoreError> {
        let title = title_from(title, TITLE_CHARS).ok_or(StoreError::TitleEmpty)?;
        let done = sqlx::query("UPDATE sessions SET title = $1, title_source = $2 WHERE id = $3")
            .bind(&title)
            .bind(TitleSource::User.as_str())
            .bind(id.to_string())
            .execute(self.pool())
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::SessionNotFound(id));
        }
        self.load(id).await
    }

    /// Sets the title a model made, unless the user renamed the session
    /// (or a model titled it already). The title as stored (one trimmed
    /// line) when it was set; `None` when it was not.
    pub async fn set_model_title(
        &self,
        id: SessionId,
        title: &str,
    ) -> Result<Option<String>, StoreError> {
        let Some(title) = title_from(title, TITLE_CHARS) else {
            return Ok(None);
        };
        let done = sqlx::query(
            "UPDATE sessions SET title = $1, title_source = $2 \
             WHERE id = $3 AND (title_source IS NULL OR title_source = $4)",
        )
        .bind(&title)
        .bind(TitleSource::Model.as_str())
        .bind(id.to_string())
        .bind(TitleSource::Message.as_str())
        .execute(self.pool())
        .await?;
        Ok((done.rows_affected() > 0).then_some(title))
    }

    /// Who set the session's title; `None` while it has none.
    pub async fn title_source(&self, id: SessionId) -> Result<Option<TitleSource>, StoreError> {
        let row = sqlx::query("SELECT title_source FROM sessions WHERE id = $1")
            .bind(id.to_string())
            .fetch_optional(self.pool())
            .await?
            .ok_or(StoreError::SessionNotFound(id))?;
        let source: Option<String> = row.try_get("title_source")?;
        Ok(match source.as_deref() {
            None => None,
            Some("message") => Some(TitleSource::Message),
            Some("model") => Some(TitleSource::Model),
            Some("user") => Some(TitleSource::User),
            Some(other) => return Err(StoreError::corrupt("title source", other)),
        })
    }

    /// A page of the session list, most recently active first.
    ///
    /// Without a search: top-level sessions, each followed by every
    /// session its dispatches opened (recursively, oldest first), so a
    /// page never splits a family — one query for the page and its
    /// families, however many there are. With one: every session,
    /// top-level or child, whose title holds the search as written (any
    /// case) or whose user and model messages hold each of its words in
    /// any form (stemmed: "run" finds "running", on both backends).
    pub async fn find_sessions(&self, query: &SessionQuery) -> Result<Vec<Session>, StoreError> {
        let mut clauses: Vec<String> = Vec::new();
        let mut n = 0;
        let mut next = || {
            n += 1;
            format!("${n}")
        };
        let search = query.search();
        if search.is_some() {
            let (title, words) = (next(), next());
            clauses.push(match self.backend() {
                Backend::Sqlite => format!(
                    "(instr(lower(title), lower({title})) > 0 OR id IN (\
                     SELECT t.session_id FROM transcript_search s \
                     JOIN transcript_entries t ON t.rowid = s.rowid \
                     WHERE transcript_search MATCH {words}))"
                ),
                Backend::Postgres => format!(
                    "(strpos(lower(title), lower({title})) > 0 OR id IN (\
                     SELECT session_id FROM transcript_entries \
                     WHERE role IN ('user', 'assistant') \
                     AND to_tsvector('{PG_SEARCH_CONFIG}', COALESCE(body::jsonb ->> 'content', '')) \
                     @@ plainto_tsquery('{PG_SEARCH_CONFIG}', {words})))"
                ),
            });
        } else {
            clauses.push("parent_id IS NULL".to_owned());
        }
        if query.mode.is_some() {
            clauses.push(format!("mode = {}", next()));
        }
        if query.before.is_some() {
            let (ms, id) = (next(), next());
            clauses.push(format!(
                "(updated_at_ms < {ms} OR (updated_at_ms = {ms} AND id < {id}))"
            ));
        }
        let limit = match query.limit() {
            Some(_) => format!(" LIMIT {}", next()),
            None => String::new(),
        };
        let page = format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE {} \
             ORDER BY updated_at_ms DESC, id DESC{limit}",
            clauses.join(" AND ")
        );
        let sql = if search.is_some() {
            page
        } else {
            // The page's roots and, in the same query, every session below
            // them. `UNION` ends the walk on a corrupt cycle of parents.
            format!(
                "WITH RECURSIVE page AS ({page}), \
                 family (id) AS (SELECT id FROM page \
                     UNION SELECT s.id FROM sessions s JOIN family f ON s.parent_id = f.id) \
                 SELECT {SESSION_COLUMNS} FROM page \
                 UNION ALL SELECT {SESSION_COLUMNS} FROM sessions \
                 WHERE id IN (SELECT id FROM family) AND id NOT IN (SELECT id FROM page)"
            )
        };
        let mut q = sqlx::query(sqlx::AssertSqlSafe(sql));
        if let Some(search) = search {
            q = q.bind(search.to_owned()).bind(match self.backend() {
                Backend::Sqlite => fts5_query(search),
                Backend::Postgres => search.to_owned(),
            });
        }
        if let Some(mode) = query.mode {
            q = q.bind(mode.as_str());
        }
        if let Some(before) = query.before {
            q = q.bind(before.updated_at_ms).bind(before.id.to_string());
        }
        if let Some(limit) = query.limit() {
            q = q.bind(limit);
        }
        let rows = q.fetch_all(self.pool()).await?;
        let found: Vec<Session> = rows
            .iter()
            .map(session_from_row)
            .collect::<Result<_, _>>()?;
        if search.is_some() {
            return Ok(found);
        }
        Ok(families(found))
    }

    /// The usage of each of `ids` with every session below it (what it
    /// cost with its team), in one query however many there are. Ids
    /// without any usage are absent.
    pub async fn tree_usages(
        &self,
        ids: &[SessionId],
    ) -> Result<HashMap<SessionId, Usage>, StoreError> {
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let listed =
            serde_json::to_string(&ids.iter().map(|id| id.to_string()).collect::<Vec<_>>())
                .map_err(|e| StoreError::corrupt("session ids", e))?;
        let each = match self.backend() {
            Backend::Sqlite => "SELECT value FROM json_each($1)",
            Backend::Postgres => "SELECT jsonb_array_elements_text(CAST($1 AS jsonb))",
        };
        let sum = |col: &str| format!("CAST(COALESCE(SUM(u.{col}), 0) AS BIGINT) AS {col}");
        let sums = [
            "requests",
            "input_tokens",
            "output_tokens",
            "cache_read_tokens",
            "cache_write_tokens",
            "projected_results",
            "projection_saved_chars",
            "cost_picousd",
            "unpriced_requests",
        ]
        .map(sum)
        .join(", ");
        // `UNION` ends the walk on a corrupt cycle of parents.
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "WITH RECURSIVE tree (root, id) AS (\
                 SELECT id, id FROM sessions WHERE id IN ({each}) \
                 UNION SELECT t.root, s.id FROM sessions s JOIN tree t ON s.parent_id = t.id\
             ) \
             SELECT t.root AS session_id, {sums} \
             FROM tree t JOIN usage_totals u ON u.session_id = t.id GROUP BY t.root"
        )))
        .bind(listed)
        .fetch_all(self.pool())
        .await?;
        let mut out = HashMap::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get("session_id")?;
            let id = SessionId::from_str(&id).map_err(|e| StoreError::corrupt("session id", e))?;
            out.insert(id, usage_from_row(row)?);
        }
        Ok(out)
    }
}

/// The PostgreSQL text search configuration of message search
/// (`migrations/postgres/0006_search_word_forms.sql`): `simple`, with
/// words stemmed by the English Snowball stemmer and no stop words — what
/// SQLite's FTS5 `porter` tokenizer does, so both backends find the same.
const PG_SEARCH_CONFIG: &str = "evoflux_words";

/// `rows` (a page's top-level sessions, most recently active first, and
/// the sessions below them in any order) as the list shows them: each
/// top-level session followed by its family, level by level, each
/// level's sessions oldest first.
fn families(rows: Vec<Session>) -> Vec<Session> {
    let mut roots = Vec::new();
    let mut below: HashMap<SessionId, Vec<Session>> = HashMap::new();
    for s in rows {
        match &s.parent {
            Some(p) => below.entry(p.session_id).or_default().push(s),
            None => roots.push(s),
        }
    }
    for kids in below.values_mut() {
        kids.sort_by_key(|s| (s.created_at_ms, s.id));
    }
    roots.sort_by_key(|s| std::cmp::Reverse((s.updated_at_ms, s.id)));
    let mut out = Vec::new();
    for root in roots {
        let start = out.len();
        out.push(root);
        let mut i = start;
        while i < out.len() {
            let id = out[i].id;
            if let Some(kids) = below.remove(&id) {
                out.extend(kids);
            }
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_title_is_one_trimmed_line() {
        assert_eq!(title_from("  \n ", 60), None);
        assert_eq!(
            title_from("  Fix the\nlogin   bug \n", 60).as_deref(),
            Some("Fix the login bug")
        );
        let long = "word ".repeat(30);
        let t = title_from(&long, 60).unwrap();
        assert!(t.chars().count() <= 60, "{t}");
        assert!(t.ends_with("word…"), "{t}");
        let unbroken = "x".repeat(100);
        assert_eq!(
            title_from(&unbroken, 10).unwrap(),
            format!("{}…", "x".repeat(9))
        );
    }

    #[test]
    fn a_cursor_round_trips_and_refuses_junk() {
        let id = evoflux_core::ids::Ids::sequential().session_id();
        let c = ActivityCursor {
            updated_at_ms: 42,
            id,
        };
        assert_eq!(c.to_string().parse::<ActivityCursor>().unwrap(), c);
        assert_eq!(
            "nope".parse::<ActivityCursor>().unwrap_err().code(),
            "store/cursor-invalid"
        );
        assert!("x:y".parse::<ActivityCursor>().is_err());
    }

    #[test]
    fn search_words_are_phrases_not_syntax() {
        assert_eq!(fts5_query(" a\"b  OR c "), "\"a\"\"b\" \"OR\" \"c\"");
    }
}
