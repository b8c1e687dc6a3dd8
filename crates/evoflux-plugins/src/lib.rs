//! Agent Plugins 1.0 for evoflux: portable packages (`plugin.json`,
//! `skills/`, `mcp.json`) validated, inspected and trust-reviewed without
//! running anything, then packed to and safely extracted from `.evoplugin`
//! archives.
//!
//! Lifecycle: [`PluginManager`] installs, links, updates, enables,
//! disables and uninstalls plugins over the registry in the data dir, keeps
//! credentials, and lists the release-bundled plugins; its
//! [`PluginManager::enabled_plugin_roots`] feeds the enabled plugins'
//! skills to the source graph.
//!
//! Entry point for a folder: [`inspect()`] on a folder gives a [`PluginInspection`]: the
//! manifest, the skills and MCP servers with their validity, every
//! diagnostic tagged with its failure [`Scope`], the [`TrustReview`] and the
//! content digest. Skills are checked by [`StrictSkillValidator`], the
//! strict rules of `evoflux-skills`, through the [`SkillValidator`] seam.

pub mod archive;
pub mod bundled;
pub mod claude_import;
pub mod codes;
pub mod credentials;
pub mod error;
pub mod extensions;
pub mod inspect;
pub mod installation;
pub mod lifecycle;
pub mod manifest;
pub mod mcp;
pub mod pack;
pub mod paths;
pub mod registry;
pub mod schema;
pub mod scope;
pub mod skills;
pub mod staging;
pub mod tree;
pub mod trust;
pub mod unique_json;
pub mod workspace;

pub use archive::{
    CheckedEntry, ExtractError, ExtractLimits, ExtractReport, check_entries, extract_archive,
};
pub use bundled::{BUNDLED, bundled_installations};
pub use claude_import::{ImportError, ImportReport};
pub use credentials::{CredentialChange, CredentialState, CredentialValue, CredentialValues};
pub use error::{BuiltinOperation, PluginError};
pub use inspect::{McpStatus, PluginInspection, inspect, inspect_with};
pub use installation::{
    Capabilities, InstallationId, InvalidInstallationId, PluginInstallation, SourceType,
};
pub use lifecycle::{
    CreateOptions, DataSelector, KeptDataEntry, KeptDataListing, Listing, NewInstallation,
    PluginDetail, PluginManager, PluginSummary, Uninstalled, UpdateReview, UpdateTrust, Updated,
};
pub use manifest::{Author, ManifestOutcome, PluginManifest, validate_manifest};
pub use mcp::{
    McpConfig, McpOutcome, McpServer, McpServerEntry, McpTransport, Readiness, ServerReadiness,
    validate_mcp,
};
pub use pack::{
    ExcludedBy, ExcludedEntry, PackError, PackOptions, PackReport, PackSelection, PackageCopy,
    copy_plan, default_pack_output, pack,
};
pub use paths::PluginPaths;
pub use registry::{KeptData, Registry, RegistryGuard, RegistryRead};
pub use schema::{MCP_SCHEMA_1_0_0, PLUGIN_SCHEMA_1_0_0, SpecVersion};
pub use scope::{Scope, ScopedDiagnostic, ScopedDiagnosticsExt};
pub use skills::{
    PluginSkill, SkillCheck, SkillDir, SkillDirListing, SkillDirProblem, SkillValidator,
    SkillsFolder, StrictSkillValidator, list_skill_dirs, loadable_skill_dirs,
};
pub use staging::{
    StageError, StagedPackage, inspect_archive, stage_archive, stage_directory, staging_dir,
};
pub use tree::{LeftOutLink, PackageLimits, PackageTree};
pub use trust::{TrustChange, TrustReview};
