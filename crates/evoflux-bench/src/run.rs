//! One scenario on one wire: the scratch directories, the harness process
//! and the figures taken from it and from the fake server's records.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use evoflux_bench::Wire;
use evoflux_bench::long_session;
use evoflux_bench::pricing::{self, InputTokens, PricedInput, PricedModel};
use evoflux_bench::scenario::{Dialect, Script};
use evoflux_bench::server::{FakeServer, Record, ServerOptions};
use serde::Serialize;
use tokio::io::AsyncReadExt;

use crate::mcp::McpStartup;

/// The skill resolver's setting for a run of the resolver scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ResolverMode {
    Off,
    On,
    Speculative,
}

impl ResolverMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            ResolverMode::Off => "off",
            ResolverMode::On => "on",
            ResolverMode::Speculative => "speculative",
        }
    }
}

/// Whether the lead of an MCP start-up run is granted an MCP server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum McpMode {
    /// The same user-level lead file, granting nothing.
    None,
    /// The lead granted one stdio server, `bench`.
    One,
}

impl McpMode {
    pub const fn as_str(self) -> &'static str {
        match self {
            McpMode::None => "none",
            McpMode::One => "one",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Shell, read, answer.
    ThreeStep,
    /// Thirty reads of 14 KB files, then an answer.
    ThirtyStep,
    /// A sixty-step coding session: reads, greps, edits, a failing then
    /// passing build, two 200 KB test runs (`long_session`).
    SixtyStep,
    /// One answer in a workspace with skills, the resolver set so.
    Resolver(ResolverMode),
    /// One answer, the lead granted no MCP server or one stdio server.
    Mcp(McpMode),
}

/// The name the MCP start-up scenario gives its server in `mcp.json`.
pub const MCP_SERVER_NAME: &str = "bench";

/// Files of the 30-step session.
pub const THIRTY: usize = 30;
/// Bytes of each file the 30-step session reads: 200 lines of 70 bytes.
pub const FILE_BYTES: usize = 14_000;

impl Scenario {
    pub fn name(&self) -> String {
        match self {
            Scenario::ThreeStep => "three-step".to_owned(),
            Scenario::ThirtyStep => "thirty-step".to_owned(),
            Scenario::SixtyStep => "sixty-step".to_owned(),
            Scenario::Resolver(m) => format!("resolver-{}", m.as_str()),
            Scenario::Mcp(m) => format!("mcp-{}", m.as_str()),
        }
    }

    /// Scenarios that measure evoflux's own start-up stages: run for
    /// evoflux only.
    pub fn evoflux_only(&self) -> bool {
        matches!(self, Scenario::Resolver(_) | Scenario::Mcp(_))
    }

    fn task(&self) -> &'static str {
        match self {
            Scenario::ThreeStep => {
                "List the workspace, then read notes.txt and tell me what it says."
            }
            Scenario::ThirtyStep => "Read every file under data/ and summarise them.",
            Scenario::SixtyStep => {
                "The build is broken: fix it, resolve the TODOs in src/ and run the tests."
            }
            Scenario::Resolver(_) | Scenario::Mcp(_) => "What is the capital of France?",
        }
    }

    fn script(&self, dialect: Dialect, repo: &Path) -> Script {
        let path = |f: &str| match dialect {
            Dialect::Claude | Dialect::Opencode => repo.join(f).display().to_string(),
            Dialect::Evoflux | Dialect::Codex => f.to_owned(),
        };
        match self {
            Scenario::ThreeStep => Script::three_step(dialect, &path("notes.txt")),
            Scenario::ThirtyStep => {
                let files: Vec<String> = thirty_files().iter().map(|f| path(f)).collect();
                Script::reads(dialect, &files)
            }
            Scenario::SixtyStep => long_session::script(dialect, &path),
            Scenario::Resolver(_) | Scenario::Mcp(_) => Script::answer("Paris."),
        }
    }

    /// Writes the workspace this scenario works in.
    fn prepare(&self, repo: &Path) -> Result<()> {
        std::fs::create_dir_all(repo.join(".git"))?;
        std::fs::write(
            repo.join("notes.txt"),
            "Project notes\n\nThe build runs with `cargo build`.\nReleases are tagged vX.Y.Z.\n",
        )?;
        match self {
            Scenario::ThreeStep | Scenario::Mcp(_) => {}
            Scenario::ThirtyStep => {
                std::fs::create_dir_all(repo.join("data"))?;
                for (i, f) in thirty_files().iter().enumerate() {
                    std::fs::write(repo.join(f), file_text(i + 1))?;
                }
            }
            Scenario::SixtyStep => {
                for (f, text) in long_session::workspace() {
                    let path = repo.join(f);
                    if let Some(dir) = path.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    std::fs::write(path, text)?;
                }
            }
            Scenario::Resolver(_) => {
                for (name, description) in SKILLS {
                    let dir = repo.join(".evoflux/skills").join(name);
                    std::fs::create_dir_all(&dir)?;
                    std::fs::write(
                        dir.join("SKILL.md"),
                        format!(
                            "---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nFollow the steps.\n"
                        ),
                    )?;
                }
            }
        }
        Ok(())
    }
}

/// The resolver scenario's skills: none fits a factual question, so the
/// resolver's right answer is "no skill", the common case.
const SKILLS: [(&str, &str); 3] = [
    (
        "release-notes",
        "Draft release notes from the commits since the last tag.",
    ),
    (
        "build-fixer",
        "Fix a failing cargo build, starting from the first error.",
    ),
    (
        "db-migration",
        "Write and check a SQL migration for the store.",
    ),
];

fn thirty_files() -> Vec<String> {
    (1..=THIRTY)
        .map(|i| format!("data/file{i:02}.txt"))
        .collect()
}

/// 200 distinct lines of 70 bytes: `FILE_BYTES` in all.
fn file_text(n: usize) -> String {
    let mut out = String::with_capacity(FILE_BYTES);
    for line in 1..=FILE_BYTES / 70 {
        let head = format!("file {n:02} line {line:03}: ");
        let filler = "the quick brown fox jumps over the lazy dog and keeps running";
        let mut l = format!("{head}{filler}");
        l.truncate(69);
        while l.len() < 69 {
            l.push('.');
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

/// A harness under measurement.
#[derive(Debug, Clone)]
pub enum Harness {
    Evoflux(PathBuf),
    /// OpenAI's codex CLI (`codex exec`), on the Responses wire only.
    Codex(PathBuf),
    /// Claude Code (`claude -p`), on the Anthropic wire only.
    Claude(PathBuf),
    /// opencode (`opencode run`), through its built-in `anthropic`
    /// provider with the base URL pointed at the fake.
    Opencode(PathBuf),
}

impl Harness {
    pub fn name(&self) -> &'static str {
        match self {
            Harness::Evoflux(_) => "evoflux",
            Harness::Codex(_) => "codex",
            Harness::Claude(_) => "claude-code",
            Harness::Opencode(_) => "opencode",
        }
    }

    pub fn binary(&self) -> &Path {
        match self {
            Harness::Evoflux(p) | Harness::Codex(p) | Harness::Claude(p) | Harness::Opencode(p) => {
                p
            }
        }
    }

    pub fn dialect(&self) -> Dialect {
        match self {
            Harness::Evoflux(_) => Dialect::Evoflux,
            Harness::Codex(_) => Dialect::Codex,
            Harness::Claude(_) => Dialect::Claude,
            Harness::Opencode(_) => Dialect::Opencode,
        }
    }

    /// The wires this harness can be pointed at.
    pub fn speaks(&self, wire: Wire) -> bool {
        match self {
            Harness::Evoflux(_) => true,
            Harness::Codex(_) => wire == Wire::Responses,
            Harness::Claude(_) | Harness::Opencode(_) => wire == Wire::Anthropic,
        }
    }
}

/// opencode's config: its built-in Anthropic provider on the fake.
fn opencode_config(server: &FakeServer) -> String {
    serde_json::json!({
        "$schema": "https://opencode.ai/config.json",
        "autoupdate": false,
        "share": "disabled",
        "provider": {"anthropic": {"options": {
            "baseURL": format!("{}/v1", server.anthropic_base_url()),
            "apiKey": "bench-key",
        }}},
    })
    .to_string()
}

/// codex's config.toml: a custom provider on the fake's Responses
/// endpoint, so nothing goes to OpenAI.
fn codex_config(server: &FakeServer) -> String {
    format!(
        "model = \"gpt-5\"\nmodel_provider = \"bench\"\napproval_policy = \"never\"\n\n[model_providers.bench]\nname = \"bench\"\nbase_url = \"{}\"\nenv_key = \"BENCH_KEY\"\nwire_api = \"responses\"\n",
        server.openai_base_url()
    )
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub runs: usize,
    pub resolver_delay: Duration,
    pub main_delay: Duration,
    pub timeout: Duration,
    pub dump_dir: Option<PathBuf>,
    /// The stdio MCP server the `mcp-one` scenario grants (an absolute
    /// path); `None` skips that scenario.
    pub mcp_server: Option<PathBuf>,
    /// The model evoflux asks for on the OpenAI wires (its price is what
    /// the harness's cost model decides with).
    pub openai_model: String,
}

/// What one process run produced.
#[derive(Debug)]
struct RunOutcome {
    wall: Duration,
    peak_rss_kib: Option<u64>,
    records: Vec<Record>,
    spawned: Instant,
    failure: Option<String>,
    /// What evoflux's `session_started` event offered.
    session: SessionMcp,
}

/// The MCP part of an evoflux `--json` run's events.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SessionMcp {
    /// The `mcp__…` tools of the `session_started` event; `None` when no
    /// such event was printed (another harness, or a failed start).
    offered: Option<Vec<String>>,
    /// Servers an `mcp_server` event reported as `failed`.
    failed: Vec<String>,
}

impl SessionMcp {
    /// Reads the JSON lines `evoflux --json run` prints.
    fn of(stdout: &[u8]) -> SessionMcp {
        let mut out = SessionMcp::default();
        for line in String::from_utf8_lossy(stdout).lines() {
            let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
                continue;
            };
            match event["type"].as_str() {
                Some("session_started") if out.offered.is_none() => {
                    out.offered = Some(
                        event["tools"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(|t| t.as_str())
                            .filter(|t| t.starts_with("mcp__"))
                            .map(str::to_owned)
                            .collect(),
                    );
                }
                Some("mcp_server") if event["state"] == "failed" => {
                    if let Some(name) = event["server"].as_str() {
                        out.failed.push(name.to_owned());
                    }
                }
                _ => {}
            }
        }
        out
    }
}

/// The user-level Coding lead file of the MCP scenarios: the built-in
/// lead (`evoflux`, the Coding default) overridden by name and role, which
/// keeps its prompt and tools and adds the grant. `mcp-none` writes the
/// same file without it, so the grant is the only difference.
fn mcp_lead_file(mode: McpMode) -> String {
    match mode {
        McpMode::None => "---\nrole: lead\n---\n".to_owned(),
        McpMode::One => format!("---\nrole: lead\nmcp: [{MCP_SERVER_NAME}]\n---\n"),
    }
}

/// The user-level `mcp.json` declaring `server` as a stdio server.
fn mcp_json(server: &Path) -> String {
    serde_json::json!({"mcpServers": {MCP_SERVER_NAME: {
        "type": "stdio",
        "command": server.display().to_string(),
    }}})
    .to_string()
}

/// The figures of one run.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Figures {
    pub wall_ms: f64,
    /// Model requests (resolver calls included).
    pub calls: usize,
    pub resolver_calls: usize,
    /// Wall time divided by model requests: the fake answers at once, so
    /// this is what the harness spends per call (startup included).
    pub ms_per_call: f64,
    /// Calls without tools that are not the resolver (titles, summaries).
    pub side_calls: usize,
    /// Mean time between consecutive main-call requests from the second
    /// on: per-step harness time (running the tool, building and sending
    /// the next request) without process start and exit, and without the
    /// first answer, which a harness with a skill resolver holds back
    /// until the resolver has answered.
    pub step_gap_ms: Option<f64>,
    pub first_request_bytes: usize,
    pub total_bytes: usize,
    pub input_tokens: u64,
    pub cached_tokens: u64,
    pub cache_write_tokens: u64,
    /// cached / input over the main calls after the first.
    pub cache_hit_after_first: Option<f64>,
    /// cached / input over every call.
    pub cache_hit_overall: Option<f64>,
    pub peak_rss_mib: Option<f64>,
    /// From spawning the process to the first main-call request.
    pub first_main_request_ms: Option<f64>,
    /// From spawning the process to the resolver's request.
    pub resolver_request_ms: Option<f64>,
    /// The first main-call request's arrival minus the resolver request's,
    /// within one run: what the resolver adds before the main call starts,
    /// free of the process start-up's noise (negative when the main call
    /// was sent first).
    pub main_after_resolver_ms: Option<f64>,
    /// Input priced on real models (`pricing`): input-token equivalents
    /// on each model whose provider's cache the wire simulates.
    pub priced_input: Vec<PricedInput>,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn ratio(num: u64, den: u64) -> Option<f64> {
    (den > 0).then(|| num as f64 / den as f64)
}

impl Figures {
    fn of(run: &RunOutcome, wire: Wire) -> Figures {
        let ok: Vec<&Record> = run.records.iter().filter(|r| r.error.is_none()).collect();
        let main: Vec<&Record> = ok
            .iter()
            .copied()
            .filter(|r| !r.resolver && !r.side)
            .collect();
        let after_first = main.get(1..).unwrap_or_default();
        let since = |r: &Record| ms(r.at.saturating_duration_since(run.spawned));
        let sum = |rs: &[&Record], f: fn(&Record) -> u64| rs.iter().map(|r| f(r)).sum::<u64>();
        let step_gap_ms = match (main.get(1), main.last()) {
            (Some(a), Some(b)) if main.len() > 2 => {
                Some(ms(b.at.saturating_duration_since(a.at)) / (main.len() - 2) as f64)
            }
            _ => None,
        };
        let resolver = ok.iter().find(|r| r.resolver);
        let main_after_resolver_ms = main.first().zip(resolver).map(|(m, r)| {
            if m.at >= r.at {
                ms(m.at.duration_since(r.at))
            } else {
                -ms(r.at.duration_since(m.at))
            }
        });
        let input_tokens = sum(&ok, |r| r.input_tokens);
        let cached_tokens = sum(&ok, |r| r.cached_tokens);
        let cache_write_tokens = sum(&ok, |r| r.cache_write_tokens);
        Figures {
            priced_input: pricing::priced(
                wire,
                InputTokens {
                    uncached: input_tokens.saturating_sub(cached_tokens + cache_write_tokens),
                    cached: cached_tokens,
                    cache_written: cache_write_tokens,
                },
            ),
            wall_ms: ms(run.wall),
            calls: run.records.len(),
            resolver_calls: ok.iter().filter(|r| r.resolver).count(),
            side_calls: ok.iter().filter(|r| r.side).count(),
            ms_per_call: ms(run.wall) / run.records.len().max(1) as f64,
            step_gap_ms,
            first_request_bytes: main.first().map(|r| r.bytes).unwrap_or(0),
            total_bytes: run.records.iter().map(|r| r.bytes).sum(),
            input_tokens,
            cached_tokens,
            cache_write_tokens,
            cache_hit_after_first: ratio(
                sum(after_first, |r| r.cached_tokens),
                sum(after_first, |r| r.input_tokens),
            ),
            cache_hit_overall: ratio(sum(&ok, |r| r.cached_tokens), sum(&ok, |r| r.input_tokens)),
            peak_rss_mib: run.peak_rss_kib.map(|k| k as f64 / 1024.0),
            first_main_request_ms: main.first().map(|r| since(r)),
            resolver_request_ms: resolver.map(|r| since(r)),
            main_after_resolver_ms,
        }
    }
}

/// One scenario on one wire, over all runs.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioResult {
    pub harness: String,
    pub scenario: String,
    pub wire: Wire,
    /// Medians over the successful runs; `None` when none succeeded.
    pub median: Option<Figures>,
    pub runs: Vec<Figures>,
    /// Why runs failed or the figures mean less than they say.
    pub notes: Vec<String>,
}

impl ScenarioResult {
    /// Adds another measurement of the same scenario and wire: its runs,
    /// and its notes not already here; the medians are taken again.
    pub fn absorb(&mut self, other: ScenarioResult) {
        self.runs.extend(other.runs);
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
        self.median = medians(&self.runs);
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        0.0
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn median_opt(v: Vec<Option<f64>>) -> Option<f64> {
    let some: Vec<f64> = v.into_iter().flatten().collect();
    (!some.is_empty()).then(|| median(some))
}

/// Field by field medians (counts and bytes are the same in every run of
/// a deterministic harness; their median is that value).
fn medians(runs: &[Figures]) -> Option<Figures> {
    if runs.is_empty() {
        return None;
    }
    let f = |g: fn(&Figures) -> f64| median(runs.iter().map(g).collect());
    let o = |g: fn(&Figures) -> Option<f64>| median_opt(runs.iter().map(g).collect());
    Some(Figures {
        wall_ms: f(|r| r.wall_ms),
        calls: f(|r| r.calls as f64) as usize,
        resolver_calls: f(|r| r.resolver_calls as f64) as usize,
        side_calls: f(|r| r.side_calls as f64) as usize,
        ms_per_call: f(|r| r.ms_per_call),
        step_gap_ms: o(|r| r.step_gap_ms),
        first_request_bytes: f(|r| r.first_request_bytes as f64) as usize,
        total_bytes: f(|r| r.total_bytes as f64) as usize,
        input_tokens: f(|r| r.input_tokens as f64) as u64,
        cached_tokens: f(|r| r.cached_tokens as f64) as u64,
        cache_write_tokens: f(|r| r.cache_write_tokens as f64) as u64,
        cache_hit_after_first: o(|r| r.cache_hit_after_first),
        cache_hit_overall: o(|r| r.cache_hit_overall),
        peak_rss_mib: o(|r| r.peak_rss_mib),
        first_main_request_ms: o(|r| r.first_main_request_ms),
        resolver_request_ms: o(|r| r.resolver_request_ms),
        main_after_resolver_ms: o(|r| r.main_after_resolver_ms),
        priced_input: PricedModel::ALL
            .into_iter()
            .filter_map(|model| {
                let tokens = median_opt(
                    runs.iter()
                        .map(|r| {
                            r.priced_input
                                .iter()
                                .find(|p| p.model == model)
                                .map(|p| p.tokens)
                        })
                        .collect(),
                )?;
                Some(PricedInput { model, tokens })
            })
            .collect(),
    })
}

/// The config.toml of one evoflux run against `server` on `wire`.
fn evoflux_config(
    server: &FakeServer,
    wire: Wire,
    scenario: Scenario,
    with_skills_section: bool,
) -> String {
    let mut c = String::from("[providers.bench]\n");
    match wire {
        Wire::Chat | Wire::Responses => {
            let _ = writeln!(
                c,
                "kind = \"openai\"\nbase_url = \"{}\"",
                server.openai_base_url()
            );
        }
        Wire::Anthropic => {
            let _ = writeln!(
                c,
                "kind = \"anthropic\"\nbase_url = \"{}\"",
                server.anthropic_base_url()
            );
        }
    }
    c.push_str("api_key_env = \"BENCH_KEY\"\n");
    if wire == Wire::Responses {
        c.push_str("wire_api = \"responses\"\n");
    }
    let resolver = match scenario {
        Scenario::Resolver(mode) => Some(mode),
        // The MCP scenarios measure the MCP servers' start alone: no
        // resolver request goes out beside the first main call.
        Scenario::Mcp(_) => Some(ResolverMode::Off),
        Scenario::ThreeStep | Scenario::ThirtyStep | Scenario::SixtyStep => None,
    };
    if let Some(mode) = resolver
        && with_skills_section
    {
        let _ = write!(c, "\n[skills]\nresolver = \"{}\"\n", mode.as_str());
    }
    c
}

/// The model each wire is asked for: names the built-in price table knows.
fn model_for(wire: Wire, openai_model: &str) -> String {
    match wire {
        Wire::Chat | Wire::Responses => format!("bench:{openai_model}"),
        Wire::Anthropic => "bench:claude-sonnet-4-5".to_owned(),
    }
}

/// VmHWM (peak resident set) of a live process, in KiB.
fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// The last `n` characters of a process's output, for a failure note.
fn tail(bytes: &[u8], n: usize) -> String {
    let text = String::from_utf8_lossy(bytes);
    let chars: Vec<char> = text.trim().chars().collect();
    chars[chars.len().saturating_sub(n)..].iter().collect()
}

/// Runs the harness once in fresh scratch directories against `server`.
async fn run_once(
    harness: &Harness,
    scenario: Scenario,
    wire: Wire,
    server: &FakeServer,
    settings: &Settings,
    tmp: &Path,
    with_skills_section: bool,
) -> Result<RunOutcome> {
    let home = tmp.join("home");
    let repo = tmp.join("repo");
    std::fs::create_dir_all(&home)?;
    let mut cmd = match harness {
        Harness::Evoflux(bin) => {
            let config_dir = home.join(".config/evoflux");
            std::fs::create_dir_all(&config_dir)?;
            std::fs::write(
                config_dir.join("config.toml"),
                evoflux_config(server, wire, scenario, with_skills_section),
            )?;
            if let Scenario::Mcp(mode) = scenario {
                // User level: no repository trust is needed.
                let agents = config_dir.join("agents/coding");
                std::fs::create_dir_all(&agents)?;
                std::fs::write(agents.join("evoflux.md"), mcp_lead_file(mode))?;
                if mode == McpMode::One {
                    let mcp = settings
                        .mcp_server
                        .as_deref()
                        .context("mcp-one needs an MCP server")?;
                    std::fs::write(config_dir.join("mcp.json"), mcp_json(mcp))?;
                }
            }
            let mut cmd = tokio::process::Command::new(bin);
            cmd.env_clear()
                .env("EVOFLUX_ADMIN_DIR", tmp.join("admin"))
                .args([
                    "--json",
                    "run",
                    "--mode",
                    "coding",
                    // Above the default 50: the sixty-step session makes
                    // 60 model calls in its one turn.
                    "--max-model-calls",
                    "100",
                    "--model",
                    &model_for(wire, &settings.openai_model),
                    scenario.task(),
                ]);
            cmd
        }
        Harness::Codex(bin) => {
            let codex_home = home.join(".codex");
            std::fs::create_dir_all(&codex_home)?;
            std::fs::write(codex_home.join("config.toml"), codex_config(server))?;
            let mut cmd = tokio::process::Command::new(bin);
            cmd.env_clear().env("CODEX_HOME", &codex_home).args([
                "exec",
                "--json",
                "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox",
                scenario.task(),
            ]);
            cmd
        }
        Harness::Claude(bin) => {
            let mut cmd = tokio::process::Command::new(bin);
            cmd.env_clear()
                .env("ANTHROPIC_BASE_URL", server.anthropic_base_url())
                .env("ANTHROPIC_API_KEY", "bench-key")
                // No update checks, telemetry or error reports: only model
                // calls leave the process.
                .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
                .env("DISABLE_AUTOUPDATER", "1")
                .args([
                    "-p",
                    // Not --dangerously-skip-permissions, which refuses
                    // to run as root; the scenarios need these four.
                    "--allowedTools",
                    "Bash,Read,Grep,Edit",
                    "--output-format",
                    "json",
                    "--model",
                    "claude-sonnet-4-5",
                    scenario.task(),
                ]);
            cmd
        }
        Harness::Opencode(bin) => {
            let config = home.join(".config/opencode");
            std::fs::create_dir_all(&config)?;
            std::fs::write(config.join("opencode.json"), opencode_config(server))?;
            let mut cmd = tokio::process::Command::new(bin);
            cmd.env_clear()
                .env("ANTHROPIC_API_KEY", "bench-key")
                .env("OPENCODE_DISABLE_AUTOUPDATE", "1")
                .env("OPENCODE_DISABLE_SHARE", "1")
                .args([
                    "run",
                    "--format",
                    "json",
                    "--auto",
                    "--model",
                    "anthropic/claude-sonnet-4-5",
                    scenario.task(),
                ]);
            cmd
        }
    };
    cmd.env("HOME", &home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("BENCH_KEY", "bench-key")
        .current_dir(&repo)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let spawned = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {}", harness.binary().display()))?;
    let pid = child.id();
    let mut stdout = child.stdout.take();
    let mut stderr = child.stderr.take();
    let out_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = stdout.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    });
    let err_task = tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(s) = stderr.as_mut() {
            let _ = s.read_to_end(&mut buf).await;
        }
        buf
    });
    // Poll the peak resident set while the process lives: VmHWM only
    // grows, so the last reading before exit is the peak (to within one
    // polling interval of growth).
    let mut peak = None;
    let deadline = tokio::time::sleep(settings.timeout);
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(2));
    let status = loop {
        tokio::select! {
            status = child.wait() => break Some(status?),
            _ = tick.tick() => {
                if let Some(kib) = pid.and_then(peak_rss_kib) {
                    peak = Some(peak.map_or(kib, |p: u64| p.max(kib)));
                }
            }
            _ = &mut deadline => {
                let _ = child.kill().await;
                break None;
            }
        }
    };
    let wall = spawned.elapsed();
    let stdout = out_task.await.unwrap_or_default();
    let stderr = err_task.await.unwrap_or_default();
    let failure = match status {
        None => Some(format!("timed out after {:?}", settings.timeout)),
        Some(s) if !s.success() => Some(format!(
            "exit {}: {} {}",
            s.code().map_or("by signal".to_owned(), |c| c.to_string()),
            tail(&stderr, 1500),
            tail(&stdout, 400),
        )),
        Some(_) => None,
    };
    Ok(RunOutcome {
        wall,
        peak_rss_kib: peak,
        records: server.records(),
        spawned,
        failure,
        session: SessionMcp::of(&stdout),
    })
}

/// Runs `scenario` on `wire` `settings.runs` times, each against a fresh
/// server state.
pub async fn measure(
    harness: &Harness,
    scenario: Scenario,
    wire: Wire,
    settings: &Settings,
) -> Result<ScenarioResult> {
    let options = ServerOptions {
        resolver_delay: settings.resolver_delay,
        main_delay: settings.main_delay,
        dump_dir: settings
            .dump_dir
            .as_ref()
            .map(|d| d.join(format!("{}-{}-{wire}", harness.name(), scenario.name()))),
    };
    let server = FakeServer::start(Script { steps: Vec::new() }, options)
        .await
        .context("starting the fake model server")?;
    let mut runs = Vec::new();
    let mut notes = Vec::new();
    if scenario == Scenario::Mcp(McpMode::One) && settings.mcp_server.is_none() {
        notes.push(format!(
            "no {} next to the evoflux binary (--mcp-server PATH): not measured",
            crate::mcp::TEST_SERVER
        ));
        return Ok(ScenarioResult {
            harness: harness.name().to_owned(),
            scenario: scenario.name(),
            wire,
            median: None,
            runs,
            notes,
        });
    }
    // A binary without `[skills] resolver` runs its built-in resolver
    // behaviour: measured as "on" (noted), never as "off" or
    // "speculative".
    let mut with_skills_section = true;
    while runs.len() < settings.runs {
        let tmp = tempfile::tempdir().context("a scratch directory")?;
        let repo = tmp.path().join("repo");
        scenario.prepare(&repo)?;
        // Some harnesses' read tools take absolute paths only.
        let script = scenario.script(harness.dialect(), &repo.canonicalize()?);
        let expected = script.steps.len();
        server.reset(script);
        let outcome = run_once(
            harness,
            scenario,
            wire,
            &server,
            settings,
            tmp.path(),
            with_skills_section,
        )
        .await?;
        let wrong_wire: Vec<Wire> = outcome
            .records
            .iter()
            .map(|r| r.wire)
            .filter(|&w| w != wire)
            .collect();
        if let Some(&other) = wrong_wire.first() {
            notes.push(format!(
                "the {wire} wire is not available: with it configured, requests arrived on {other}"
            ));
            break;
        }
        if let Some(failure) = &outcome.failure {
            if failure.contains("unknown key `providers.bench.wire_api`") {
                notes.push(
                    "the Responses wire is not available in this binary: it rejects `wire_api` (config/unknown-key)"
                        .to_owned(),
                );
                break;
            }
            if failure.contains("unknown key `skills`") {
                if matches!(scenario, Scenario::Mcp(_)) && with_skills_section {
                    notes.push(
                        "this binary has no `[skills] resolver` setting: measured with its built-in resolver behaviour"
                            .to_owned(),
                    );
                    with_skills_section = false;
                    continue;
                }
                if scenario == Scenario::Resolver(ResolverMode::On) && with_skills_section {
                    notes.push(
                        "this binary has no `[skills] resolver` setting: measured its built-in behaviour (the resolver runs before the first call)"
                            .to_owned(),
                    );
                    with_skills_section = false;
                    continue;
                }
                notes.push(
                    "this binary has no `[skills] resolver` setting (config/unknown-key): not measured".to_owned(),
                );
                break;
            }
            notes.push(failure.clone());
            break;
        }
        let refused: Vec<String> = outcome
            .records
            .iter()
            .filter_map(|r| r.error.clone())
            .collect();
        if let Some(why) = refused.first() {
            notes.push(format!(
                "{} request(s) refused by the fake: {why}",
                refused.len()
            ));
        }
        let main_calls = outcome
            .records
            .iter()
            .filter(|r| !r.resolver && !r.side)
            .count();
        if main_calls != expected {
            notes.push(format!(
                "{main_calls} main calls where the script has {expected} steps"
            ));
        }
        if let Scenario::Mcp(mode) = scenario {
            let offered = outcome.session.offered.clone().unwrap_or_default();
            let expected_tool = format!("mcp__{MCP_SERVER_NAME}__echo");
            if let Some(name) = outcome.session.failed.first() {
                notes.push(format!("the MCP server `{name}` failed to start"));
            }
            match mode {
                McpMode::One if !offered.contains(&expected_tool) => {
                    notes.push(format!(
                        "session_started offered no `{expected_tool}` (MCP tools offered: {offered:?}): this binary does not start granted MCP servers before the first request; not measured"
                    ));
                    break;
                }
                McpMode::None if !offered.is_empty() => {
                    notes.push(format!("session_started offered MCP tools: {offered:?}"));
                }
                _ => {}
            }
        }
        let figures = Figures::of(&outcome, wire);
        if let Scenario::Resolver(mode) = scenario {
            match (mode, figures.resolver_calls) {
                (ResolverMode::Off, n) if n > 0 => {
                    notes.push(format!("resolver = \"off\" made {n} resolver call(s)"))
                }
                (ResolverMode::On | ResolverMode::Speculative, 0) => notes.push(format!(
                    "resolver = \"{}\" made no resolver call",
                    mode.as_str()
                )),
                _ => {}
            }
        }
        runs.push(figures);
    }
    notes.dedup();
    Ok(ScenarioResult {
        harness: harness.name().to_owned(),
        scenario: scenario.name(),
        wire,
        median: medians(&runs),
        runs,
        notes,
    })
}

/// Another harness found on this machine.
#[derive(Debug, Clone, Serialize)]
pub struct OtherHarness {
    pub name: String,
    pub path: Option<String>,
    pub measured: bool,
}

/// Looks for codex, claude (Claude Code) and opencode on PATH and in the
/// npm prefix's `bin/`.
pub fn other_harnesses(npm_prefix: Option<&Path>) -> Vec<OtherHarness> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(prefix) = npm_prefix {
        dirs.insert(0, prefix.join("bin"));
    }
    ["codex", "claude", "opencode"]
        .iter()
        .map(|name| {
            let path = dirs
                .iter()
                .map(|d| d.join(name))
                .find(|p| p.is_file())
                .map(|p| native_binary(name, p));
            OtherHarness {
                name: (*name).to_owned(),
                path: path.map(|p| p.display().to_string()),
                measured: false,
            }
        })
        .collect()
}

/// The native program behind an npm launcher script. codex's npm
/// package starts its Rust binary from a Node script, which on Node
/// older than 22.15 stays alive as the parent: measured through it, the
/// wall time would include Node's start-up and the peak RSS would be
/// Node's, not codex's. Anything else is returned as it is.
fn native_binary(name: &str, found: PathBuf) -> PathBuf {
    let is_script = std::fs::read(&found).is_ok_and(|bytes| bytes.starts_with(b"#!"));
    if name != "codex" || !is_script {
        return found;
    }
    // <prefix>/lib/node_modules/@openai/codex/bin/codex.js, with the
    // platform package under its node_modules.
    let Ok(script) = found.canonicalize() else {
        return found;
    };
    let Some(package) = script.parent().and_then(Path::parent) else {
        return found;
    };
    let platforms = package.join("node_modules/@openai");
    let candidates = std::fs::read_dir(&platforms)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("vendor"))
        .flat_map(|vendor| std::fs::read_dir(vendor).into_iter().flatten().flatten())
        .map(|triple| triple.path().join("bin/codex"));
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or(found)
}

/// Everything one invocation measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub harness: String,
    pub binary: String,
    pub runs: usize,
    pub resolver_delay_ms: u64,
    pub main_delay_ms: u64,
    pub results: Vec<ScenarioResult>,
    /// With `mcp-none` or `mcp-one` selected: what granting one stdio MCP
    /// server adds before the first request.
    pub mcp_startup: Option<McpStartup>,
    pub other_harnesses: Vec<OtherHarness>,
}

fn pct(v: Option<f64>) -> String {
    v.map_or("–".to_owned(), |v| format!("{:.1}%", v * 100.0))
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("–".to_owned(), |v| format!("{v:.digits$}"))
}

fn kb(bytes: usize) -> String {
    format!("{:.1}", bytes as f64 / 1000.0)
}

impl Report {
    pub fn markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{}: {}; {} run(s) per row, medians; the fake answers the resolver after {} ms, other calls after {} ms\n",
            self.harness, self.binary, self.runs, self.resolver_delay_ms, self.main_delay_ms
        );
        s.push_str("| harness | scenario | wire | calls | wall ms | ms/call | step gap ms | first request KB | sent KB | cache hit after first | cache hit overall | uncached k tokens | cache-write k tokens |");
        for m in PricedModel::ALL {
            let _ = write!(s, " priced k, {} |", m.key());
        }
        s.push_str(
            " peak RSS MiB |\n|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        );
        s.push_str(&"---:|".repeat(PricedModel::ALL.len()));
        s.push_str("---:|\n");
        for r in &self.results {
            match &r.median {
                Some(m) => {
                    let priced: String = PricedModel::ALL
                        .into_iter()
                        .map(|model| {
                            let k = m
                                .priced_input
                                .iter()
                                .find(|p| p.model == model)
                                .map(|p| p.tokens / 1000.0);
                            format!(" {} |", num(k, 1))
                        })
                        .collect();
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | {} | {:.0} | {:.1} | {} | {} | {} | {} | {} | {:.1} | {:.1} |{priced} {} |",
                        r.harness,
                        r.scenario,
                        r.wire,
                        m.calls,
                        m.wall_ms,
                        m.ms_per_call,
                        num(m.step_gap_ms, 1),
                        kb(m.first_request_bytes),
                        kb(m.total_bytes),
                        pct(m.cache_hit_after_first),
                        pct(m.cache_hit_overall),
                        m.input_tokens
                            .saturating_sub(m.cached_tokens + m.cache_write_tokens)
                            as f64
                            / 1000.0,
                        m.cache_write_tokens as f64 / 1000.0,
                        num(m.peak_rss_mib, 1),
                    );
                }
                None => {
                    let _ = writeln!(
                        s,
                        "| {} | {} | {} | not measured | | | | | | | | | |{} |",
                        r.harness,
                        r.scenario,
                        r.wire,
                        " |".repeat(PricedModel::ALL.len()),
                    );
                }
            }
        }
        let resolver: Vec<&ScenarioResult> = self
            .results
            .iter()
            .filter(|r| r.scenario.starts_with("resolver-"))
            .collect();
        if !resolver.is_empty() {
            s.push_str("\nThe first main-call request by resolver setting: ms from process start, and ms after the resolver's request in the same run:\n\n");
            s.push_str("| wire | off | on | speculative | on − off | speculative − off | main after resolver, on | main after resolver, speculative | resolver calls off/on/speculative |\n");
            s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
            let mut wires: Vec<Wire> = resolver.iter().map(|r| r.wire).collect();
            wires.sort();
            wires.dedup();
            for wire in wires {
                let get = |mode: &str| {
                    resolver
                        .iter()
                        .find(|r| r.wire == wire && r.scenario == format!("resolver-{mode}"))
                        .and_then(|r| r.median.as_ref())
                };
                let first = |mode: &str| get(mode).and_then(|m| m.first_main_request_ms);
                let calls = |mode: &str| {
                    get(mode).map_or("–".to_owned(), |m| m.resolver_calls.to_string())
                };
                let diff = |a: Option<f64>, b: Option<f64>| num(a.zip(b).map(|(a, b)| a - b), 1);
                let after = |mode: &str| num(get(mode).and_then(|m| m.main_after_resolver_ms), 1);
                let _ = writeln!(
                    s,
                    "| {wire} | {} | {} | {} | {} | {} | {} | {} | {}/{}/{} |",
                    num(first("off"), 1),
                    num(first("on"), 1),
                    num(first("speculative"), 1),
                    diff(first("on"), first("off")),
                    diff(first("speculative"), first("off")),
                    after("on"),
                    after("speculative"),
                    calls("off"),
                    calls("on"),
                    calls("speculative"),
                );
            }
        }
        if let Some(m) = &self.mcp_startup {
            let _ = writeln!(
                s,
                "\nThe first main-call request, ms from process start, with the lead granted one stdio MCP server (`mcp-one`) and without (`mcp-none`); the server alone is spawn → tools listed over a raw MCP handshake ({} run(s), median; server: {}):\n",
                m.server_alone_runs_ms.len(),
                m.server.as_deref().unwrap_or("none found"),
            );
            for row in &m.rows {
                let _ = writeln!(s, "{}", row.line());
            }
            for n in &m.notes {
                let _ = writeln!(s, "- {n}");
            }
        }
        let notes: Vec<String> = self
            .results
            .iter()
            .flat_map(|r| {
                r.notes
                    .iter()
                    .map(move |n| format!("- {} {} on {}: {n}", r.harness, r.scenario, r.wire))
            })
            .collect();
        if !notes.is_empty() {
            s.push_str("\nNotes:\n\n");
            for n in notes {
                let _ = writeln!(s, "{n}");
            }
        }
        s.push('\n');
        for o in &self.other_harnesses {
            let _ = match (&o.path, o.measured) {
                (None, _) => writeln!(s, "{}: not found (PATH, --npm-prefix)", o.name),
                (Some(p), false) => {
                    writeln!(
                        s,
                        "{}: found at {p}, not run (no selected wire it speaks, or the runner cannot drive it yet)",
                        o.name
                    )
                }
                (Some(p), true) => writeln!(s, "{}: measured ({p})", o.name),
            };
        }
        s
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn record(start: Instant, at_ms: u64, input: u64, cached: u64, resolver: bool) -> Record {
        Record {
            wire: Wire::Chat,
            at: start + Duration::from_millis(at_ms),
            bytes: input as usize * 4,
            input_tokens: input,
            cached_tokens: cached,
            cache_write_tokens: 0,
            resolver,
            side: false,
            streamed: true,
            step: 0,
            error: None,
        }
    }

    #[test]
    fn figures_of_a_run_with_a_speculative_resolver() {
        let t = Instant::now();
        let run = RunOutcome {
            wall: Duration::from_millis(1000),
            peak_rss_kib: Some(51_200),
            spawned: t,
            failure: None,
            session: SessionMcp::default(),
            records: vec![
                record(t, 100, 800, 0, true),
                record(t, 101, 4000, 0, false),
                record(t, 500, 5000, 3968, false),
                record(t, 520, 6000, 4992, false),
                record(t, 540, 7000, 5888, false),
            ],
        };
        let f = Figures::of(&run, Wire::Chat);
        assert_eq!((f.calls, f.resolver_calls, f.side_calls), (5, 1, 0));
        assert_eq!(f.wall_ms, 1000.0);
        assert_eq!(f.ms_per_call, 200.0);
        // From the second main call (500 ms) to the last (540 ms), two gaps.
        assert_eq!(f.step_gap_ms, Some(20.0));
        assert_eq!(f.first_request_bytes, 16_000);
        assert_eq!(f.total_bytes, 4 * (800 + 4000 + 5000 + 6000 + 7000));
        let after_first = (3968 + 4992 + 5888) as f64 / (5000 + 6000 + 7000) as f64;
        assert_eq!(f.cache_hit_after_first, Some(after_first));
        let overall = (3968 + 4992 + 5888) as f64 / (800 + 4000 + 5000 + 6000 + 7000) as f64;
        assert_eq!(f.cache_hit_overall, Some(overall));
        assert_eq!(f.peak_rss_mib, Some(50.0));
        assert_eq!(f.first_main_request_ms, Some(101.0));
        assert_eq!(f.resolver_request_ms, Some(100.0));
        assert_eq!(f.main_after_resolver_ms, Some(1.0));
        // Chat: priced on the OpenAI models only; gpt-5 bills cached
        // input at a tenth.
        let models: Vec<PricedModel> = f.priced_input.iter().map(|p| p.model).collect();
        assert_eq!(
            models,
            [PricedModel::Gpt5, PricedModel::Gpt41, PricedModel::Gpt4o]
        );
        let cached = (3968 + 4992 + 5888) as f64;
        let uncached = (800 + 4000 + 5000 + 6000 + 7000) as f64 - cached;
        assert!((f.priced_input[0].tokens - (uncached + cached * 0.1)).abs() < 1e-6);
    }

    #[test]
    fn the_table_has_a_priced_column_per_model() {
        let figures = |wire| Figures {
            calls: 3,
            input_tokens: 10_000,
            cached_tokens: 8_000,
            priced_input: pricing::priced(
                wire,
                InputTokens {
                    uncached: 2_000,
                    cached: 8_000,
                    cache_written: 0,
                },
            ),
            ..Figures::default()
        };
        let row = |wire| ScenarioResult {
            harness: "evoflux".into(),
            scenario: "sixty-step".into(),
            wire,
            median: Some(figures(wire)),
            runs: vec![figures(wire)],
            notes: Vec::new(),
        };
        let report = Report {
            harness: "evoflux".into(),
            binary: "evoflux".into(),
            runs: 1,
            resolver_delay_ms: 0,
            main_delay_ms: 0,
            results: vec![row(Wire::Chat), row(Wire::Anthropic)],
            mcp_startup: None,
            other_harnesses: Vec::new(),
        };
        let md = report.markdown();
        let lines: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert!(lines[0].contains(
            "| priced k, gpt-5 | priced k, gpt-4.1 | priced k, gpt-4o | priced k, claude-sonnet-4 |"
        ));
        let cells = |l: &str| l.matches('|').count();
        assert!(lines.iter().all(|l| cells(l) == cells(lines[0])));
        // 2,000 + 8,000 × 0.1, × 0.25, × 0.5; no Anthropic price on chat.
        assert!(lines[2].contains("| 2.8 | 4.0 | 6.0 | – |"), "{}", lines[2]);
        assert!(lines[3].contains("| – | – | – | 2.8 |"), "{}", lines[3]);
        let json = serde_json::to_value(&report).unwrap();
        assert_eq!(
            json["results"][0]["median"]["priced_input"][0],
            serde_json::json!({"model": "gpt-5", "tokens": 2800.0})
        );
    }

    #[test]
    fn the_sixty_step_session_reads_absolute_paths_where_the_harness_needs_them() {
        let dir = tempfile::tempdir().unwrap();
        Scenario::SixtyStep.prepare(dir.path()).unwrap();
        assert!(dir.path().join("src/net/client.rs").is_file());
        assert!(dir.path().join(long_session::BUILD_SCRIPT).is_file());
        for dialect in [Dialect::Claude, Dialect::Evoflux] {
            let script = Scenario::SixtyStep.script(dialect, dir.path());
            assert_eq!(script.steps.len(), long_session::STEPS);
            let text = serde_json::to_string(&script).unwrap();
            let absolute = text.contains(&dir.path().join("src/config.rs").display().to_string());
            assert_eq!(absolute, dialect == Dialect::Claude);
        }
    }

    #[test]
    fn medians_are_taken_field_by_field() {
        let f = |wall: f64, rss: Option<f64>| Figures {
            wall_ms: wall,
            peak_rss_mib: rss,
            calls: 3,
            ..Figures::default()
        };
        let m = medians(&[f(300.0, Some(40.0)), f(100.0, None), f(200.0, Some(60.0))]).unwrap();
        assert_eq!(m.wall_ms, 200.0);
        assert_eq!(m.peak_rss_mib, Some(50.0));
        assert_eq!(m.calls, 3);
        assert!(medians(&[]).is_none());
    }

    #[test]
    fn absorbing_a_measurement_adds_its_runs_and_new_notes() {
        let one = |first: f64, note: &str| ScenarioResult {
            harness: "evoflux".into(),
            scenario: "mcp-one".into(),
            wire: Wire::Chat,
            median: None,
            runs: vec![Figures {
                first_main_request_ms: Some(first),
                ..Figures::default()
            }],
            notes: vec![note.to_owned()],
        };
        let mut r = one(30.0, "a");
        r.absorb(one(10.0, "a"));
        r.absorb(one(20.0, "b"));
        assert_eq!(r.runs.len(), 3);
        assert_eq!(r.median.unwrap().first_main_request_ms, Some(20.0));
        assert_eq!(r.notes, vec!["a".to_owned(), "b".to_owned()]);
    }

    #[test]
    fn the_thirty_files_are_fourteen_thousand_distinct_bytes() {
        let a = file_text(1);
        assert_eq!(a.len(), FILE_BYTES);
        assert!(a.lines().all(|l| l.len() == 69));
        assert_ne!(a, file_text(2));
        assert_eq!(thirty_files().len(), THIRTY);
    }

    #[test]
    fn the_session_events_tell_which_mcp_tools_were_offered() {
        let stdout = concat!(
            "{\"type\":\"mcp_server\",\"server\":\"broken\",\"state\":\"failed\"}\n",
            "not json\n",
            "{\"type\":\"session_started\",\"tools\":[\"read\",\"mcp__bench__echo\",\"shell\"]}\n",
            "{\"type\":\"session_started\",\"tools\":[\"mcp__later__x\"]}\n",
        );
        let s = SessionMcp::of(stdout.as_bytes());
        assert_eq!(s.offered, Some(vec!["mcp__bench__echo".to_owned()]));
        assert_eq!(s.failed, vec!["broken".to_owned()]);
        assert_eq!(SessionMcp::of(b"").offered, None);
    }

    #[test]
    fn the_mcp_scenarios_differ_only_by_the_grant() {
        assert_eq!(Scenario::Mcp(McpMode::One).name(), "mcp-one");
        assert_eq!(Scenario::Mcp(McpMode::None).name(), "mcp-none");
        assert!(Scenario::Mcp(McpMode::None).evoflux_only() && !Scenario::ThreeStep.evoflux_only());
        assert_eq!(mcp_lead_file(McpMode::None), "---\nrole: lead\n---\n");
        assert_eq!(
            mcp_lead_file(McpMode::One),
            "---\nrole: lead\nmcp: [bench]\n---\n"
        );
        let v: serde_json::Value =
            serde_json::from_str(&mcp_json(Path::new("/opt/bin/server"))).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"mcpServers": {"bench": {"type": "stdio", "command": "/opt/bin/server"}}})
        );
    }

    #[test]
    fn the_evoflux_config_points_the_provider_at_the_fake() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let server = FakeServer::start(Script { steps: vec![] }, ServerOptions::default())
                .await
                .unwrap();
            let c = evoflux_config(
                &server,
                Wire::Responses,
                Scenario::Resolver(ResolverMode::Speculative),
                true,
            );
            assert!(c.contains(&format!("base_url = \"http://{}/v1\"", server.addr)));
            assert!(c.contains("kind = \"openai\"") && c.contains("wire_api = \"responses\""));
            assert!(c.contains("[skills]\nresolver = \"speculative\""));
            let a = evoflux_config(&server, Wire::Anthropic, Scenario::ThreeStep, true);
            assert!(a.contains("kind = \"anthropic\""));
            assert!(a.contains(&format!("base_url = \"http://{}\"", server.addr)));
            assert!(!a.contains("[skills]") && !a.contains("wire_api"));
            let m = evoflux_config(&server, Wire::Chat, Scenario::Mcp(McpMode::One), true);
            assert!(m.contains("[skills]\nresolver = \"off\""));
        });
    }
}
