//! `evoflux config show` and `evoflux config check`.

use std::fmt::Write as _;

use evoflux_app::CompiledGraph;
use evoflux_core::Diagnostics;
use evoflux_core::config::{Approval, ConfigOrigin, LoadedConfig};
use serde::Serialize;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

/// The selected config: the winner of the graph's `config` slot (project
/// over user over admin over the embedded default), the diagnostics of
/// that slot, and the path of the user's file for messages.
/// The user's config path, the selected config (when it has no errors) and
/// the config slot's diagnostics.
type Selected = (std::path::PathBuf, Option<LoadedConfig>, Diagnostics);

fn load(out: &Output, sources: &SourceArgs) -> anyhow::Result<Result<Selected, Exit>> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let graph = super::compile_graph(&dirs, sources)?;
    let (loaded, diags) = selected(&graph);
    Ok(Ok((dirs.config_file(), loaded, diags)))
}

/// The graph's `config` winner and that slot's diagnostics (the one rule
/// lives beside the session builder, which uses it too).
pub fn selected(graph: &CompiledGraph) -> (Option<LoadedConfig>, Diagnostics) {
    evoflux_app::selected_config(graph)
}

pub fn show(out: &Output, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let (path, loaded, diags) = match load(out, sources)? {
        Ok(v) => v,
        Err(exit) => return Ok(exit),
    };
    out.diagnostics(&diags);
    let Some(loaded) = loaded else {
        return Ok(Exit::Invalid);
    };
    let human = || -> anyhow::Result<String> {
        let mut text = String::new();
        if loaded.files.is_empty() {
            writeln!(
                text,
                "# no config file at {}: embedded defaults",
                path.display()
            )?;
        }
        for f in &loaded.files {
            writeln!(text, "# {}: {}", origin(f.origin), f.path.display())?;
        }
        writeln!(text, "\n[model] # {}", origin(loaded.model_origin))?;
        writeln!(text, "default = \"{}\"", loaded.config.model.default)?;
        let floors = &loaded.config.approval_floor;
        if !loaded.config.approval.is_empty() || !floors.is_empty() {
            writeln!(text, "\n[approval]")?;
            for (tool, policy) in &loaded.config.approval {
                writeln!(text, "{tool} = \"{}\"", approval(*policy))?;
            }
            for (tool, policy) in floors {
                writeln!(
                    text,
                    "# {tool}: at least \"{}\" (a repository's floor)",
                    approval(*policy)
                )?;
            }
        }
        for (name, provider) in &loaded.config.providers {
            let origin = loaded
                .provider_origins
                .get(name)
                .copied()
                .unwrap_or(ConfigOrigin::Embedded);
            writeln!(text, "\n[providers.{name}] # {}", self::origin(origin))?;
            text.push_str(&toml::to_string(provider)?);
        }
        Ok(text)
    };
    let text = human()?;
    out.result(&loaded, || text);
    Ok(Exit::Ok)
}

fn origin(o: ConfigOrigin) -> &'static str {
    match o {
        ConfigOrigin::Embedded => "embedded default",
        ConfigOrigin::Admin => "admin config",
        ConfigOrigin::User => "user config",
        ConfigOrigin::Project => "repository config",
    }
}

fn approval(a: Approval) -> &'static str {
    match a {
        Approval::Never => "never",
        Approval::OnRequest => "on-request",
        Approval::Always => "always",
    }
}

#[derive(Serialize)]
struct CheckReport<'a> {
    ok: bool,
    file: &'a std::path::Path,
    exists: bool,
    diagnostics: &'a Diagnostics,
}

pub fn check(out: &Output, sources: &SourceArgs) -> anyhow::Result<Exit> {
    let (user_path, loaded, diags) = match load(out, sources)? {
        Ok(v) => v,
        Err(exit) => return Ok(exit),
    };
    let ok = loaded.is_some();
    // The file that decides: the winner, or the first file with errors.
    let decisive = loaded
        .as_ref()
        .and_then(|l| l.file().map(std::path::Path::to_path_buf))
        .or_else(|| diags.iter().find_map(|d| d.locator.file.clone()));
    let exists = decisive.is_some();
    let path = decisive.unwrap_or(user_path);
    if out.json {
        out.result(
            &CheckReport {
                ok,
                file: &path,
                exists,
                diagnostics: &diags,
            },
            String::new,
        );
    } else {
        out.diagnostics(&diags);
        if ok {
            out.result(&(), || match exists {
                true => format!("ok: {}\n", path.display()),
                false => format!(
                    "ok: no config file at {}; embedded defaults apply\n",
                    path.display()
                ),
            });
        }
    }
    Ok(if ok { Exit::Ok } else { Exit::Invalid })
}
