//! Static inspection of a plugin folder: package checks, manifest, skills,
//! MCP declarations, trust review and content digest, in the spec's order.
//!
//! Package and manifest errors reject the package before any component is
//! looked at. After that, every component fails on its own: a bad skill is
//! skipped alone, a bad `mcp.json` disables only MCP, a bad server is
//! skipped alone.

use std::fs;
use std::path::{Path, PathBuf};

use evoflux_core::Diagnostic;
use evoflux_core::hash::ContentHash;
use serde::Serialize;

use crate::codes;
use crate::credentials::CredentialDeclaration;
use crate::manifest::{PluginManifest, validate_manifest};
use crate::mcp::{McpServerEntry, validate_mcp};
use crate::scope::{Scope, ScopedDiagnostic, ScopedDiagnosticsExt};
use crate::skills::{PluginSkill, SkillValidator, discover_skills};
use crate::tree::{PackageLimits, PackageTree, stays_inside, walk};
use crate::trust::TrustReview;

/// The state of a plugin's MCP component. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpStatus {
    /// No `mcp.json`: not an error.
    Absent,
    /// `mcp.json` is invalid at the top level: no server of this plugin runs.
    Disabled,
    /// The document is valid; each entry says whether it is valid.
    Loaded,
    /// The package was rejected before components were inspected.
    NotInspected,
}

/// Everything static inspection learned about a package.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PluginInspection {
    /// The canonical root (or the path given, when it does not resolve).
    pub root: PathBuf,
    /// False only when an error in scope `package` or `manifest` rejects it.
    pub valid: bool,
    pub manifest: Option<PluginManifest>,
    /// Every diagnostic, each with its scope.
    pub diagnostics: Vec<ScopedDiagnostic>,
    pub skills: Vec<PluginSkill>,
    pub mcp_status: McpStatus,
    pub mcp_servers: Vec<McpServerEntry>,
    pub trust: TrustReview,
    /// Namespaces of the manifest's valid extension members.
    pub extension_namespaces: Vec<String>,
    /// Digest of the sorted tree; absent when the tree could not be walked
    /// completely.
    pub content_sha256: Option<ContentHash>,
    /// The walked tree, for pack and install.
    #[serde(skip)]
    pub tree: Option<PackageTree>,
    /// When the folder is a Claude Code plugin: the inspection is of the
    /// package its import makes, and this says what the import carried
    /// over and left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<crate::claude_import::ImportReport>,
}

impl PluginInspection {
    /// Diagnostics in one scope.
    pub fn diagnostics_in<'a>(
        &'a self,
        scope: &'a Scope,
    ) -> impl Iterator<Item = &'a ScopedDiagnostic> + 'a {
        self.diagnostics.iter().filter(move |d| &d.scope == scope)
    }

    /// Whether `code` was reported in `scope`.
    pub fn has(&self, scope: &Scope, code: &str) -> bool {
        self.diagnostics.has(scope, code)
    }

    /// Skills that join the catalog.
    pub fn valid_skills(&self) -> impl Iterator<Item = &PluginSkill> {
        self.skills.iter().filter(|s| s.valid)
    }

    /// Servers that evoflux would start.
    pub fn startable_servers(&self) -> impl Iterator<Item = &McpServerEntry> {
        self.mcp_servers.iter().filter(|s| s.is_startable())
    }
}

impl PluginInspection {
    /// An inspection that stopped before the package could be read:
    /// invalid, with `diagnostic` in scope `package`.
    pub fn refused(root: &Path, diagnostic: Diagnostic) -> PluginInspection {
        PluginInspection {
            root: root.to_path_buf(),
            valid: false,
            manifest: None,
            diagnostics: vec![ScopedDiagnostic::new(Scope::Package, diagnostic)],
            skills: Vec::new(),
            mcp_status: McpStatus::NotInspected,
            mcp_servers: Vec::new(),
            trust: TrustReview::default(),
            extension_namespaces: Vec::new(),
            content_sha256: None,
            tree: None,
            imported: None,
        }
    }
}

/// Inspects the plugin folder `root` with the default limits.
pub fn inspect(root: &Path, validator: &dyn SkillValidator) -> PluginInspection {
    inspect_with(root, validator, &PackageLimits::DEFAULT)
}

/// Inspects the plugin folder `root`.
pub fn inspect_with(
    root: &Path,
    validator: &dyn SkillValidator,
    limits: &PackageLimits,
) -> PluginInspection {
    let mut out = PluginInspection {
        root: root.to_path_buf(),
        valid: false,
        manifest: None,
        diagnostics: Vec::new(),
        skills: Vec::new(),
        mcp_status: McpStatus::NotInspected,
        mcp_servers: Vec::new(),
        trust: TrustReview::default(),
        extension_namespaces: Vec::new(),
        content_sha256: None,
        tree: None,
        imported: None,
    };
    let canonical = match root.canonicalize() {
        Ok(c) if c.is_dir() => c,
        _ => {
            out.diagnostics.push(ScopedDiagnostic::new(
                Scope::Package,
                Diagnostic::error(
                    codes::ROOT_NOT_DIRECTORY,
                    "the plugin root must be an existing folder",
                )
                .with_file(root),
            ));
            return out;
        }
    };
    out.root = canonical.clone();
    let walked = walk(&canonical, limits);
    out.diagnostics.extend(walked.diagnostics);
    let (tree, complete) = (walked.tree, walked.complete);
    if complete {
        match tree.digest() {
            Ok(digest) => out.content_sha256 = Some(digest),
            Err(e) => out.diagnostics.push(ScopedDiagnostic::new(
                Scope::Package,
                Diagnostic::error(codes::PACKAGE_UNREADABLE, e.to_string()).with_file(&canonical),
            )),
        }
        out.tree = Some(tree);
    }

    let manifest = read_manifest(&canonical, limits, &mut out.diagnostics);
    if out.diagnostics.rejects_package() {
        return out;
    }
    let Some(manifest) = manifest else {
        return out;
    };
    out.valid = true;
    out.extension_namespaces = manifest.extensions.keys().cloned().collect();
    if let Err(e) = CredentialDeclaration::of(&manifest) {
        out.diagnostics.push(ScopedDiagnostic::new(
            Scope::Manifest,
            Diagnostic::warning(codes::CREDENTIALS_DECLARATION_INVALID, e.to_string())
                .with_file(canonical.join("plugin.json"))
                .with_field("extensions"),
        ));
    }

    let (skills, skill_diagnostics) = discover_skills(&canonical, limits, validator);
    out.skills = skills;
    out.diagnostics.extend(skill_diagnostics);

    let (status, servers) = read_mcp(&canonical, &manifest, limits, &mut out.diagnostics);
    out.mcp_status = status;
    out.mcp_servers = servers;

    out.trust = TrustReview::build(&manifest, &out.skills, &out.mcp_servers);
    out.manifest = Some(manifest);
    out
}

/// Reads a fixed-location file within `max` bytes, reporting in `scope`
/// with the given codes. `Ok(None)` means absent.
struct FileCodes {
    escapes: &'static str,
    not_file: &'static str,
    too_large: &'static str,
    unreadable: &'static str,
}

fn read_fixed(
    root: &Path,
    name: &str,
    max: u64,
    scope: Scope,
    codes: FileCodes,
    diagnostics: &mut Vec<ScopedDiagnostic>,
) -> Option<Option<String>> {
    let path = root.join(name);
    if fs::symlink_metadata(&path).is_err() {
        return Some(None);
    }
    let mut fail = |code: &'static str, message: String| {
        diagnostics.push(ScopedDiagnostic::new(
            scope.clone(),
            Diagnostic::error(code, message).with_file(&path),
        ));
        None
    };
    if !stays_inside(root, name) {
        return fail(
            codes.escapes,
            format!("`{name}` resolves outside the plugin root"),
        );
    }
    match fs::metadata(&path) {
        Ok(meta) if !meta.is_file() => {
            fail(codes.not_file, format!("`{name}` must be a regular file"))
        }
        Ok(meta) if meta.len() > max => fail(
            codes.too_large,
            format!("`{name}` is larger than {max} bytes"),
        ),
        Ok(_) => match fs::read(&path).map(String::from_utf8) {
            Ok(Ok(text)) => Some(Some(text)),
            Ok(Err(_)) => fail(codes.unreadable, format!("`{name}` is not UTF-8")),
            Err(e) => fail(codes.unreadable, format!("cannot read `{name}`: {e}")),
        },
        Err(e) => fail(codes.unreadable, format!("cannot read `{name}`: {e}")),
    }
}

fn read_manifest(
    root: &Path,
    limits: &PackageLimits,
    diagnostics: &mut Vec<ScopedDiagnostic>,
) -> Option<PluginManifest> {
    let text = read_fixed(
        root,
        "plugin.json",
        limits.max_manifest_bytes,
        Scope::Manifest,
        FileCodes {
            escapes: codes::MANIFEST_ESCAPES_ROOT,
            not_file: codes::MANIFEST_NOT_FILE,
            too_large: codes::MANIFEST_TOO_LARGE,
            unreadable: codes::MANIFEST_UNREADABLE,
        },
        diagnostics,
    )?;
    let Some(text) = text else {
        diagnostics.push(ScopedDiagnostic::new(
            Scope::Manifest,
            Diagnostic::error(
                codes::MANIFEST_MISSING,
                "a plugin needs `plugin.json` at its root",
            )
            .with_file(root.join("plugin.json")),
        ));
        return None;
    };
    let outcome = validate_manifest(&text, &root.join("plugin.json"));
    diagnostics.extend(outcome.diagnostics);
    outcome.manifest
}

fn read_mcp(
    root: &Path,
    manifest: &PluginManifest,
    limits: &PackageLimits,
    diagnostics: &mut Vec<ScopedDiagnostic>,
) -> (McpStatus, Vec<McpServerEntry>) {
    let text = read_fixed(
        root,
        "mcp.json",
        limits.max_mcp_bytes,
        Scope::Mcp,
        FileCodes {
            escapes: codes::MCP_ESCAPES_ROOT,
            not_file: codes::MCP_NOT_FILE,
            too_large: codes::MCP_TOO_LARGE,
            unreadable: codes::MCP_UNREADABLE,
        },
        diagnostics,
    );
    let text = match text {
        None => return (McpStatus::Disabled, Vec::new()),
        Some(None) => return (McpStatus::Absent, Vec::new()),
        Some(Some(text)) => text,
    };
    let outcome = validate_mcp(&text, &root.join("mcp.json"), manifest.spec_version, root);
    diagnostics.extend(outcome.diagnostics);
    match outcome.config {
        Some(config) => (McpStatus::Loaded, config.servers),
        None => (McpStatus::Disabled, Vec::new()),
    }
}
