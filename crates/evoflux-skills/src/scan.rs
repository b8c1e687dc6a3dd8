//! Listing the bundles inside one skills root, in this crate's types.
//!
//! The walk itself (limits, hidden and resource folders, legacy nested
//! names, symlink loops) is discovery, owned by the source graph's
//! [`evoflux_graph::skill_root`]; this adapter names each bundle with a
//! [`BundleName`] for callers that work on one root (`skills validate`,
//! tests, benchmarks).

use std::path::{Path, PathBuf};

use evoflux_core::Diagnostics;
pub use evoflux_graph::skill_root::{RESOURCE_DIRS, SKILL_FILE, WalkLimits};

use crate::name::BundleName;

/// One bundle found in a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleDir {
    /// The bundle folder (under the root, not symlink-resolved).
    pub dir: PathBuf,
    pub name: BundleName,
    /// Whether the folder or one of its ancestors below the root is a
    /// symlink (then the bundle is readable but never editable).
    pub symlinked: bool,
}

/// The bundles of one root and what went wrong finding them.
#[derive(Debug, Clone, Default)]
pub struct RootScan {
    pub bundles: Vec<BundleDir>,
    pub diagnostics: Diagnostics,
}

/// Lists the bundles under `root`, shallowest first.
pub fn scan_root(root: &Path, limits: WalkLimits) -> RootScan {
    let scan = evoflux_graph::skill_root::scan_root(root, limits);
    RootScan {
        bundles: scan
            .bundles
            .into_iter()
            .filter_map(|b| {
                Some(BundleDir {
                    name: BundleName::from_segments(b.segments)?,
                    dir: b.dir,
                    symlinked: b.symlinked,
                })
            })
            .collect(),
        diagnostics: scan.diagnostics,
    }
}
