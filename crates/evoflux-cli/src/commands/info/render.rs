//! `evoflux info` for people: the graph's projection ([`Info`], whose
//! JSON shape the graph fixes) as text — config and sandbox, repositories
//! and their trust, teams, tools with their handling, every other slot
//! kind, routes, composition and diagnostics. The words are the command
//! line's; the model is `evoflux-graph`'s.

use evoflux_core::trust::TrustState;
use evoflux_graph::SourceId;
use evoflux_graph::compose::EntryKind;
use evoflux_graph::info::{Info, InfoExecutor, InfoSource};
use evoflux_graph::sandbox::{FilesystemPolicy, NetworkPolicy};
use evoflux_graph::tool::Handling;

/// The `info` projection as text for people.
pub fn render_human(info: &Info) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let short = info.graph_hash.get(..12).unwrap_or(&info.graph_hash);
    let _ = writeln!(out, "evoflux info — graph {short} ({})", info.status);
    if let Some(m) = info.mode {
        let _ = writeln!(out, "mode: {m}");
    }
    let origin = |s: &InfoSource| format!("{} {}", s.layer, s.source_id);
    if let Some(c) = &info.config {
        let _ = writeln!(
            out,
            "\nconfig   {}, delegation up to depth {}  [{}]",
            c.default_model,
            c.teams.max_depth,
            origin(&c.source)
        );
    }
    if let Some(s) = &info.sandbox {
        let net = match s.network {
            NetworkPolicy::Allow => "allow",
            NetworkPolicy::Deny => "deny",
        };
        let fs = match s.filesystem {
            FilesystemPolicy::ReadOnly => "read-only",
            FilesystemPolicy::WorkspaceWrite => "workspace-write",
            FilesystemPolicy::FullAccess => "full-access",
        };
        let _ = writeln!(
            out,
            "sandbox  {fs}, network {net}, commands up to {}s, journals up to {} MiB  [{}]",
            s.max_timeout_seconds,
            s.journal_cap_mib,
            origin(&s.source)
        );
    }
    if let Some(m) = &info.mcp_bounds {
        let _ = writeln!(
            out,
            "mcp      results up to {} MiB{}, {}s per call, {}s to start (an entry's \
             startup_timeout_secs can raise it)",
            m.max_result_mib,
            if m.max_result_set {
                " ([mcp] max_result_mib)"
            } else {
                ""
            },
            m.call_timeout_secs,
            m.start_timeout_secs
        );
    }
    for file in &info.user_instructions {
        let _ = writeln!(out, "user instructions  {}", file.display());
    }
    for r in &info.repositories {
        let state = match &r.trust {
            TrustState::Trusted => "trusted".to_owned(),
            TrustState::Untrusted => "not trusted: its command tools, MCP servers, channels and \
                                      schedules wait, and its config may only tighten"
                .to_owned(),
            TrustState::RemoteChanged { recorded, current } => format!(
                "not trusted: its remote changed from {} to {} since you trusted it",
                recorded.as_deref().unwrap_or("none"),
                current.as_deref().unwrap_or("none")
            ),
        };
        let _ = writeln!(out, "repository  {}  {state}", r.path.display());
        for file in &r.instructions {
            let _ = writeln!(out, "  instructions  {}", file.display());
        }
    }
    for t in &info.teams {
        let members: Vec<&str> = t.members.iter().map(|m| m.name.as_str()).collect();
        let _ = writeln!(
            out,
            "team ({})  lead {}: {}{}",
            t.mode,
            t.lead,
            if members.is_empty() {
                "no members".to_owned()
            } else {
                members.join(", ")
            },
            if t.workers.is_empty() {
                String::new()
            } else {
                let names: Vec<&str> = t.workers.iter().map(|w| w.name.as_str()).collect();
                format!("; workers {}", names.join(", "))
            }
        );
    }
    // Remote agents are reached by every lead: one line each.
    let mut shown_remote = std::collections::BTreeSet::new();
    for r in &info.remote_agents.entries {
        if !shown_remote.insert(r.name.as_str()) {
            continue;
        }
        let _ = writeln!(
            out,
            "remote agent  {} over {}: {}  ({}, {}, {}s to start, {}s idle; declared in {})",
            r.name,
            r.protocol,
            r.command.join(" "),
            r.cwd,
            r.result_contract,
            r.start_timeout_secs,
            r.idle_timeout_secs,
            r.provenance
                .path
                .as_ref()
                .map_or_else(|| "config".to_owned(), |p| p.display().to_string())
        );
    }
    if !info.awaiting_trust.is_empty() {
        let _ = writeln!(
            out,
            "\nawaiting trust ({}): not loaded until you trust the repository (evoflux trust)",
            info.awaiting_trust.len()
        );
        for e in &info.awaiting_trust {
            let at = e
                .file
                .as_ref()
                .map_or_else(|| e.source_id.to_string(), |f| f.display().to_string());
            let _ = writeln!(out, "  {}  {at}", e.slot);
        }
    }
    let _ = writeln!(out, "\ntools ({})", info.tools.total);
    for t in &info.tools.entries {
        let how = match (&t.handling, &t.executor) {
            (Handling::None, InfoExecutor::Builtin { executor }) => serde_json::to_value(executor)
                .ok()
                .and_then(|v| v.as_str().map(|s| format!("builtin {s}")))
                .unwrap_or_default(),
            (Handling::None, InfoExecutor::Command { argv0 }) => format!("command {argv0}"),
            (Handling::None, InfoExecutor::Native) => "native".to_owned(),
            (Handling::RequestInput { .. }, _) => "request-input".to_owned(),
            (Handling::Dispatch { action }, _) => serde_json::to_value(action)
                .ok()
                .and_then(|v| v.as_str().map(|s| format!("dispatch {s}")))
                .unwrap_or_default(),
            (Handling::ProviderTool { .. }, _) => "provider-tool web-search".to_owned(),
        };
        let _ = write!(out, "  {:<14} {:<26} [{}]", t.name, how, origin(&t.source));
        if let Some(why) = t.unavailable_reason {
            let _ = write!(out, "  (not in this build: {why})");
        }
        if let Some(needs) = t.needs_provider {
            let _ = write!(out, "  (needs {needs})");
        }
        out.push('\n');
    }
    for (title, list) in [
        ("skills", &info.skills),
        ("agents", &info.agents),
        ("workers", &info.workers),
        ("fleets", &info.fleets),
        ("evals", &info.evals),
    ] {
        if list.total > 0 {
            let _ = writeln!(out, "\n{title} ({})", list.total);
            for e in &list.entries {
                let _ = writeln!(out, "  {:<24} [{}]", e.name, origin(&e.source));
            }
        }
    }
    if info.schedules.total > 0 {
        let _ = writeln!(out, "\nschedules ({})", info.schedules.total);
        for s in &info.schedules.entries {
            let when = s.trigger.to_string();
            let _ = writeln!(
                out,
                "  {:<24} {:<30} {}{} [{}]",
                s.name,
                when,
                s.mode,
                if s.enabled { "" } else { " (disabled)" },
                origin(&s.source)
            );
        }
    }
    if info.connections.total > 0 {
        let _ = writeln!(out, "\nconnections ({})", info.connections.total);
        for c in &info.connections.entries {
            let _ = writeln!(
                out,
                "  {:<24} {:<16} [{}]",
                c.name,
                c.transport,
                origin(&c.source)
            );
            if let Some(w) = &c.webbridge {
                let _ = writeln!(out, "    {}", webbridge_line(w));
            }
        }
    }
    if !info.plugin_mcp_servers.is_empty() {
        let _ = writeln!(
            out,
            "\nplugin MCP servers ({})",
            info.plugin_mcp_servers.len()
        );
        for p in &info.plugin_mcp_servers {
            let _ = writeln!(out, "  {:<24} plugin {}", p.name, p.plugin);
            let _ = writeln!(out, "    {}", webbridge_line(&p.webbridge));
        }
    }
    let _ = writeln!(out, "\nroutes ({})", info.routes.total);
    for r in &info.routes.effective {
        let _ = writeln!(
            out,
            "  {:<7} {:<32} [{}]",
            r.method.as_str(),
            r.path,
            r.source_id
        );
    }
    for p in &info.routes.preflights {
        let _ = writeln!(out, "  OPTIONS {:<32} (CORS preflight)", p.path);
    }
    if !info.composition.is_empty() {
        let _ = writeln!(out, "\ncomposition");
        for e in &info.composition {
            let winner = e.winner_source_id.as_ref().map(SourceId::as_str);
            let _ = match (e.kind, winner) {
                (EntryKind::Shadowed, Some(w)) => writeln!(
                    out,
                    "  shadowed {} ({} {}) by {w}",
                    e.slot, e.layer, e.source_id
                ),
                (EntryKind::Layered, Some(w)) => writeln!(
                    out,
                    "  layered  {} ({} {}) under {w}",
                    e.slot, e.layer, e.source_id
                ),
                (EntryKind::Disabled, _) => {
                    writeln!(out, "  disabled {} by {}", e.slot, e.source_id)
                }
                (EntryKind::AwaitingTrust, _) => {
                    writeln!(out, "  awaiting trust {} ({})", e.slot, e.source_id)
                }
                (EntryKind::Shadowed | EntryKind::Layered, None) => Ok(()),
            };
        }
    }
    let _ = writeln!(
        out,
        "\ndiagnostics: {} errors, {} warnings",
        info.diagnostics.errors, info.diagnostics.warnings
    );
    for d in &info.diagnostics.items {
        out.push_str(&d.render_human());
    }
    out
}

/// A server's standing in WebBridge conversations, on one line: offered,
/// or hidden with why and its code.
fn webbridge_line(w: &evoflux_graph::info::InfoWebBridge) -> String {
    match w {
        evoflux_graph::info::InfoWebBridge::Offered => {
            "webbridge: offered (its plugin declares webbridge-safe)".to_owned()
        }
        evoflux_graph::info::InfoWebBridge::Hidden { code, reason } => {
            format!("webbridge: hidden ({code}) — {reason}")
        }
    }
}
