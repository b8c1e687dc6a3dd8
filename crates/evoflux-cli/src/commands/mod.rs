pub mod acp;
pub mod agents;
pub mod chat;
pub mod code_context;
pub mod config;
pub mod credential_input;
pub mod doctor;
pub mod eval;
pub mod fleet;
pub mod graph;
pub mod info;
pub mod mcp;
pub mod model;
pub mod paths;
pub mod plugin;
pub mod replay;
pub mod run;
pub mod schedule;
pub mod serve;
pub mod sessions;
pub mod skills;
pub mod store;
pub mod trust;
pub mod workers;

use evoflux_app::{AppContext, CompiledGraph};
use evoflux_core::Diagnostics;
use evoflux_core::dirs::Dirs;
use evoflux_graph::BuiltinRegistry;
use std::sync::Arc;

use crate::cli::SourceArgs;
use crate::output::{Exit, Output};

/// Resolves the directories, or reports why not and yields the exit code.
pub fn resolve_dirs(out: &Output) -> Result<Dirs, Exit> {
    let dirs = Dirs::from_env()
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
        })?;
    private_dirs(out, &dirs);
    Ok(dirs)
}

/// The data and cache folders hold transcripts, command output and
/// credentials: they are created for their owner alone, and one that
/// others can read is tightened, with a notice.
fn private_dirs(out: &Output, dirs: &Dirs) {
    let mut notices = Diagnostics::new();
    for dir in [dirs.data_dir(), dirs.cache_dir()] {
        let done = evoflux_core::private::create_private_dir(dir)
            .and_then(|()| evoflux_core::private::tighten(dir));
        match done {
            Ok(None) => {}
            Ok(Some(old)) => notices.push(
                evoflux_core::Diagnostic::warning(
                    "dirs/mode-tightened",
                    format!(
                        "{} was readable by others (mode {old:o}); it holds transcripts and credentials, so it is now 700",
                        dir.display()
                    ),
                )
                .with_file(dir),
            ),
            Err(e) => notices.push(
                evoflux_core::Diagnostic::warning(
                    "dirs/not-private",
                    format!("cannot make {} private: {e}", dir.display()),
                )
                .with_file(dir),
            ),
        }
    }
    if !notices.is_empty() {
        out.diagnostics(&notices);
    }
}

/// The application context of this process: its directories, `$HOME`
/// and the current directory. Every session and compile goes through it.
pub fn app_context(dirs: &Dirs) -> anyhow::Result<AppContext> {
    Ok(AppContext {
        dirs: dirs.clone(),
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(std::path::PathBuf::from),
        cwd: std::env::current_dir()?,
        trusted_checkouts: Vec::new(),
        // External agents are reached over the Agent Client Protocol.
        remote_agents: Some(Arc::new(evoflux_acp::AcpRemoteAgents)),
        database_url: std::env::var("EVOFLUX_DATABASE_URL")
            .ok()
            .filter(|u| !u.trim().is_empty()),
        artifacts_url: std::env::var("EVOFLUX_ARTIFACTS_URL")
            .ok()
            .filter(|u| !u.trim().is_empty()),
    })
}

/// Every builtin registry the binary ships: the framework defaults and the
/// bundled skills. Compiling and loading graphs always use this one set.
pub fn registries() -> Vec<BuiltinRegistry> {
    AppContext::registries()
}

/// The compile step: the standard roots for these directories and
/// workspaces, with every registry.
pub fn compile_graph(dirs: &Dirs, sources: &SourceArgs) -> anyhow::Result<CompiledGraph> {
    Ok(app_context(dirs)?.compile(&sources.workspaces)?)
}
