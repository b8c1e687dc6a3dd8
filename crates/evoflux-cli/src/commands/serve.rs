//! `evoflux serve`: the HTTP API, thin over `evoflux-server`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use evoflux_server::{ServeOptions, Token, TokenOrigin};

use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address to listen on; another than loopback needs EVOFLUX_SERVER_TOKEN (32
    /// characters or more).
    #[arg(long, default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub host: IpAddr,
    /// The port (0: any free port; the address is printed).
    #[arg(long, default_value_t = 4747)]
    pub port: u16,
    /// A repository Coding sessions may work in (repeatable; default: the current directory).
    #[arg(long = "workspace", value_name = "DIR")]
    pub workspaces: Vec<PathBuf>,
    /// Print the bearer token requests need, and exit.
    #[arg(long)]
    pub print_token: bool,
    /// Seconds this server's hold on a running turn lasts without renewal: with several
    /// servers on one PostgreSQL database, how soon another finishes the turn of one that
    /// died (renewed every third of it).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub lease_secs: u64,
    /// A host name requests may name besides localhost and the listening address
    /// (repeatable; `NAME` or `NAME:PORT`): others are refused, against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// Connections served at once; past it one is answered 503 (default: what the open-file
    /// limit, RLIMIT_NOFILE, leaves after a headroom).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: Option<u64>,
    /// Connections one client address (an IPv6 one by its /64) may hold; past it one from
    /// that address is answered 503 (default: a quarter of --max-connections, at least 16).
    /// Behind a reverse proxy every client has the proxy's address: raise it there.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections_per_address: Option<u64>,
    /// Seconds a request's headers may take, from the connection's opening or its previous
    /// response (also how long an idle keep-alive connection stays open).
    #[arg(long, default_value_t = evoflux_server::HEADER_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub header_timeout_secs: u64,
    /// Seconds a connection may pass with no request being handled and no request or
    /// response data moving (HTTP/2 pings do not count).
    #[arg(long, default_value_t = evoflux_server::IDLE_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..=86400))]
    pub idle_timeout_secs: u64,
}

pub fn run(out: &Output, args: &ServeArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let token = match Token::resolve(
        std::env::var(evoflux_server::TOKEN_ENV).ok(),
        dirs.data_dir(),
    ) {
        Ok(t) => t,
        Err(e) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            return Ok(Exit::Failure);
        }
    };
    if args.print_token {
        println!("{}", token.secret());
        return Ok(Exit::Ok);
    }
    let app = super::app_context(&dirs)?;
    let dirs_given = if args.workspaces.is_empty() {
        vec![app.cwd.clone()]
    } else {
        args.workspaces.clone()
    };
    let mut workspaces = Vec::with_capacity(dirs_given.len());
    for w in &dirs_given {
        match std::fs::canonicalize(w) {
            Ok(real) if real.is_dir() => {
                workspaces.push(evoflux_core::trust::repository_root(&real));
            }
            Ok(_) | Err(_) => {
                out.failure(&anyhow::anyhow!(
                    "--workspace {}: not a directory [server/workspace-invalid]",
                    w.display()
                ));
                return Ok(Exit::Invalid);
            }
        }
    }
    let origin = token.origin.clone();
    // The web UI's address with the token in its fragment (never sent to
    // a server): shown only to a person at a terminal, never into a log.
    let ui_link =
        std::io::IsTerminal::is_terminal(&std::io::stdout()).then(|| token.secret().to_owned());
    let mut options = ServeOptions::new(
        SocketAddr::new(args.host, args.port),
        workspaces,
        token,
        std::env::vars().collect(),
    );
    options.lease_ttl = std::time::Duration::from_secs(args.lease_secs);
    options.allowed_hosts = args.allowed_hosts.clone();
    options.max_connections = args
        .max_connections
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    options.max_connections_per_address = args
        .max_connections_per_address
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    options.header_timeout = std::time::Duration::from_secs(args.header_timeout_secs);
    options.idle_timeout = std::time::Duration::from_secs(args.idle_timeout_secs);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let json = out.json;
    let result = rt.block_on(evoflux_server::serve(
        app,
        options,
        move |addr| {
            let token_note = match &origin {
                TokenOrigin::Environment => "token from EVOFLUX_SERVER_TOKEN".to_owned(),
                TokenOrigin::File(p) | TokenOrigin::Generated(p) => {
                    format!("token in {} (evoflux serve --print-token)", p.display())
                }
            };
            if json {
                println!(
                    "{}",
                    serde_json::json!({"type": "listening", "url": format!("http://{addr}")})
                );
            } else {
                println!("evoflux serve: listening on http://{addr} ({token_note})");
                if let Some(secret) = &ui_link {
                    println!("web UI: http://{addr}/#token={secret}");
                }
            }
        },
        super::run::shutdown_signal(),
    ));
    match result {
        Ok(()) => Ok(Exit::Ok),
        Err(e) => {
            if let evoflux_server::ServerError::Graph { diagnostics } = &e {
                out.diagnostics(diagnostics);
            }
            // The library names its options; the flags are the CLI's.
            let message = match &e {
                evoflux_server::ServerError::AllowedHost(invalid) => format!(
                    "--allowed-host {:?} is not a host name (NAME or NAME:PORT)",
                    invalid.value
                ),
                _ => e.to_string(),
            };
            out.failure(&anyhow::anyhow!("{message} [{}]", e.code()));
            Ok(Exit::Failure)
        }
    }
}
