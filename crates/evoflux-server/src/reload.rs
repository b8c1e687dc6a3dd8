//! Live reload. The server watches the source roots (the admin and user
//! config folders, each workspace's `.evoflux/`) and compiles the graph
//! again when a file changes. A graph that compiles replaces the router
//! (its routes are the new route plan) and every live session hears a
//! `graph_reloaded` event; sessions compile at their next open. A graph
//! with errors keeps the old router, and sessions hear `graph_invalid`
//! with the diagnostics (which `/api/info` shows too, as it compiles).

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use notify::{RecursiveMode, Watcher};
use serde_json::json;
use tower::ServiceExt;

use evoflux_harness::Event;

use crate::auth::Token;
use crate::state::ServerState;

/// The server's notice that the sources were compiled again.
const GRAPH_RELOADED: &str = "graph_reloaded";

/// How long a burst of file events is gathered before one recompile.
const SETTLE: Duration = Duration::from_millis(200);

/// The router of the current graph.
#[derive(Debug)]
pub struct CurrentRouter {
    router: RwLock<Router>,
    hash: RwLock<String>,
}

impl CurrentRouter {
    pub fn new(router: Router, hash: String) -> Arc<CurrentRouter> {
        Arc::new(CurrentRouter {
            router: RwLock::new(router),
            hash: RwLock::new(hash),
        })
    }

    /// A router that sends every request to the current one.
    pub fn service(self: &Arc<Self>) -> Router {
        let current = Arc::clone(self);
        Router::new().fallback(move |request: Request| {
            let router = current
                .router
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            async move {
                match router.oneshot(request).await {
                    Ok(response) => response,
                    Err(never) => match never {},
                }
                .into_response()
            }
        })
    }
}

/// The folders whose files are sources: the harness's one list.
fn roots(state: &ServerState) -> Vec<(PathBuf, RecursiveMode)> {
    state
        .sessions
        .app()
        .source_roots(&state.workspaces)
        .into_iter()
        .map(|r| {
            let mode = match r.recursive {
                true => RecursiveMode::Recursive,
                false => RecursiveMode::NonRecursive,
            };
            (r.path, mode)
        })
        .collect()
}

/// Starts watching, and recompiling on [`ServerState::reload`]; the
/// watcher lives as long as the returned value.
pub fn watch(
    state: Arc<ServerState>,
    token: Token,
    current: Arc<CurrentRouter>,
) -> Option<notify::RecommendedWatcher> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let watcher = match notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok() {
            let _ = tx.send(());
        }
    }) {
        Ok(mut w) => {
            for (dir, mode) in roots(&state) {
                if let Err(e) = w.watch(&dir, mode) {
                    tracing::warn!("cannot watch {}: {e}", dir.display());
                }
            }
            Some(w)
        }
        Err(e) => {
            tracing::warn!("live reload of files is off: cannot watch the sources: {e}");
            None
        }
    };
    tokio::spawn(async move {
        let mut files = true;
        loop {
            // A change through the API counts as a changed source even when
            // the graph's hash stays (a credential, a preference).
            let api = tokio::select! {
                event = rx.recv(), if files => match event {
                    Some(()) => false,
                    None => { files = false; continue; }
                },
                () = state.reload.notified() => true,
            };
            tokio::time::sleep(SETTLE).await;
            while rx.try_recv().is_ok() {}
            let s = Arc::clone(&state);
            let compiled =
                tokio::task::spawn_blocking(move || s.sessions.app().compile(&s.workspaces)).await;
            let graph = match compiled {
                Ok(Ok(g)) => g,
                Ok(Err(e)) => {
                    state.sessions.broadcast(&Event::GraphInvalid {
                        code: e.code().to_owned(),
                        message: e.to_string(),
                        diagnostics: Vec::new(),
                    });
                    continue;
                }
                Err(_) => continue,
            };
            if graph.has_errors() {
                let errors = graph.diagnostics.errors();
                state.sessions.broadcast(&Event::GraphInvalid {
                    code: "server/graph-invalid".to_owned(),
                    message: "the changed sources do not compile; the server keeps its routes and \
                              sessions keep their sources"
                        .to_owned(),
                    diagnostics: errors.iter().cloned().collect(),
                });
                continue;
            }
            let hash = graph.hash.to_string();
            let changed = *current.hash.read().unwrap_or_else(|p| p.into_inner()) != hash;
            if !changed {
                continue;
            }
            if !api {
                state.sessions.sources_changed();
            }
            let router = crate::router::build(&graph.route_plan, Arc::clone(&state), token.clone());
            *current.router.write().unwrap_or_else(|p| p.into_inner()) = router;
            *current.hash.write().unwrap_or_else(|p| p.into_inner()) = hash.clone();
            state.sessions.broadcast_notice(
                GRAPH_RELOADED,
                &json!({"type": GRAPH_RELOADED, "graph_hash": hash}),
            );
        }
    });
    watcher
}
