//! Agent Plugins 1.0 for evoflux: portable packages (`plugin.json`,
//! `skills/`, `mcp.json`) validated, inspected and trust-reviewed without
//! running anything, then packed to and safely extracted from `.evoplugin`
//! archives.
//!
//! Entry point: [`inspect()`] on a folder gives a [`PluginInspection`]: the
//! manifest, the skills and MCP servers with their validity, every
//! diagnostic tagged with its failure [`Scope`], the [`TrustReview`] and the
//! content digest. The strict skill validator is supplied by the caller
//! through [`SkillValidator`].

pub mod archive;
pub mod codes;
pub mod extensions;
pub mod inspect;
pub mod manifest;
pub mod mcp;
pub mod pack;
pub mod schema;
pub mod scope;
pub mod skills;
pub mod staging;
pub mod tree;
pub mod trust;

pub use archive::{ExtractError, ExtractLimits, ExtractReport, extract_archive};
pub use inspect::{McpStatus, PluginInspection, inspect, inspect_with};
pub use manifest::{Author, ManifestOutcome, PluginManifest, validate_manifest};
pub use mcp::{McpConfig, McpOutcome, McpServer, McpServerEntry, McpTransport, validate_mcp};
pub use pack::{PackError, PackOptions, PackReport, default_pack_output, pack};
pub use schema::{MCP_SCHEMA_1_0_0, PLUGIN_SCHEMA_1_0_0, SpecVersion};
pub use scope::{Scope, ScopedDiagnostic, ScopedDiagnosticsExt};
pub use skills::{BasicSkillValidator, PluginSkill, SkillCheck, SkillValidator};
pub use staging::{StageError, StagedPackage, stage_archive, staging_dir};
pub use tree::{PackageLimits, PackageTree};
pub use trust::TrustReview;
