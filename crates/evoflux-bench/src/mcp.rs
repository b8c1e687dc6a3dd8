//! MCP start-up: what granting one stdio MCP server adds before evoflux's
//! first model request, against the server's own start time.
//!
//! The server's own start time is taken here, in the runner, with a raw
//! MCP handshake over the server's stdin and stdout (newline-delimited
//! JSON-RPC, no SDK): spawn, `initialize` and its response,
//! `notifications/initialized`, `tools/list` and its response. That is
//! the least any client can wait before it can offer the server's tools.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use evoflux_bench::Wire;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdin, ChildStdout};

use crate::run::{McpMode, Scenario, ScenarioResult};

/// The MCP test server's binary name.
pub const TEST_SERVER: &str = "evoflux-mcp-testserver";

/// The protocol version the handshake asks for.
const PROTOCOL_VERSION: &str = "2025-06-18";

/// `evoflux-mcp-testserver` next to the evoflux binary, when it is there.
pub fn server_next_to(evoflux: &Path) -> Option<PathBuf> {
    let dir = evoflux.parent()?;
    let path = dir.join(format!("{TEST_SERVER}{}", std::env::consts::EXE_SUFFIX));
    path.is_file().then_some(path)
}

async fn send(stdin: &mut ChildStdin, message: &Value) -> Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    stdin.write_all(&line).await?;
    stdin.flush().await?;
    Ok(())
}

/// Reads lines until the response to request `id`, skipping anything
/// else the server sends first (notifications, log messages).
async fn response(lines: &mut Lines<BufReader<ChildStdout>>, id: u64) -> Result<Value> {
    while let Some(line) = lines.next_line().await? {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if message.get("id").and_then(Value::as_u64) != Some(id) {
            continue;
        }
        if let Some(error) = message.get("error") {
            bail!("request {id} failed: {error}");
        }
        return Ok(message);
    }
    bail!("the server closed its stdout before answering request {id}")
}

/// One handshake: from spawning `server` to its tool list having arrived
/// (every page of it). Stdin is closed afterwards and the exit awaited,
/// outside the measured time.
pub async fn handshake(server: &Path, timeout: Duration) -> Result<Duration> {
    let mut cmd = tokio::process::Command::new(server);
    cmd.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let spawned = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        bail!("the server's stdin or stdout is not piped");
    };
    let mut lines = BufReader::new(stdout).lines();
    let work = async {
        send(
            &mut stdin,
            &json!({
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "evoflux-bench", "version": env!("CARGO_PKG_VERSION")},
                },
            }),
        )
        .await?;
        let init = response(&mut lines, 1).await?;
        if init.pointer("/result/protocolVersion").is_none() {
            bail!("the initialize response has no protocolVersion: {init}");
        }
        send(
            &mut stdin,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )
        .await?;
        let mut tools = 0;
        let mut cursor: Option<String> = None;
        for id in 2u64.. {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            send(
                &mut stdin,
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}),
            )
            .await?;
            let list = response(&mut lines, id).await?;
            tools += list
                .pointer("/result/tools")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            cursor = list
                .pointer("/result/nextCursor")
                .and_then(Value::as_str)
                .map(str::to_owned);
            if cursor.is_none() {
                break;
            }
        }
        if tools == 0 {
            bail!("the server listed no tools");
        }
        Ok(spawned.elapsed())
    };
    let took = tokio::time::timeout(timeout, work)
        .await
        .with_context(|| format!("no tool list within {timeout:?}"))??;
    drop(stdin);
    if tokio::time::timeout(timeout, child.wait()).await.is_err() {
        let _ = child.kill().await;
    }
    Ok(took)
}

/// The MCP start-up figures of one wire, from the medians.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McpStartupRow {
    pub wire: Wire,
    /// `mcp-one`: spawn → first main-call request, the lead granted one
    /// stdio server.
    pub with_server_ms: Option<f64>,
    /// `mcp-none`: the same without the grant.
    pub without_ms: Option<f64>,
    /// with − without: what the grant adds before the first request.
    pub difference_ms: Option<f64>,
    /// The server alone: spawn → tools listed, over a raw handshake.
    pub server_alone_ms: Option<f64>,
    /// difference − server alone: what evoflux adds above the server's
    /// own start (target: under 100 ms).
    pub above_server_ms: Option<f64>,
}

impl McpStartupRow {
    pub fn new(
        wire: Wire,
        with_server_ms: Option<f64>,
        without_ms: Option<f64>,
        server_alone_ms: Option<f64>,
    ) -> McpStartupRow {
        let difference_ms = with_server_ms.zip(without_ms).map(|(x, y)| x - y);
        McpStartupRow {
            wire,
            with_server_ms,
            without_ms,
            difference_ms,
            server_alone_ms,
            above_server_ms: difference_ms.zip(server_alone_ms).map(|(d, z)| d - z),
        }
    }

    /// The row as one sentence.
    pub fn line(&self) -> String {
        let n = |v: Option<f64>| v.map_or("–".to_owned(), |v| format!("{v:.1}"));
        format!(
            "MCP start-up ({}): first request with one server {} ms, without {} ms, difference {} ms; the server alone (spawn → tools listed) {} ms; above the server's own start: {} ms",
            self.wire,
            n(self.with_server_ms),
            n(self.without_ms),
            n(self.difference_ms),
            n(self.server_alone_ms),
            n(self.above_server_ms),
        )
    }
}

/// The MCP start-up section of a report.
#[derive(Debug, Clone, Serialize)]
pub struct McpStartup {
    /// The server measured, `None` when none was found.
    pub server: Option<String>,
    /// Median of `server_alone_runs_ms`.
    pub server_alone_ms: Option<f64>,
    pub server_alone_runs_ms: Vec<f64>,
    /// One row per wire measured.
    pub rows: Vec<McpStartupRow>,
    pub notes: Vec<String>,
}

impl McpStartup {
    /// The rows of every wire `mcp-one` or `mcp-none` ran on, from their
    /// medians and the server's own median.
    pub fn of(
        results: &[ScenarioResult],
        server: Option<&Path>,
        server_alone_runs_ms: Vec<f64>,
        notes: Vec<String>,
    ) -> McpStartup {
        let server_alone_ms = median(&server_alone_runs_ms);
        let first = |wire: Wire, mode: McpMode| {
            results
                .iter()
                .find(|r| r.wire == wire && r.scenario == Scenario::Mcp(mode).name())
                .and_then(|r| r.median.as_ref())
                .and_then(|m| m.first_main_request_ms)
        };
        let mut wires: Vec<Wire> = results
            .iter()
            .filter(|r| r.scenario.starts_with("mcp-"))
            .map(|r| r.wire)
            .collect();
        wires.sort();
        wires.dedup();
        McpStartup {
            server: server.map(|p| p.display().to_string()),
            server_alone_ms,
            server_alone_runs_ms,
            rows: wires
                .into_iter()
                .map(|w| {
                    McpStartupRow::new(
                        w,
                        first(w, McpMode::One),
                        first(w, McpMode::None),
                        server_alone_ms,
                    )
                })
                .collect(),
            notes,
        }
    }
}

fn median(v: &[f64]) -> Option<f64> {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(v[n / 2]),
        _ => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_start_up_row_subtracts_the_run_without_and_the_server_alone() {
        let r = McpStartupRow::new(Wire::Chat, Some(60.0), Some(20.0), Some(15.0));
        assert_eq!(r.difference_ms, Some(40.0));
        assert_eq!(r.above_server_ms, Some(25.0));
        assert_eq!(
            r.line(),
            "MCP start-up (chat): first request with one server 60.0 ms, without 20.0 ms, difference 40.0 ms; the server alone (spawn → tools listed) 15.0 ms; above the server's own start: 25.0 ms"
        );
        // Anything missing leaves what depends on it missing.
        let r = McpStartupRow::new(Wire::Chat, Some(60.0), Some(20.0), None);
        assert_eq!((r.difference_ms, r.above_server_ms), (Some(40.0), None));
        let r = McpStartupRow::new(Wire::Chat, None, Some(20.0), Some(15.0));
        assert_eq!((r.difference_ms, r.above_server_ms), (None, None));
        assert!(r.line().contains("with one server – ms"));
    }

    #[test]
    fn the_section_takes_each_wires_medians() {
        let result = |scenario: &str, wire: Wire, first: f64| ScenarioResult {
            harness: "evoflux".into(),
            scenario: scenario.into(),
            wire,
            median: Some(crate::run::Figures {
                first_main_request_ms: Some(first),
                ..Default::default()
            }),
            runs: Vec::new(),
            notes: Vec::new(),
        };
        let results = [
            result("mcp-none", Wire::Anthropic, 21.0),
            result("mcp-one", Wire::Anthropic, 50.0),
            result("mcp-none", Wire::Chat, 20.0),
            result("mcp-one", Wire::Chat, 45.0),
            result("resolver-off", Wire::Responses, 19.0),
        ];
        let m = McpStartup::of(&results, None, vec![12.0, 10.0, 30.0, 11.0], Vec::new());
        assert_eq!(m.server_alone_ms, Some(11.5));
        assert_eq!(m.rows.len(), 2);
        assert_eq!(
            m.rows[0],
            McpStartupRow::new(Wire::Chat, Some(45.0), Some(20.0), Some(11.5))
        );
        assert_eq!(m.rows[0].above_server_ms, Some(13.5));
        assert_eq!(m.rows[1].wire, Wire::Anthropic);
        assert_eq!(m.rows[1].difference_ms, Some(29.0));
    }
}
