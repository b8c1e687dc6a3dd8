//! The application sessions run in ([`AppContext`]): its directories,
//! the compile of the sources a session reads, and the store. Every front
//! end builds one and opens sessions with it ([`crate::SessionBuilder`]);
//! what the application knows about trust, teams and maintenance is added
//! to it by the modules named after them ([`crate::trust_review`],
//! [`crate::maintenance`], [`crate::sources`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use evoflux_core::config::ForeignMcp;
use evoflux_core::dirs::Dirs;
use evoflux_core::trust::{Trust, repository_root};
use evoflux_graph::{BuiltinRegistry, CompiledGraph, RootOptions};
use evoflux_plugins::{PluginManager, PluginPaths};
use evoflux_store::{Database, Store};

use crate::SessionError;

/// The application sessions run in: its directories, the user's home (for
/// compatible skill roots) and the directory it was started in. Front ends
/// build it once; nothing below reads the process environment.
#[derive(Debug, Clone)]
pub struct AppContext {
    pub dirs: Dirs,
    pub home: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Repositories trusted for this process only, never written to the
    /// trust list: a replay's checkout of a repository the user trusts,
    /// held to what the user granted that repository.
    pub trusted_checkouts: Vec<TrustedCheckout>,
    /// What starts the external agents of `[agents.external]` (the Agent
    /// Client Protocol, from `evoflux-acp`): with it, leads may dispatch
    /// them as remote workers; without it, they are in no team.
    pub remote_agents: Option<Arc<dyn evoflux_harness::remote::RemoteAgents>>,
    /// The session database named by the process environment
    /// (`EVOFLUX_DATABASE_URL`), over `[store] url`; `None` defers to the
    /// config.
    pub database_url: Option<String>,
    /// The artifact store named by the process environment
    /// (`EVOFLUX_ARTIFACTS_URL`), over `[store] artifacts`.
    pub artifacts_url: Option<String>,
}

/// A copy of a repository the user trusts, trusted for this process as the
/// repository it was made from ([`AppContext::inherit_trust`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrustedCheckout {
    /// The copy's root.
    pub path: PathBuf,
    /// The trusted repository it was made from, whose grants hold for it.
    pub original: PathBuf,
}

impl AppContext {
    /// Every builtin registry the application ships: the framework
    /// defaults and the bundled skills.
    pub fn registries() -> Vec<BuiltinRegistry> {
        vec![
            BuiltinRegistry::framework(),
            evoflux_skills::bundled::registry(),
        ]
    }

    /// The roots to compile: enabled plugins, admin and user directories,
    /// the user's compatible skill roots below home, and the workspaces
    /// (default: the start directory).
    pub fn root_options(&self, workspaces: &[PathBuf]) -> Result<RootOptions, SessionError> {
        let workspaces = if workspaces.is_empty() {
            vec![self.cwd.clone()]
        } else {
            canonical(&self.cwd, workspaces)?
        };
        let trust = self.trust_list()?;
        let trusted = workspaces
            .iter()
            .map(|ws| repository_root(ws))
            .filter(|repo| {
                trust.state(repo).trust() == Trust::Trusted
                    || self.trusted_checkouts.iter().any(|c| c.path == *repo)
            })
            .collect();
        Ok(RootOptions {
            admin_dir: Some(self.dirs.admin_dir().to_path_buf()),
            user_config_dir: Some(self.dirs.config_dir().to_path_buf()),
            home: self.home.clone(),
            workspaces,
            trusted,
            // Enabled installed, linked and bundled plugins; problems with
            // the registry are reported by the plugin commands.
            plugins: self.plugins().enabled_plugin_roots().0,
            // Which harnesses' MCP files join is the owner's say, so it is
            // read before the compile; a broken config file is reported
            // by the compile itself, which then reads the defaults.
            foreign_mcp: self
                .owner_config()
                .map_or_else(|_| ForeignMcp::ALL.to_vec(), |c| c.compat.mcp),
        })
    }

    /// The compile step: the standard roots for these workspaces, with
    /// every registry, each trusted repository held to what the user
    /// granted it (a source changed or added since waits for trust again).
    pub fn compile(&self, workspaces: &[PathBuf]) -> Result<CompiledGraph, SessionError> {
        let opts = self.root_options(workspaces)?;
        let grants = self.trust_grants(&opts.trusted)?;
        evoflux_graph::compile_with_grants(
            &Self::registries(),
            &evoflux_graph::discover::standard_roots(&opts),
            &grants,
        )
        .map(|(graph, _)| graph)
        .map_err(|e| SessionError::Compile(Box::new(e)))
    }

    /// The retention policy of the data directory: `[storage]` of the
    /// admin's and the user's config.toml, layered as every session's
    /// config is (a repository has no say in it).
    pub fn storage(&self) -> Result<evoflux_core::config::StorageConfig, SessionError> {
        self.owner_config().map(|c| c.storage)
    }

    /// The session database: `EVOFLUX_DATABASE_URL` as the front end
    /// read it, else `[store] url` of the admin's and the user's config,
    /// else the data directory's SQLite file.
    pub fn database(&self) -> Result<Database, SessionError> {
        let url = match &self.database_url {
            Some(url) => Some(url.clone()),
            None => self.owner_config()?.store.url,
        };
        Ok(match url {
            Some(url) => Database::parse(&url)?,
            None => Database::Sqlite,
        })
    }

    /// The object store sessions' artifacts are kept in for every
    /// replica: `EVOFLUX_ARTIFACTS_URL`, else `[store] artifacts`; `None`
    /// when neither names one (the data directory is all there is).
    pub fn artifacts(&self) -> Result<Option<evoflux_store::Artifacts>, SessionError> {
        let url = match &self.artifacts_url {
            Some(url) => Some(url.clone()),
            None => self.owner_config()?.store.artifacts,
        };
        Ok(url
            .map(|u| evoflux_store::Artifacts::open(&u))
            .transpose()?)
    }

    /// Opens the session store on [`AppContext::database`], with the data
    /// directory for what lives on disk beside it and the
    /// [`AppContext::artifacts`] object store, so every front end that
    /// deletes or prunes a session removes its objects too.
    pub async fn open_store(&self) -> Result<Store, SessionError> {
        let database = self.database()?;
        let artifacts = self.artifacts()?;
        Ok(Store::connect(
            self.dirs.data_dir(),
            &database,
            evoflux_core::ids::Ids::system(),
        )
        .await?
        .with_artifacts(artifacts))
    }

    /// The admin's and the user's `config.toml` over the embedded
    /// defaults: the settings read before any compile, which a repository
    /// has no say in (`[storage]`, `[compat]`).
    pub(crate) fn owner_config(&self) -> Result<evoflux_core::config::HarnessConfig, SessionError> {
        use evoflux_core::config::ConfigScope;
        let mut diags = evoflux_core::Diagnostics::new();
        let loaded = evoflux_core::config::load_layers(
            &[
                (
                    self.dirs.admin_dir().join("config.toml"),
                    ConfigScope::Admin,
                ),
                (
                    self.dirs.config_dir().join("config.toml"),
                    ConfigScope::User,
                ),
            ],
            &mut diags,
        );
        match diags.has_errors() {
            true => Err(SessionError::Config { diagnostics: diags }),
            false => Ok(loaded.config),
        }
    }

    /// The plugin manager of these directories.
    pub fn plugins(&self) -> PluginManager {
        PluginManager::new(PluginPaths::from_dirs(&self.dirs))
    }

    /// The Chromium the `browser` tool runs: `EVOFLUX_CHROMIUM` when set
    /// (only if it exists), else the one installed; `None` leaves the
    /// tool out, reported as not installed.
    pub fn chromium(&self) -> Option<PathBuf> {
        let explicit = std::env::var_os("EVOFLUX_CHROMIUM").map(PathBuf::from);
        evoflux_tools::browser::find_chromium(explicit.as_deref())
    }

    /// Where command output and offloaded results go.
    pub fn artifacts_root(&self) -> PathBuf {
        evoflux_store::artifacts_root(self.dirs.data_dir())
    }

    /// The command runtime's setup for these directories: journals below
    /// the artifacts root, and the runs folder through which a new runtime
    /// stops what a killed one left running.
    pub fn runtime_config(&self) -> evoflux_tools::RuntimeConfig {
        let mut config = evoflux_tools::RuntimeConfig::new(self.artifacts_root());
        config.runs_dir = Some(self.dirs.data_dir().join("runs"));
        config
    }
}

/// evoflux's own directories, which commands must not see.
pub(crate) fn hidden_dirs(dirs: &Dirs) -> Vec<PathBuf> {
    vec![
        dirs.config_dir().to_path_buf(),
        dirs.data_dir().to_path_buf(),
        dirs.cache_dir().to_path_buf(),
    ]
}

/// Absolute, link-free paths, each once, in the order given.
pub(crate) fn canonical(cwd: &Path, paths: &[PathBuf]) -> Result<Vec<PathBuf>, SessionError> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths {
        let full = cwd.join(p);
        let c = full
            .canonicalize()
            .map_err(|source| SessionError::Workspace {
                path: p.clone(),
                source,
            })?;
        if !c.is_dir() {
            return Err(SessionError::Workspace {
                path: p.clone(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        if !out.contains(&c) {
            out.push(c);
        }
    }
    Ok(out)
}
