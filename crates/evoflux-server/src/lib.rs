//! `evoflux serve`: the HTTP API of evoflux.
//!
//! The router is the compiled route plan ([`router`]): the framework `api`
//! channel's endpoints, the `home` page, user channels that start a
//! session per request, derived CORS preflights and the closed host
//! inventory. Sessions run on the harness's session engine ([`live`]);
//! handlers are thin. Every route but health, readiness, the OpenAPI
//! document and the home page needs the bearer token ([`auth`]); every
//! request must name a host the server answers for ([`host`]); the accept
//! loop bounds connections and their timeouts ([`conn`]).

mod api;
pub mod auth;
mod channels;
pub mod conn;
mod error;
pub mod events;
pub mod host;
pub mod live;
mod openapi;
pub mod preview;
mod reload;
pub mod router;
mod schedules;
mod state;
mod ui;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use evoflux_app::{AppContext, SessionError};
use evoflux_harness::{ProcessRuntime, StoreError};

// The app context every unit test starts from (`crate::testing::setup`):
// the application's test application, which the integration tests start
// from too.
#[cfg(test)]
use evoflux_app::testing;

pub use auth::{PUBLIC_TOKEN_MIN_CHARS, TOKEN_ENV, TOKEN_FILE, Token, TokenError, TokenOrigin};
pub use conn::{
    HEADER_TIMEOUT, IDLE_TIMEOUT, SHUTDOWN_TIMEOUT, TOO_MANY_CONNECTIONS,
    TOO_MANY_CONNECTIONS_FROM_ADDRESS, default_max_connections,
    default_max_connections_per_address,
};
pub use error::ApiError;
pub use host::HOST_NOT_ALLOWED;
pub use live::IDLE_RELEASE;
pub use openapi::document as openapi_document;
pub use router::{MountedRoute, mounted};
pub use schedules::TICK as SCHEDULE_TICK;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub addr: SocketAddr,
    /// The repositories served (canonical): Coding sessions work in them
    /// and the graph is compiled with their project sources.
    pub workspaces: Vec<PathBuf>,
    pub token: Token,
    /// The environment the server runs in: channel routes read the secrets
    /// their auth names here, never from the process.
    pub environment: std::collections::BTreeMap<String, String>,
    /// The scheduler's clock and how often it looks for due schedules
    /// ([`ServeOptions::new`] sets the real clock and [`SCHEDULE_TICK`]).
    pub schedule_clock: Arc<dyn evoflux_app::scheduler::Now>,
    pub schedule_tick: std::time::Duration,
    /// How long this replica's hold on a running turn lasts unrenewed
    /// ([`live::LEASE_TTL`] by default): how soon another replica on the
    /// same database finishes a turn this one was running when it died.
    pub lease_ttl: std::time::Duration,
    /// How long a live session may sit idle (no turn, no request) before
    /// its harness and MCP servers are released from memory
    /// ([`live::IDLE_RELEASE`] by default); its next request opens it
    /// again from the store.
    pub idle_release: std::time::Duration,
    /// How many connections are served at once; past it a connection is
    /// answered `503` (`server/too-many-connections`). `None`: what
    /// `RLIMIT_NOFILE` allows ([`default_max_connections`]).
    pub max_connections: Option<usize>,
    /// How many of them one client address (an IPv6 one by its `/64`) may
    /// hold; past it a connection from that address is answered `503`
    /// (`server/too-many-connections-from-address`). Behind a reverse
    /// proxy every client has the proxy's address: raise it to the
    /// connection limit there. `None`: a quarter of the connection limit,
    /// at least 16 ([`default_max_connections_per_address`]).
    pub max_connections_per_address: Option<usize>,
    /// How long a request's headers may take to arrive, counted from the
    /// connection's opening or its previous response ([`HEADER_TIMEOUT`]).
    pub header_timeout: std::time::Duration,
    /// How long a connection may pass with no request at work and no
    /// request or response data moving ([`IDLE_TIMEOUT`]); other traffic
    /// (HTTP/2 pings) does not count.
    pub idle_timeout: std::time::Duration,
    /// How long shutdown waits for open connections to finish their
    /// requests ([`SHUTDOWN_TIMEOUT`]); then those left (event streams)
    /// are dropped.
    pub shutdown_timeout: std::time::Duration,
    /// Host names requests may name besides the built-in ones
    /// (`NAME` or `NAME:PORT`; see [`host`]).
    pub allowed_hosts: Vec<String>,
}

impl ServeOptions {
    /// Options with the real scheduler clock and tick.
    pub fn new(
        addr: SocketAddr,
        workspaces: Vec<PathBuf>,
        token: Token,
        environment: std::collections::BTreeMap<String, String>,
    ) -> ServeOptions {
        ServeOptions {
            addr,
            workspaces,
            token,
            environment,
            schedule_clock: Arc::new(evoflux_app::scheduler::SystemNow),
            schedule_tick: schedules::TICK,
            lease_ttl: live::LEASE_TTL,
            idle_release: live::IDLE_RELEASE,
            max_connections: None,
            max_connections_per_address: None,
            header_timeout: HEADER_TIMEOUT,
            idle_timeout: IDLE_TIMEOUT,
            shutdown_timeout: SHUTDOWN_TIMEOUT,
            allowed_hosts: Vec::new(),
        }
    }
}

/// Why the server cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{addr} is not a loopback address: serving it needs a token you chose, in {TOKEN_ENV}")]
    PublicWithoutToken { addr: SocketAddr },
    #[error(
        "{TOKEN_ENV} has {chars} characters: serving {addr}, not a loopback address, needs at \
         least {min} (`openssl rand -hex 32` makes one)"
    )]
    TokenTooShort {
        addr: SocketAddr,
        chars: usize,
        min: usize,
    },
    #[error(transparent)]
    AllowedHost(#[from] host::AllowedHostError),
    #[error("the sources do not compile; `evoflux info` lists the errors")]
    Graph {
        diagnostics: evoflux_core::Diagnostics,
    },
    #[error(transparent)]
    Session(#[from] SessionError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
}

impl ServerError {
    pub fn code(&self) -> &'static str {
        match self {
            ServerError::PublicWithoutToken { .. } => "server/public-without-token",
            ServerError::TokenTooShort { .. } => "server/token-too-short",
            ServerError::AllowedHost(_) => "server/allowed-host-invalid",
            ServerError::Graph { .. } => "server/graph-invalid",
            ServerError::Session(e) => e.code(),
            ServerError::Store(e) => e.code(),
            ServerError::Bind { .. } => "server/bind-failed",
        }
    }
}

/// Serves until `shutdown` resolves, then lets open connections finish
/// their requests (for at most [`ServeOptions::shutdown_timeout`]) and
/// stops every session (their commands and MCP servers) before returning.
/// `listening` is called with the bound address once requests are
/// accepted.
pub async fn serve(
    app: AppContext,
    options: ServeOptions,
    listening: impl FnOnce(SocketAddr),
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    if !options.addr.ip().is_loopback() && options.token.origin != TokenOrigin::Environment {
        return Err(ServerError::PublicWithoutToken { addr: options.addr });
    }
    if !options.addr.ip().is_loopback() {
        let chars = options.token.secret().chars().count();
        if chars < PUBLIC_TOKEN_MIN_CHARS {
            return Err(ServerError::TokenTooShort {
                addr: options.addr,
                chars,
                min: PUBLIC_TOKEN_MIN_CHARS,
            });
        }
    }
    let hosts = Arc::new(host::HostPolicy::new(
        options.addr.ip(),
        &options.allowed_hosts,
    )?);
    let max_connections = options
        .max_connections
        .unwrap_or_else(default_max_connections);
    let limits = conn::Limits {
        max_connections,
        max_connections_per_address: options
            .max_connections_per_address
            .unwrap_or_else(|| default_max_connections_per_address(max_connections)),
        header_timeout: options.header_timeout,
        idle_timeout: options.idle_timeout,
        shutdown_timeout: options.shutdown_timeout,
    };
    let graph = app.compile(&options.workspaces)?;
    if graph.has_errors() {
        return Err(ServerError::Graph {
            diagnostics: graph.diagnostics.errors(),
        });
    }
    let store = app.open_store().await?;
    let processes = ProcessRuntime::new(app.runtime_config());
    let scheduler = schedules::scheduler(
        &app,
        &store,
        processes.clone(),
        Arc::clone(&options.schedule_clock),
    );
    let viewer = evoflux_viewer::Viewer::new(
        evoflux_viewer::ViewLimits::DEFAULT,
        Some(evoflux_viewer::Cache::new(
            app.dirs.cache_dir().join("viewer"),
        )),
    );
    let state = Arc::new(state::ServerState {
        scheduler,
        sessions: live::Sessions::new(
            Arc::new(app),
            processes.clone(),
            store.clone(),
            live::Replica::new(options.lease_ttl),
        ),
        store,
        workspaces: options.workspaces.clone(),
        mcp: tokio::sync::Mutex::new(None),
        mcp_logins: evoflux_app::mcp_servers::OAuthLogins::new(),
        reload: tokio::sync::Notify::new(),
        environment: options.environment.clone(),
        viewer,
        viewer_slots: tokio::sync::Semaphore::new(2),
        previews: preview::PreviewKeys::default(),
    });
    let router = router::build(&graph.route_plan, Arc::clone(&state), options.token.clone());
    let current = reload::CurrentRouter::new(router, graph.hash.to_string());
    let _watcher = reload::watch(
        Arc::clone(&state),
        options.token.clone(),
        Arc::clone(&current),
    );
    let scheduler = schedules::start(Arc::clone(&state), options.schedule_tick);
    let listener_task = tokio::spawn(events::listen(
        state.store.clone(),
        Arc::clone(state.sessions.bus()),
    ));
    let sweeper = {
        let state = Arc::clone(&state);
        let every = (options.lease_ttl / 2).min(options.idle_release);
        let idle = options.idle_release;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                state.sessions.finish_orphaned_turns().await;
                state.sessions.release_idle(idle).await;
            }
        })
    };
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|source| ServerError::Bind {
            addr: options.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| ServerError::Bind {
        addr: options.addr,
        source,
    })?;
    listening(addr);
    conn::run(listener, current.service(), hosts, limits, shutdown).await;
    scheduler.abort();
    sweeper.abort();
    listener_task.abort();
    state.sessions.stop_all().await;
    if let Some(mcp) = state.mcp.lock().await.take() {
        mcp.shutdown().await;
    }
    Ok(())
}
