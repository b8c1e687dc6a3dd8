//! Agent Skills for evoflux.
//!
//! This crate owns everything about a skill once the source graph has found
//! it: reading and validating a bundle ([`bundle`], [`validate`]), listing
//! the bundles of one root ([`scan`]), the metadata layers ([`sidecar`],
//! [`agent_meta`]), the user's runtime-preference overlay ([`overlay`]),
//! the runtime and management projections ([`projection`]), the Tier-1
//! catalog and its ranking ([`catalog`], [`rank`]), explicit invocation
//! ([`invocation`]), activation and resources ([`activation`],
//! [`resources`]) and the implicit resolver's request and decision
//! ([`resolver`]). Walking roots across layers and picking one winner per
//! slot belong to `evoflux-graph`; this crate works on one root or one
//! ordered candidate list at a time.

pub mod activation;
pub mod agent_meta;
pub mod authoring;
pub mod bundle;
pub mod bundled;
pub mod catalog;
pub mod evals;
pub mod invocation;
pub mod modes;
pub mod name;
pub mod origin;
pub mod overlay;
pub mod placeholder;
pub mod projection;
pub mod rank;
pub mod resolver;
pub mod resources;
pub mod scan;
pub mod selection;
pub mod sidecar;
pub mod validate;

pub use activation::{Activation, ActivationError, activate};
pub use bundle::{
    LoadOptions, RuntimePrefs, SkillRecord, ValidationReport, load_bundle, load_embedded,
    validate_path,
};
pub use catalog::{Catalog, CatalogReport, CatalogRequest, build_catalog};
pub use modes::ModeSet;
pub use name::BundleName;
pub use origin::{CompatDir, SkillOrigin, SkillSource};
pub use overlay::{OverlaySnapshot, PrefsPatch, SettingsId, SkillSettingsStore, apply_overlay};
pub use placeholder::PlaceholderDirs;
pub use scan::{BundleDir, RootScan, WalkLimits, scan_root};
pub use validate::ValidationLevel;
