//! The lifecycle's one error type. Every variant has a stable diagnostic
//! code (what tests and clients match on) and a message that names the
//! file, entry or field and the rule that was broken.

use std::io;
use std::path::PathBuf;

use evoflux_core::Diagnostic;
use evoflux_core::lock::LockError;

use crate::installation::{InstallationId, InvalidInstallationId, SourceType};
use crate::lifecycle::DataSelector;
use crate::pack::PackError;
use crate::scope::ScopedDiagnostic;
use crate::staging::StageError;

/// A lifecycle operation on the bundled (release) plugins. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinOperation {
    Enable,
    Disable,
    Update,
    Uninstall,
}

impl BuiltinOperation {
    const fn verb(self) -> &'static str {
        match self {
            BuiltinOperation::Enable | BuiltinOperation::Disable => {
                "enabled or disabled (it is always enabled)"
            }
            BuiltinOperation::Update => "updated (it updates with evoflux)",
            BuiltinOperation::Uninstall => "uninstalled",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    #[error("Plugin installation not found: `{0}`")]
    NotFound(InstallationId),
    #[error(transparent)]
    InvalidId(#[from] InvalidInstallationId),
    #[error("`{}` is not a valid plugin", path.display())]
    InvalidPackage {
        path: PathBuf,
        diagnostics: Vec<ScopedDiagnostic>,
    },
    #[error("`{}` is not a plugin folder or a .evoplugin/.zip archive", .0.display())]
    SourceMissing(PathBuf),
    #[error(
        "plugin `{name}` is already {} as `{id}` (from `{source_ref}`); a plugin name has one installation",
        match source_type { SourceType::Linked => "linked", SourceType::Installed | SourceType::Builtin => "installed" }
    )]
    AlreadyInstalled {
        name: String,
        source_ref: String,
        id: InstallationId,
        /// How the existing installation came (what a front end suggests
        /// depends on it: an installed copy is updated, a link is edited).
        source_type: SourceType,
    },
    #[error("no kept plugin data {}", match selector { DataSelector::Name(n) => format!("for plugin `{n}`"), DataSelector::Id(id) => format!("`{id}`") })]
    KeptDataNotFound { selector: DataSelector },
    #[error(
        "the data of `{id}` belongs to installed plugin `{name}`; it is removed with the installation"
    )]
    DataInUse { id: InstallationId, name: String },
    #[error("bundled plugin `{name}` ships with evoflux and cannot be {}", operation.verb())]
    Builtin {
        name: String,
        operation: BuiltinOperation,
    },
    #[error(
        "`{}` is inside the release-bundled plugin tree `{}`, which is immutable",
        path.display(),
        tree.display()
    )]
    InsideBundledTree { path: PathBuf, tree: PathBuf },
    #[error("`{name}` is a linked plugin: linked plugins update directly from their source folder")]
    LinkedNotUpdatable { name: String },
    #[error("the update is plugin `{found}`, but installation `{id}` is `{expected}`")]
    NameMismatch {
        id: InstallationId,
        expected: String,
        found: String,
    },
    #[error(
        "the root `{}` of installation `{id}` is not under `{}`; refusing to touch it",
        root.display(),
        expected.display()
    )]
    RootNotManaged {
        id: InstallationId,
        root: PathBuf,
        expected: PathBuf,
    },
    #[error(
        "the plugin registry `{}` is malformed: {reason}; evoflux never overwrites a registry it cannot read: repair the file or move it aside",
        path.display()
    )]
    RegistryMalformed { path: PathBuf, reason: String },
    #[error(
        "builtin installation `{0}` cannot be persisted: bundled plugins are virtual release records"
    )]
    BuiltinPersisted(InstallationId),
    #[error("cannot lock the plugin registry: {0}")]
    Lock(#[from] LockError),
    #[error(transparent)]
    Stage(#[from] StageError),
    #[error(transparent)]
    Import(#[from] crate::claude_import::ImportError),
    #[error(transparent)]
    Pack(#[from] PackError),
    #[error("`{}` already exists; choose a new destination", .0.display())]
    DestinationExists(PathBuf),
    #[error("`{name}` is not a valid plugin name: {reason}")]
    InvalidName { name: String, reason: String },
    #[error("plugin `{plugin}` declares no credential field `{key}`")]
    UnknownCredential { plugin: String, key: String },
    #[error("credential `{key}`: {reason}")]
    InvalidCredential { key: String, reason: String },
    #[error("plugin `{0}` declares no credentials")]
    CredentialsNotSupported(String),
    #[error("the credentials declaration of `{plugin}` is invalid: {reason}")]
    CredentialsDeclarationInvalid { plugin: String, reason: String },
    #[error("the credentials file `{}` is malformed: {reason}; repair it or clear the credentials", path.display())]
    CredentialsMalformed { path: PathBuf, reason: String },
    #[error("cannot {action} `{}`: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl PluginError {
    pub fn io(action: &'static str, path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> Self {
        let path = path.into();
        move |source| PluginError::Io {
            action,
            path,
            source,
        }
    }

    /// The stable diagnostic code.
    pub fn code(&self) -> &'static str {
        match self {
            PluginError::NotFound(_) => "plugin/installation-not-found",
            PluginError::InvalidId(_) => "plugin/installation-id-invalid",
            PluginError::InvalidPackage { .. } => "plugin/package-invalid",
            PluginError::SourceMissing(_) => "plugin/source-missing",
            PluginError::AlreadyInstalled { .. } => "plugin/already-installed",
            PluginError::KeptDataNotFound { .. } => "plugin/kept-data-not-found",
            PluginError::DataInUse { .. } => "plugin/data-in-use",
            PluginError::Builtin { .. } => "plugin/builtin-immutable",
            PluginError::InsideBundledTree { .. } => "plugin/inside-bundled-tree",
            PluginError::LinkedNotUpdatable { .. } => "plugin/linked-not-updatable",
            PluginError::NameMismatch { .. } => "plugin/update-name-mismatch",
            PluginError::RootNotManaged { .. } => "plugin/root-not-managed",
            PluginError::RegistryMalformed { .. } => "plugin/registry-malformed",
            PluginError::BuiltinPersisted(_) => "plugin/registry-builtin-record",
            PluginError::Lock(_) => "plugin/registry-locked",
            PluginError::Stage(e) => e.code(),
            PluginError::Import(e) => e.code(),
            PluginError::Pack(e) => e.code(),
            PluginError::DestinationExists(_) => "plugin/create-destination-exists",
            PluginError::InvalidName { .. } => "plugin/create-name-invalid",
            PluginError::UnknownCredential { .. } => "plugin/credential-unknown",
            PluginError::InvalidCredential { .. } => "plugin/credential-invalid",
            PluginError::CredentialsNotSupported(_) => "plugin/credentials-not-supported",
            PluginError::CredentialsDeclarationInvalid { .. } => {
                crate::codes::CREDENTIALS_DECLARATION_INVALID
            }
            PluginError::CredentialsMalformed { .. } => "plugin/credentials-malformed",
            PluginError::Io { .. } => "plugin/io",
        }
    }

    /// Whether the error is a verdict on user input (a package, an id, a
    /// value) rather than a failure of the environment.
    pub fn is_validation(&self) -> bool {
        match self {
            PluginError::InvalidPackage { .. }
            | PluginError::InvalidId(_)
            | PluginError::InvalidName { .. }
            | PluginError::NameMismatch { .. }
            | PluginError::UnknownCredential { .. }
            | PluginError::InvalidCredential { .. } => true,
            PluginError::Stage(e) => match e {
                StageError::Extract(_) | StageError::Invalid { .. } | StageError::Symlink => true,
                StageError::Select(e) => e.is_validation(),
                StageError::Changed | StageError::Io { .. } => false,
            },
            PluginError::Import(e) => match e {
                crate::claude_import::ImportError::NotClaudePlugin(_)
                | crate::claude_import::ImportError::ManifestInvalid { .. }
                | crate::claude_import::ImportError::ManifestTooComplex { .. }
                | crate::claude_import::ImportError::NameInvalid { .. }
                | crate::claude_import::ImportError::Unwalkable(_) => true,
                crate::claude_import::ImportError::DestinationExists(_)
                | crate::claude_import::ImportError::Io { .. } => false,
            },
            PluginError::Pack(e) => e.is_validation(),
            PluginError::NotFound(_)
            | PluginError::SourceMissing(_)
            | PluginError::AlreadyInstalled { .. }
            | PluginError::KeptDataNotFound { .. }
            | PluginError::DataInUse { .. }
            | PluginError::Builtin { .. }
            | PluginError::InsideBundledTree { .. }
            | PluginError::LinkedNotUpdatable { .. }
            | PluginError::RootNotManaged { .. }
            | PluginError::RegistryMalformed { .. }
            | PluginError::BuiltinPersisted(_)
            | PluginError::Lock(_)
            | PluginError::DestinationExists(_)
            | PluginError::CredentialsNotSupported(_)
            | PluginError::CredentialsDeclarationInvalid { .. }
            | PluginError::CredentialsMalformed { .. }
            | PluginError::Io { .. } => false,
        }
    }

    /// The package diagnostics behind a rejection, if any.
    pub fn package_diagnostics(&self) -> &[ScopedDiagnostic] {
        match self {
            PluginError::InvalidPackage { diagnostics, .. }
            | PluginError::Stage(StageError::Invalid { diagnostics })
            | PluginError::Pack(PackError::Invalid { diagnostics }) => diagnostics,
            _ => &[],
        }
    }

    /// The error as one diagnostic (package diagnostics are separate, see
    /// [`package_diagnostics`](Self::package_diagnostics)).
    pub fn to_diagnostic(&self) -> Diagnostic {
        let d = Diagnostic::error(self.code(), self.to_string());
        match self {
            PluginError::RegistryMalformed { path, .. }
            | PluginError::CredentialsMalformed { path, .. }
            | PluginError::InvalidPackage { path, .. }
            | PluginError::Io { path, .. }
            | PluginError::Stage(
                StageError::Io { path, .. }
                | StageError::Extract(crate::archive::ExtractError::Io { path, .. })
                | StageError::Select(PackError::Io { path, .. }),
            )
            | PluginError::Pack(PackError::Io { path, .. } | PackError::Zip { path, .. }) => {
                d.with_file(path)
            }
            PluginError::UnknownCredential { key, .. }
            | PluginError::InvalidCredential { key, .. } => d.with_field(key.clone()),
            _ => d,
        }
    }
}
