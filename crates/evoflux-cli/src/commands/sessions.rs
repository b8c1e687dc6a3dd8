//! `evoflux sessions`: list (and search), show, rename, resume, delete,
//! export, replay and prune the stored sessions. Resuming drives the same session host as
//! `run` ([`super::run`]); the rest reads and edits the store.

use std::path::PathBuf;

use clap::Subcommand;
use evoflux_app::maintenance::Retention;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_harness::{
    Limits, PendingInput, Session, SessionRecord, SessionSummary, StoreError, TranscriptEntry,
    TurnOptions,
};
use evoflux_protocol::{Message, ProviderItem, Usage};

use super::run::one_turn;
use crate::cli::SourceArgs;
use crate::frontend::printer::{citation_line, cite_once, clip, event_sink, web_search_line};
use crate::frontend::runtime;
use crate::frontend::session::{OpenLease, SessionArgs, non_interactive, open, process_runtime};
use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List sessions by last activity, each delegated child indented under its parent.
    List {
        /// Only sessions whose title holds TEXT or whose messages hold each of its words.
        #[arg(long, value_name = "TEXT")]
        search: Option<String>,
        /// At most N top-level sessions (with their children), at most 500.
        #[arg(long, value_name = "N")]
        limit: Option<u32>,
        /// The next page: `<updated_at_ms>:<id>` of the previous page's last session.
        #[arg(long, value_name = "CURSOR")]
        before: Option<String>,
        /// Only `work` or only `coding` sessions.
        #[arg(long, value_parser = crate::cli::parse_mode)]
        mode: Option<AppMode>,
    },
    /// Give a session a title of your own (the list shows it).
    Rename { id: String, title: String },
    /// Show a session and its transcript (with tool metadata).
    Show { id: String },
    /// Continue a session: send a message (or answer its open question);
    /// without one, continue a turn that was interrupted.
    Resume {
        id: String,
        /// The message or answer.
        message: Option<String>,
        #[arg(long, value_parser = crate::cli::parse_mode)]
        mode: Option<AppMode>,
        #[arg(long = "workspace", value_name = "DIR")]
        workspaces: Vec<PathBuf>,
        #[arg(long, value_name = "PROVIDER:MODEL")]
        model: Option<String>,
    },
    /// Delete a session with its children, transcripts, workspace folder and artifacts.
    Delete { id: String },
    /// Write a session (with its children) as a scripted-provider script that `sessions replay` plays back.
    Export {
        id: String,
        /// The script file to write (YAML).
        #[arg(long = "as-script", value_name = "FILE")]
        as_script: PathBuf,
    },
    /// Replay an exported script against this build in a fresh workspace and report the first divergence (exit 0 when it matches; never calls a real model).
    Replay {
        /// A script written by `sessions export`.
        file: PathBuf,
        /// Run in DIR instead of a fresh checkout of the recorded commit (repeat for each repository; the replay's tool calls run there).
        #[arg(long = "workspace", value_name = "DIR")]
        workspaces: Vec<PathBuf>,
        /// Keep the replay's scratch directory (checkouts and store) and print where it is.
        #[arg(long)]
        keep: bool,
    },
    /// Delete sessions by age or total size (default: [storage] in config.toml), and folders no session owns.
    Prune {
        /// Delete sessions not changed for this many days (0: every session).
        #[arg(long = "older-than-days", value_name = "DAYS")]
        older_than_days: Option<u64>,
        /// Delete the least recently changed sessions until their files fit in this many MiB.
        #[arg(long = "max-total-mib", value_name = "MIB")]
        max_total_mib: Option<u64>,
    },
}

pub fn sessions(out: &Output, command: &SessionsCommand) -> anyhow::Result<Exit> {
    let rt = runtime()?;
    rt.block_on(async {
        let dirs = match super::resolve_dirs(out) {
            Ok(d) => d,
            Err(exit) => return Ok(exit),
        };
        match command {
            SessionsCommand::List {
                search,
                limit,
                before,
                mode,
            } => {
                let before = match before
                    .as_deref()
                    .map(str::parse::<evoflux_harness::ActivityCursor>)
                    .transpose()
                {
                    Ok(b) => b,
                    Err(e) => {
                        out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
                        return Ok(Exit::Invalid);
                    }
                };
                let query = evoflux_harness::SessionQuery {
                    search: search.clone(),
                    limit: *limit,
                    before,
                    mode: *mode,
                };
                let store = super::app_context(&dirs)?.open_store().await?;
                let list = SessionSummary::find(&store, &query).await?;
                out.result(&list, || {
                    if list.is_empty() {
                        return match search {
                            Some(_) => "no session matches\n".into(),
                            None => "no sessions yet; start one with `evoflux run \"task\"`\n".into(),
                        };
                    }
                    list.iter().map(|s| format!("{}\n", list_row(s, &list))).collect()
                });
                Ok(Exit::Ok)
            }
            SessionsCommand::Rename { id, title } => {
                let id = match session_id_arg(out, id) {
                    Ok(id) => id,
                    Err(exit) => return Ok(exit),
                };
                let store = super::app_context(&dirs)?.open_store().await?;
                let session = match store.rename_session(id, title).await {
                    Ok(s) => s,
                    Err(e @ StoreError::SessionNotFound(_)) => {
                        return Ok(session_not_found(out, &e));
                    }
                    Err(e @ StoreError::TitleEmpty) => {
                        out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
                        return Ok(Exit::Invalid);
                    }
                    Err(e) => return Err(e.into()),
                };
                out.result(&session, || {
                    format!(
                        "renamed {} to “{}”\n",
                        session.id,
                        session.title.as_deref().unwrap_or_default()
                    )
                });
                Ok(Exit::Ok)
            }
            SessionsCommand::Export { id, as_script } => {
                let id = match session_id_arg(out, id) {
                    Ok(id) => id,
                    Err(exit) => return Ok(exit),
                };
                super::replay::export(out, &dirs, id, as_script).await
            }
            SessionsCommand::Replay {
                file,
                workspaces,
                keep,
            } => super::replay::replay(out, &dirs, file, workspaces, *keep).await,
            SessionsCommand::Delete { id } => {
                let id = match session_id_arg(out, id) {
                    Ok(id) => id,
                    Err(exit) => return Ok(exit),
                };
                let store = super::app_context(&dirs)?.open_store().await?;
                let deleted = match store.delete_session(id).await {
                    Ok(d) => d,
                    Err(e @ StoreError::SessionNotFound(_)) => {
                        return Ok(session_not_found(out, &e));
                    }
                    Err(e) => return Err(e.into()),
                };
                let ids: Vec<String> = deleted.iter().map(ToString::to_string).collect();
                out.result(&serde_json::json!({ "deleted": ids }), || {
                    format!("deleted {}\n", ids.join(", "))
                });
                Ok(Exit::Ok)
            }
            SessionsCommand::Prune {
                older_than_days,
                max_total_mib,
            } => {
                // Given limits replace the configured policy as a whole.
                let policy = match (older_than_days, max_total_mib) {
                    (None, None) => match super::app_context(&dirs)?.retention() {
                        Ok(policy) => policy,
                        Err(evoflux_app::SessionError::Config { diagnostics }) => {
                            out.diagnostics(&diagnostics);
                            return Ok(Exit::Invalid);
                        }
                        Err(e) => return Err(e.into()),
                    },
                    // The flags say what [storage] would; one conversion.
                    (age, size) => Retention::from(
                        evoflux_core::config::StorageConfig {
                            max_age_days: *age,
                            max_total_mib: *size,
                        },
                    ),
                };
                let store = super::app_context(&dirs)?.open_store().await?;
                let pruned = store.prune(&policy).await?;
                let ids: Vec<String> = pruned.deleted.iter().map(ToString::to_string).collect();
                let folders: Vec<String> =
                    pruned.orphans.iter().map(|p| p.display().to_string()).collect();
                let kept_all = policy == Retention::default();
                out.result(
                    &serde_json::json!({
                        "deleted": ids,
                        "orphan_folders_removed": folders,
                        "bytes_freed": pruned.bytes_freed,
                    }),
                    || {
                        let mut text = format!(
                            "deleted {} session(s) and {} folder(s) no session owned, {} bytes freed\n",
                            ids.len(),
                            folders.len(),
                            pruned.bytes_freed
                        );
                        if kept_all {
                            text.push_str(
                                "no retention is set: give --older-than-days or --max-total-mib, \
                                 or set [storage] max_age_days / max_total_mib in config.toml\n",
                            );
                        }
                        text
                    },
                );
                Ok(Exit::Ok)
            }
            SessionsCommand::Show { id } => {
                let id = match session_id_arg(out, id) {
                    Ok(id) => id,
                    Err(exit) => return Ok(exit),
                };
                let store = super::app_context(&dirs)?.open_store().await?;
                let record = match SessionRecord::load(&store, id).await {
                    Ok(r) => r,
                    Err(e @ StoreError::SessionNotFound(_)) => {
                        return Ok(session_not_found(out, &e));
                    }
                    Err(e) => return Err(e.into()),
                };
                out.result(&record, || {
                    let mut text = render_transcript(
                        &record.session,
                        &record.transcript,
                        &record.pending_inputs,
                    );
                    // The dispatch tree, each session indented under the
                    // one that dispatched it.
                    for entry in &record.tree {
                        let child = &entry.session;
                        let call = child.parent.as_ref().map_or("", |p| p.call_id.as_str());
                        text.push_str(&format!(
                            "{}↳ child {} · {} (call {call}): evoflux sessions show {}\n",
                            "  ".repeat(usize::try_from(entry.depth).unwrap_or(1)),
                            child.id,
                            child.lead.as_deref().unwrap_or("?"),
                            child.id
                        ));
                    }
                    text.push_str(&format!("usage: {}\n", usage_line(&record.usage)));
                    if !record.children.is_empty() {
                        text.push_str(&format!(
                            "with its children: {}\n",
                            usage_line(&record.usage_with_children)
                        ));
                    }
                    text
                });
                Ok(Exit::Ok)
            }
            SessionsCommand::Resume {
                id,
                message,
                mode,
                workspaces,
                model,
            } => {
                let args = SessionArgs {
                    mode: *mode,
                    sources: SourceArgs {
                        workspaces: workspaces.clone(),
                    },
                    lead: None,
                    model: model.clone(),
                    session: Some(id.clone()),
                    max_model_calls: Limits::default().model_calls_per_turn,
                };
                let wiring = non_interactive(event_sink(out));
                let processes = process_runtime(out)?;
                let (harness, lease) = match open(
                    out,
                    &args,
                    wiring.events(),
                    wiring.approver(),
                    &processes,
                    OpenLease::Take("evoflux sessions resume"),
                )
                .await?
                {
                    Ok(opened) => opened,
                    Err(exit) => return Ok(exit),
                };
                one_turn(
                    out,
                    (harness, wiring),
                    &args,
                    lease,
                    &processes,
                    message.as_deref(),
                    TurnOptions::default(),
                )
                .await
            }
        }
    })
}

/// A tool call's line: `text`, then the notes of the media its result
/// carries (`[image: shot-1.png, image/png, 12 KB]`), with a space between
/// when both are there.
pub(crate) fn with_media_notes<'a>(
    text: String,
    described: impl IntoIterator<Item = &'a str>,
) -> String {
    let notes = evoflux_protocol::message::media_notes_inline(described);
    [text, notes]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Model calls, tokens as providers price them, and cost, on one line.
pub(crate) fn usage_line(u: &Usage) -> String {
    format!(
        "{} model calls · {} input tokens ({} read from the provider's cache, {} written to it) \
         · {} output tokens · cost {}{}",
        u.requests,
        u.input_tokens,
        u.cache_read_tokens,
        u.cache_write_tokens,
        u.output_tokens,
        u.cost_label(),
        match u.unpriced_requests {
            0 => String::new(),
            n =>
                format!(" ({n} calls on a model with no known price: set [prices] in config.toml)"),
        }
    )
}

/// A session's workspace roots, as a listing shows them.
pub(crate) fn roots_label(session: &evoflux_harness::Session) -> String {
    session
        .workspace
        .roots()
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// One session as a listing shows it: id, mode, lead, what it cost with
/// its children, workspace roots.
pub(crate) fn session_row(summary: &SessionSummary) -> String {
    let s = &summary.session;
    let row = format!(
        "{}  {:<6}  {:<10}  {:>10}  {}",
        s.id,
        s.mode().as_str(),
        s.lead.as_deref().unwrap_or("-"),
        summary.usage_with_children.cost_label(),
        roots_label(s)
    );
    match &s.title {
        Some(title) => format!("{row}  “{title}”"),
        None => row,
    }
}

/// A row of `sessions list`: a session listed under its parent is
/// indented one step per generation.
fn list_row(summary: &SessionSummary, list: &[SessionSummary]) -> String {
    let mut depth = 0;
    let mut at = summary.session.parent.as_ref().map(|p| p.session_id);
    while let Some(parent) = at {
        let Some(row) = list.iter().find(|r| r.session.id == parent) else {
            break;
        };
        depth += 1;
        if depth > list.len() {
            break;
        }
        at = row.session.parent.as_ref().map(|p| p.session_id);
    }
    format!("{}{}", "  ".repeat(depth), session_row(summary))
}

/// The session id a `sessions` subcommand names, or the exit that says it
/// is not one.
pub(crate) fn session_id_arg(out: &Output, id: &str) -> Result<SessionId, Exit> {
    id.parse::<SessionId>().map_err(|_| {
        out.failure(&anyhow::anyhow!(
            "`{id}` is not a session id; {LIST_SESSIONS}"
        ));
        Exit::Invalid
    })
}

/// A `sessions` subcommand named a session the store does not have.
pub(crate) fn session_not_found(out: &Output, e: &StoreError) -> Exit {
    out.failure(&anyhow::anyhow!("{e} [{}]; {LIST_SESSIONS}", e.code()));
    Exit::Invalid
}

/// How to find a session's id.
pub(crate) const LIST_SESSIONS: &str = "list sessions with `evoflux sessions list`";

fn render_transcript(
    session: &Session,
    transcript: &[TranscriptEntry],
    pending: &[PendingInput],
) -> String {
    let mut out = format!(
        "session {} · {} · lead {} · {}\n",
        session.id,
        session.mode(),
        session.lead.as_deref().unwrap_or("-"),
        session
            .workspace
            .roots()
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for e in transcript {
        match &e.message {
            Message::System { content } => out.push_str(&format!("[system] {content}\n")),
            Message::User { content, media } => out.push_str(&format!(
                "\nuser: {}\n",
                evoflux_protocol::message::text_with_media_notes(content, media)
            )),
            Message::Assistant {
                content,
                tool_calls,
                provider_items,
            } => {
                // What the provider searched comes before the answer it
                // informed; the pages it cites after.
                let mut cited = Vec::new();
                for item in provider_items {
                    match item {
                        ProviderItem::WebSearch(search) => {
                            out.push_str(&format!("{}\n", web_search_line(search)));
                        }
                        ProviderItem::Citation(c) => cite_once(&mut cited, c),
                        // What the next request carries back; nothing to read.
                        ProviderItem::Reasoning { .. } | ProviderItem::AnthropicBlock { .. } => {}
                    }
                }
                if !content.is_empty() {
                    out.push_str(&format!("\nassistant: {content}\n"));
                }
                for (i, c) in cited.iter().enumerate() {
                    out.push_str(&format!("  [{}] {}\n", i + 1, citation_line(c)));
                }
                for c in tool_calls {
                    out.push_str(&format!(
                        "→ {} {}\n",
                        c.name,
                        clip(&c.arguments.to_string(), 160)
                    ));
                }
            }
            Message::Tool {
                content,
                is_error,
                media,
                ..
            } => {
                let mark = if *is_error { "✗" } else { "✓" };
                // The call's images are named on its line: a terminal
                // cannot show them, and its reader should know they exist.
                let described: Vec<String> = media.iter().map(|m| m.describe()).collect();
                let first = clip(content.lines().next().unwrap_or_default(), 160);
                out.push_str(&format!(
                    "  {mark} {}\n",
                    with_media_notes(first, described.iter().map(String::as_str))
                ));
                if let Some(meta) = &e.artifact {
                    out.push_str(&format!("    {meta}\n"));
                }
            }
        }
    }
    for p in pending {
        out.push_str(&format!(
            "\nwaiting for an answer: {}\n",
            p.request.question
        ));
    }
    out
}
