//! `evoflux serve`: the HTTP API, thin over `evoflux-server`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use clap::Args;
use evoflux_server::{ServeOptions, Token, TokenOrigin};

use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The address or host name to listen on (a name, such as localhost, is resolved when
    /// the server starts, IPv4 first); an address other than loopback needs
    /// EVOFLUX_SERVER_TOKEN (32 characters or more).
    #[arg(long, default_value_t = BindHost::Ip(IpAddr::V4(Ipv4Addr::LOCALHOST)), value_parser = parse_host)]
    pub host: BindHost,
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
    /// Seconds a live session may sit idle (no turn running, nothing waiting on it) before
    /// it is released from memory; its next message opens it again from the store.
    #[arg(long, default_value_t = evoflux_server::IDLE_RELEASE.as_secs(), value_parser = clap::value_parser!(u64).range(1..=604800))]
    pub idle_release_secs: u64,
}

/// What `--host` names: an address, or a host name to resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BindHost {
    Ip(IpAddr),
    Name(String),
}

impl std::fmt::Display for BindHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BindHost::Ip(ip) => ip.fmt(f),
            BindHost::Name(name) => f.write_str(name),
        }
    }
}

/// An IP address (`[::1]` as well as `::1`), or a host name: letters,
/// digits, `-` and `.` (what a resolver can look up).
fn parse_host(s: &str) -> Result<BindHost, String> {
    let bare = s
        .strip_prefix('[')
        .and_then(|v| v.strip_suffix(']'))
        .unwrap_or(s);
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Ok(BindHost::Ip(ip));
    }
    let name = s.strip_suffix('.').unwrap_or(s);
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    if name.len() <= 253 && name.split('.').all(label_ok) {
        Ok(BindHost::Name(name.to_ascii_lowercase()))
    } else {
        Err(format!(
            "`{s}` is neither an IP address nor a host name (letters, digits, `-` and `.`)"
        ))
    }
}

/// The address `host` names: an address as it is; a name resolved by the
/// system (`/etc/hosts`, then DNS), its first IPv4 address or else its
/// first address. The server's rules for that address then apply as if
/// it had been given: a loopback one is served as it is, another needs
/// a token.
fn resolve_host(host: &BindHost, port: u16) -> Result<IpAddr, String> {
    let name = match host {
        BindHost::Ip(ip) => return Ok(*ip),
        BindHost::Name(name) => name,
    };
    let addrs: Vec<IpAddr> = std::net::ToSocketAddrs::to_socket_addrs(&(name.as_str(), port))
        .map_err(|e| format!("--host {name}: the name does not resolve: {e}"))?
        .map(|a| a.ip())
        .collect();
    addrs
        .iter()
        .find(|ip| ip.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| format!("--host {name}: the name resolves to no address"))
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
    let ip = match resolve_host(&args.host, args.port) {
        Ok(ip) => ip,
        Err(message) => {
            out.failure(&anyhow::anyhow!("{message} [server/host-unresolved]"));
            return Ok(Exit::Invalid);
        }
    };
    let origin = token.origin.clone();
    // The web UI's address with the token in its fragment (never sent to
    // a server): shown only to a person at a terminal, never into a log.
    let ui_link =
        std::io::IsTerminal::is_terminal(&std::io::stdout()).then(|| token.secret().to_owned());
    let mut options = ServeOptions::new(
        SocketAddr::new(ip, args.port),
        workspaces,
        token,
        std::env::vars().collect(),
    );
    options.lease_ttl = std::time::Duration::from_secs(args.lease_secs);
    options.allowed_hosts = args.allowed_hosts.clone();
    // The name the server was told to listen as is one requests may name
    // (`localhost` already is, on loopback).
    if let BindHost::Name(name) = &args.host
        && name != "localhost"
    {
        options.allowed_hosts.push(name.clone());
    }
    options.max_connections = args
        .max_connections
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    options.max_connections_per_address = args
        .max_connections_per_address
        .map(|n| usize::try_from(n).unwrap_or(usize::MAX));
    options.header_timeout = std::time::Duration::from_secs(args.header_timeout_secs);
    options.idle_timeout = std::time::Duration::from_secs(args.idle_timeout_secs);
    options.idle_release = std::time::Duration::from_secs(args.idle_release_secs);
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
        crate::frontend::signals::shutdown_signal(),
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
