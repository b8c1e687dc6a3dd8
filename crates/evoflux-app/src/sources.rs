//! The folders whose files are a session's sources, for the engine's
//! source watch ([`evoflux_harness::sources`]): the admin and user config
//! folders, each workspace's `.evoflux/` (and the workspace itself, to see
//! `.evoflux/` appear), and the plugin registry's folder, which `evoflux
//! plugin` in another process changes. [`AppContext::source_roots`] is the
//! one list; the server's live reload watches it too.

use std::path::PathBuf;

use evoflux_harness::sources::SourceRoot;

use crate::AppContext;

impl AppContext {
    /// The folders whose files are the sources of sessions on
    /// `workspaces`, those that exist.
    pub fn source_roots(&self, workspaces: &[PathBuf]) -> Vec<SourceRoot> {
        let mut out = Vec::new();
        if let Some(registry) = self.plugins().paths().registry_file().parent() {
            out.push(SourceRoot::folder(registry.to_path_buf(), false));
        }
        if let Ok(options) = self.root_options(workspaces) {
            for dir in [options.admin_dir, options.user_config_dir]
                .into_iter()
                .flatten()
            {
                out.push(SourceRoot::folder(dir, true));
            }
        }
        for w in workspaces {
            out.push(SourceRoot::folder(w.join(".evoflux"), true));
            out.push(SourceRoot {
                path: w.clone(),
                recursive: false,
                only: Some(w.join(".evoflux")),
            });
        }
        out.retain(|r| r.path.is_dir());
        out
    }
}
