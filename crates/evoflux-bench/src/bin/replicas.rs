//! `replicas`: throughput and cross-replica event latency of `evoflux
//! serve` on one database.
//!
//! Starts `--replicas` servers (scripted model, instant replies) on the
//! database `--database` names (`sqlite`: one data directory's file, or a
//! `postgres://` URL), then drives `--sessions` sessions at once, each
//! `--turns` turns in a row, spread over the servers: a turn is a message
//! posted to one server and its `turn_completed` read from that server's
//! stream. Prints turns per second. With two or more servers it also
//! follows a few sessions on the server that runs their turns and on
//! another at once, and prints how much later each event reaches the other
//! (median, p99). Asserts nothing; a failed request stops it.
//!
//!   cargo build --release -p evoflux-cli -p evoflux-bench
//!   target/release/replicas --database postgres://… --replicas 2

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Parser;
use futures_util::StreamExt;
use serde_json::{Value, json};

#[derive(Debug, Parser)]
#[command(name = "replicas")]
struct Args {
    /// The evoflux binary (default: `evoflux` next to this binary).
    #[arg(long)]
    evoflux: Option<PathBuf>,
    /// `sqlite`, or the PostgreSQL URL of an empty database.
    #[arg(long, default_value = "sqlite")]
    database: String,
    #[arg(long, default_value_t = 1)]
    replicas: usize,
    #[arg(long, default_value_t = 64)]
    sessions: usize,
    #[arg(long, default_value_t = 5)]
    turns: usize,
    /// Sessions whose events are timed on two servers at once.
    #[arg(long, default_value_t = 8)]
    latency_sessions: usize,
}

struct Server {
    child: Child,
    url: String,
    token: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(bin: &Path, work: &Path, database: &str) -> Command {
    let mut c = Command::new(bin);
    c.env_clear()
        .env("HOME", work.join("home"))
        .env("EVOFLUX_ADMIN_DIR", work.join("admin"))
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .current_dir(work.join("repo"));
    if database != "sqlite" {
        c.env("EVOFLUX_DATABASE_URL", database);
    }
    c
}

fn start(bin: &Path, work: &Path, database: &str) -> Result<Server> {
    use std::io::BufRead;
    let mut child = command(bin, work, database)
        .args(["serve", "--port", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("start evoflux serve")?;
    let mut line = String::new();
    let stdout = child.stdout.take().context("no stdout")?;
    std::io::BufReader::new(stdout).read_line(&mut line)?;
    let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) else {
        bail!("no address in {line:?}");
    };
    let token = command(bin, work, database)
        .args(["serve", "--print-token"])
        .output()?;
    Ok(Server {
        url: url.to_owned(),
        token: String::from_utf8(token.stdout)?.trim().to_owned(),
        child,
    })
}

/// Reads `session`'s stream on `server` from event `after` until `until`
/// turns completed; returns each event's id and when it arrived.
async fn follow(
    http: &reqwest::Client,
    server: &Server,
    session: &str,
    after: u64,
    until: usize,
) -> Result<Vec<(u64, Instant)>> {
    let response = http
        .get(format!("{}/api/sessions/{session}/events", server.url))
        .bearer_auth(&server.token)
        .header("Last-Event-ID", after.to_string())
        .send()
        .await?;
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    let mut seen = Vec::new();
    let mut completed = 0;
    while let Some(chunk) = stream.next().await {
        let at = Instant::now();
        buffer.push_str(&String::from_utf8_lossy(&chunk?));
        while let Some(end) = buffer.find("\n\n") {
            let frame: String = buffer.drain(..end + 2).collect();
            let mut id = None;
            let mut kind = "";
            for line in frame.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = v.trim().parse().ok();
                } else if let Some(v) = line.strip_prefix("event:") {
                    kind = if v.trim() == "turn_completed" {
                        "turn_completed"
                    } else {
                        "other"
                    };
                }
            }
            if let Some(id) = id {
                seen.push((id, at));
            }
            if kind == "turn_completed" {
                completed += 1;
                if completed == until {
                    return Ok(seen);
                }
            }
        }
    }
    bail!("the stream of {session} ended early")
}

async fn post(http: &reqwest::Client, server: &Server, path: &str, body: Value) -> Result<Value> {
    let response = http
        .post(format!("{}{path}", server.url))
        .bearer_auth(&server.token)
        .json(&body)
        .send()
        .await?;
    let status = response.status();
    let body: Value = response.json().await?;
    if !status.is_success() {
        bail!("{path}: {status} {body}");
    }
    Ok(body)
}

/// One session's turns on `server`, each followed on the same server.
async fn drive(
    http: &reqwest::Client,
    server: &Server,
    model: &str,
    turns: usize,
) -> Result<String> {
    let created = post(
        http,
        server,
        "/api/sessions",
        json!({"mode": "work", "model": model, "message": "turn 0"}),
    )
    .await?;
    let id = created["session_id"].as_str().context("no id")?.to_owned();
    follow(http, server, &id, 0, 1).await?;
    for turn in 1..turns {
        let accepted = post(
            http,
            server,
            &format!("/api/sessions/{id}/messages"),
            json!({"text": format!("turn {turn}")}),
        )
        .await?;
        let after = accepted["after_event"].as_u64().unwrap_or(0);
        follow(http, server, &id, after, 1).await?;
    }
    Ok(id)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let bin = match args.evoflux {
        Some(b) => b,
        None => std::env::current_exe()?
            .parent()
            .context("no directory")?
            .join("evoflux"),
    };
    // The servers start in a scratch directory.
    let bin = bin
        .canonicalize()
        .with_context(|| format!("no evoflux binary at {}", bin.display()))?;
    let work = tempfile::tempdir()?;
    std::fs::create_dir_all(work.path().join("repo/.git"))?;
    std::fs::create_dir_all(work.path().join("home"))?;
    let script = work.path().join("model.yaml");
    let replies: String = (0..args.turns.max(1) + 2)
        .map(|i| format!("  - reply: {{text: answer {i}}}\n"))
        .collect();
    std::fs::write(&script, format!("turns:\n{replies}"))?;
    let model = format!("scripted:{}", script.display());
    let migrated = command(&bin, work.path(), &args.database)
        .args(["store", "migrate"])
        .output()?;
    if !migrated.status.success() {
        bail!(
            "store migrate: {}",
            String::from_utf8_lossy(&migrated.stderr)
        );
    }
    let servers: Vec<Server> = (0..args.replicas)
        .map(|_| start(&bin, work.path(), &args.database))
        .collect::<Result<_>>()?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;

    // Warm-up: one session per server.
    for server in &servers {
        drive(&http, server, &model, 1).await?;
    }

    let started = Instant::now();
    let runs = (0..args.sessions).map(|i| {
        let server = &servers[i % servers.len()];
        let (http, model) = (&http, &model);
        async move { drive(http, server, model, args.turns).await }
    });
    for r in futures_util::future::join_all(runs).await {
        r?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let turns = args.sessions * args.turns;
    println!(
        "database={} replicas={} sessions={} turns={} seconds={:.2} turns_per_second={:.1}",
        if args.database == "sqlite" {
            "sqlite"
        } else {
            "postgres"
        },
        args.replicas,
        args.sessions,
        turns,
        elapsed,
        turns as f64 / elapsed
    );

    if servers.len() >= 2 {
        // Each event timed where the turn runs and on another server.
        let mut delays = Vec::new();
        for i in 0..args.latency_sessions {
            let (here, there) = (&servers[i % 2], &servers[(i + 1) % 2]);
            let created = post(
                &http,
                here,
                "/api/sessions",
                json!({"mode": "work", "model": model}),
            )
            .await?;
            let id = created["session_id"].as_str().context("no id")?.to_owned();
            // Both streams open before the first turn, so each event is
            // timed as it arrives, not replayed.
            let local = follow(&http, here, &id, 0, args.turns);
            let remote = follow(&http, there, &id, 0, args.turns);
            let driver = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                for turn in 0..args.turns {
                    let accepted = post(
                        &http,
                        here,
                        &format!("/api/sessions/{id}/messages"),
                        json!({"text": format!("turn {turn}")}),
                    )
                    .await?;
                    let after = accepted["after_event"].as_u64().unwrap_or(0);
                    follow(&http, here, &id, after, 1).await?;
                }
                Ok::<_, anyhow::Error>(())
            };
            let (local, remote, driven) = tokio::join!(local, remote, driver);
            driven?;
            let (local, remote) = (local?, remote?);
            for (id, at) in &remote {
                if let Some((_, here_at)) = local.iter().find(|(l, _)| l == id) {
                    let d = at.saturating_duration_since(*here_at).as_secs_f64() * 1000.0;
                    delays.push(d);
                }
            }
        }
        delays.sort_by(f64::total_cmp);
        println!(
            "cross_replica_events={} delay_ms_median={:.2} delay_ms_p99={:.2} delay_ms_max={:.2}",
            delays.len(),
            percentile(&delays, 0.5),
            percentile(&delays, 0.99),
            delays.last().copied().unwrap_or(0.0)
        );
    }
    Ok(())
}
