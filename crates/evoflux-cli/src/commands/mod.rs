pub mod config;
pub mod paths;

use evoflux_core::Diagnostics;
use evoflux_core::dirs::Dirs;

use crate::output::{Exit, Output};

/// Resolves the directories, or reports why not and yields the exit code.
pub fn resolve_dirs(out: &Output) -> Result<Dirs, Exit> {
    Dirs::from_env().map_err(|e| {
        out.diagnostics(&Diagnostics::from(vec![e.to_diagnostic()]));
        Exit::Failure
    })
}
