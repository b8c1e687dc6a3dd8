pub mod agents;
pub mod config;
pub mod graph;
pub mod info;
pub mod mcp;
pub mod model;
pub mod paths;
pub mod plugin;
pub mod run;
pub mod skills;
pub mod workers;

use evoflux_core::Diagnostics;
use evoflux_core::dirs::Dirs;
use evoflux_graph::{BuiltinRegistry, CompiledGraph, RootOptions};
use evoflux_plugins::{PluginManager, PluginPaths};

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

/// Resolves the directories, or reports why not and yields the exit code.
pub fn resolve_dirs(out: &Output) -> Result<Dirs, Exit> {
    Dirs::from_env()
        .inspect(|d| {
            tracing::debug!(
                config = %d.config_dir().display(),
                data = %d.data_dir().display(),
                cache = %d.cache_dir().display(),
                "directories resolved"
            );
        })
        .map_err(|e| {
            out.diagnostics(&Diagnostics::from(vec![e.to_diagnostic()]));
            Exit::Failure
        })
}

/// The roots to compile: enabled plugins, admin and user directories, the
/// user's compatible skill roots below `$HOME`, and the workspaces
/// (default: the current directory).
pub fn root_options(dirs: &Dirs, sources: &SourceArgs) -> anyhow::Result<RootOptions> {
    let workspaces = if sources.workspaces.is_empty() {
        vec![std::env::current_dir()?]
    } else {
        sources
            .workspaces
            .iter()
            .map(|w| {
                std::fs::canonicalize(w)
                    .map_err(|e| anyhow::anyhow!("workspace `{}` cannot be used: {e}", w.display()))
            })
            .collect::<anyhow::Result<_>>()?
    };
    Ok(RootOptions {
        admin_dir: Some(dirs.admin_dir().to_path_buf()),
        user_config_dir: Some(dirs.config_dir().to_path_buf()),
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(std::path::PathBuf::from),
        workspaces,
        // Enabled installed, linked and bundled plugins; problems with the
        // registry are reported by `evoflux plugin list`.
        plugins: PluginManager::new(PluginPaths::from_dirs(dirs))
            .enabled_plugin_roots()
            .0,
    })
}

/// Every builtin registry the binary ships: the framework defaults and the
/// bundled skills. Compiling and loading graphs always use this one set.
pub fn registries() -> Vec<BuiltinRegistry> {
    vec![
        BuiltinRegistry::framework(),
        evoflux_skills::bundled::registry(),
    ]
}

/// The compile step: the standard roots for these directories and
/// workspaces, with every registry.
pub fn compile_graph(dirs: &Dirs, sources: &SourceArgs) -> anyhow::Result<CompiledGraph> {
    let opts = root_options(dirs, sources)?;
    Ok(evoflux_graph::compile(
        &registries(),
        &evoflux_graph::discover::standard_roots(&opts),
    )?)
}
