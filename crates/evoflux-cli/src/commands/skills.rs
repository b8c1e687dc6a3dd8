//! `evoflux skills`: list, show, validate, catalog, eval and preferences.
//!
//! Everything reads the compiled graph (one winner per slot plus its
//! ordered shadowed candidates) through `evoflux_skills::selection`; the
//! projections then decide what Settings and the runtime see.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use evoflux_app::skills_view::{Depth, SkillsView};
use evoflux_core::{AppMode, Diagnostics};
use evoflux_skills::catalog::{CatalogRequest, build_catalog};
use evoflux_skills::projection::runtime_projection;
use evoflux_skills::{PrefsPatch, SkillRecord, ValidationLevel, validate_path};
use serde::Serialize;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// List skills as Settings sees them (the winner of each slot, even if invalid).
    List(ScopeArgs),
    /// Show one skill: every candidate for its slot, in precedence order.
    Show {
        name: String,
        #[command(flatten)]
        scope: ScopeArgs,
    },
    /// Validate a skill folder or SKILL.md against the Agent Skills rules; exit 3 on errors.
    Validate {
        path: PathBuf,
        /// Use evoflux's lenient runtime rules instead of the strict public ones.
        #[arg(long)]
        runtime: bool,
    },
    /// Print the Tier-1 catalog the model would see in a mode.
    Catalog {
        #[arg(long, value_parser = parse_mode)]
        mode: AppMode,
        /// The model's context window in tokens (budget = 2% of it; default 8,000 bytes).
        #[arg(long)]
        context_window: Option<u64>,
        /// Rank by this request, as the latest user message would.
        #[arg(long)]
        request: Option<String>,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Run the bundled skills' activation evals through the deterministic ranking.
    Eval,
    /// Read, change or reset a skill's runtime preferences (never its files).
    Prefs {
        #[command(subcommand)]
        command: PrefsCommand,
    },
}

#[derive(Debug, Args)]
pub struct ScopeArgs {
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<AppMode>,
    #[command(flatten)]
    pub sources: SourceArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

impl Switch {
    fn on(self) -> bool {
        match self {
            Switch::On => true,
            Switch::Off => false,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum PrefsCommand {
    /// Print a skill's effective preferences.
    Get {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Change some of a skill's preferences; the others stay.
    Set {
        name: String,
        /// Available in Work mode.
        #[arg(long)]
        work: Option<Switch>,
        /// Available in Coding mode.
        #[arg(long)]
        coding: Option<Switch>,
        /// Offered to the model in the catalog and the implicit resolver.
        #[arg(long)]
        implicit: Option<Switch>,
        /// Addressable by `$name` and `/skill:name`.
        #[arg(long)]
        manual: Option<Switch>,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Forget a skill's preferences, so its bundle defaults apply again.
    Reset {
        name: String,
        #[command(flatten)]
        sources: SourceArgs,
    },
}

fn parse_mode(s: &str) -> Result<AppMode, String> {
    s.parse()
        .map_err(|e: evoflux_core::mode::ParseModeError| e.to_string())
}

type Loaded = SkillsView;

fn load(out: &Output, sources: &SourceArgs, depth: Depth) -> anyhow::Result<Result<Loaded, Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    Ok(Ok(
        super::app_context(&dirs)?.skills_view(&sources.workspaces, depth)?
    ))
}

fn short(s: &str, n: usize) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if s.chars().count() <= n {
        s
    } else {
        s.chars().take(n.saturating_sub(1)).collect::<String>() + "…"
    }
}

pub fn run(out: &Output, command: &SkillsCommand) -> anyhow::Result<Exit> {
    match command {
        SkillsCommand::List(scope) => list(out, scope),
        SkillsCommand::Show { name, scope } => show(out, name, scope),
        SkillsCommand::Validate { path, runtime } => validate(out, path, *runtime),
        SkillsCommand::Catalog {
            mode,
            context_window,
            request,
            sources,
        } => catalog(out, *mode, *context_window, request.as_deref(), sources),
        SkillsCommand::Eval => eval(out),
        SkillsCommand::Prefs { command } => prefs(out, command),
    }
}

fn eval(out: &Output) -> anyhow::Result<Exit> {
    let report = evoflux_skills::evals::run_evals(evoflux_skills::bundled::bundled());
    out.diagnostics(&report.diagnostics);
    out.result(&report, || {
        let mut text = String::new();
        for s in &report.skills {
            let _ = writeln!(
                text,
                "{:<18} positives {}/{}  negatives {}/{}",
                s.name, s.positives.hit, s.positives.total, s.negatives.hit, s.negatives.total
            );
            for m in &s.misses {
                let _ = writeln!(
                    text,
                    "  miss: {:?} (should trigger: {}, ranked first: {})",
                    m.request,
                    m.should_trigger,
                    m.ranked_first.as_deref().unwrap_or("nothing")
                );
            }
        }
        let t = report.total();
        let _ = writeln!(
            text,
            "total {}/{} ({:.1}%)",
            t.hit,
            t.total,
            report.hit_rate() * 100.0
        );
        text
    });
    Ok(if report.diagnostics.has_errors() {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}

fn list(out: &Output, scope: &ScopeArgs) -> anyhow::Result<Exit> {
    let loaded = match load(out, &scope.sources, Depth::Settled)? {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    let rows = loaded.rows(scope.mode);
    out.diagnostics(&loaded.diagnostics);
    out.result(&rows, || {
        let mut text = String::new();
        for r in &rows {
            let modes = serde_json::to_value(r.modes)
                .ok()
                .and_then(|v| {
                    v.as_array().map(|a| {
                        a.iter()
                            .filter_map(|m| m.as_str())
                            .collect::<Vec<_>>()
                            .join("+")
                    })
                })
                .unwrap_or_default();
            let state = if r.valid { "" } else { "  [invalid]" };
            let _ = writeln!(
                text,
                "{:<24} {:<16} {:<12} {}{state}",
                r.name,
                r.source,
                if modes.is_empty() { "off" } else { &modes },
                short(&r.description, 60)
            );
        }
        if rows.is_empty() {
            text.push_str("no skills\n");
        }
        text
    });
    Ok(Exit::Ok)
}

#[derive(Serialize)]
struct Shown<'a> {
    name: &'a str,
    candidates: &'a [SkillRecord],
}

fn show(out: &Output, name: &str, scope: &ScopeArgs) -> anyhow::Result<Exit> {
    let loaded = match load(out, &scope.sources, Depth::All)? {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    let Some(slot) = loaded.slot(name) else {
        anyhow::bail!("no skill named `{name}`: `evoflux skills list` shows the available ones");
    };
    out.result(
        &Shown {
            name,
            candidates: &slot.candidates,
        },
        || {
            let mut text = String::new();
            for (i, c) in slot.candidates.iter().enumerate() {
                let role = if i == 0 { "winner" } else { "shadowed" };
                let _ = writeln!(
                    text,
                    "{role}: {} ({}){}\n  {}\n  file: {}\n  settings id: {}",
                    c.name,
                    c.origin.source.label(),
                    if c.valid { "" } else { " [invalid]" },
                    short(&c.description, 100),
                    c.skill_file.display(),
                    c.settings_id.as_str()
                );
                for d in &c.diagnostics {
                    text.push_str(&d.render_human());
                }
            }
            text
        },
    );
    Ok(Exit::Ok)
}

fn validate(out: &Output, path: &std::path::Path, runtime: bool) -> anyhow::Result<Exit> {
    let level = if runtime {
        ValidationLevel::Runtime
    } else {
        ValidationLevel::Strict
    };
    let report = validate_path(path, level);
    if out.json {
        out.result(&report, String::new);
    } else {
        out.diagnostics(&report.diagnostics);
        if report.valid {
            out.result(&(), || format!("ok: {}\n", report.skill_file.display()));
        }
    }
    Ok(if report.valid {
        Exit::Ok
    } else {
        Exit::Invalid
    })
}

fn catalog(
    out: &Output,
    mode: AppMode,
    context_window: Option<u64>,
    request: Option<&str>,
    sources: &SourceArgs,
) -> anyhow::Result<Exit> {
    let loaded = match load(out, sources, Depth::Settled)? {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    let (records, dups) =
        runtime_projection(loaded.slots.iter().map(|s| s.candidates.as_slice()), mode);
    out.diagnostics(&dups);
    let catalog = build_catalog(
        &records,
        &CatalogRequest {
            mode,
            context_window_tokens: context_window,
            latest_request: request,
            assigned: &[],
        },
    );
    out.result(
        &serde_json::json!({"text": catalog.text, "report": catalog.report}),
        || {
            if catalog.text.is_empty() {
                "no skills are eligible for the catalog in this mode\n".to_owned()
            } else {
                format!("{}\n", catalog.text.trim_end())
            }
        },
    );
    Ok(Exit::Ok)
}

fn prefs(out: &Output, command: &PrefsCommand) -> anyhow::Result<Exit> {
    let (name, sources) = match command {
        PrefsCommand::Get { name, sources }
        | PrefsCommand::Set { name, sources, .. }
        | PrefsCommand::Reset { name, sources } => (name, sources),
    };
    let loaded = match load(out, sources, Depth::Settled)? {
        Ok(l) => l,
        Err(exit) => return Ok(exit),
    };
    let Some(record) = loaded.slot(name).and_then(|s| s.candidates.first()) else {
        anyhow::bail!("no skill named `{name}`: `evoflux skills list` shows the available ones");
    };
    let settings_error = |e: evoflux_skills::overlay::SettingsError| {
        let d =
            evoflux_core::Diagnostic::error(e.code(), e.to_string()).with_file(loaded.store.path());
        out.diagnostics(&Diagnostics::from(vec![d]));
        Exit::Failure
    };
    let prefs = match command {
        PrefsCommand::Get { .. } => record.prefs,
        PrefsCommand::Set {
            work,
            coding,
            implicit,
            manual,
            ..
        } => {
            let modes = match (work, coding) {
                (None, None) => None,
                _ => {
                    let mut m = record.prefs.modes;
                    for (switch, mode) in [(work, AppMode::Work), (coding, AppMode::Coding)] {
                        m = match switch.map(|s| s.on()) {
                            Some(true) => m.with(mode),
                            Some(false) => m.without(mode),
                            None => m,
                        };
                    }
                    Some(m)
                }
            };
            let patch = PrefsPatch {
                modes,
                allow_implicit_invocation: implicit.map(Switch::on),
                user_invocable: manual.map(Switch::on),
            };
            match loaded.store.set(record, patch) {
                Ok(p) => p,
                Err(e) => return Ok(settings_error(e)),
            }
        }
        PrefsCommand::Reset { .. } => match loaded.store.reset(&record.settings_id) {
            Ok(_) => record.defaults,
            Err(e) => return Ok(settings_error(e)),
        },
    };
    out.result(
        &serde_json::json!({"name": record.name, "settings_id": record.settings_id.as_str(), "prefs": prefs}),
        || {
            format!(
                "{}: modes {}, implicit {}, manual {}\n",
                record.name,
                serde_json::to_string(&prefs.modes).unwrap_or_default(),
                if prefs.allow_implicit_invocation { "on" } else { "off" },
                if prefs.user_invocable { "on" } else { "off" },
            )
        },
    );
    Ok(Exit::Ok)
}
