//! Reading one `config.toml`: its text through the one source reader, its
//! syntax, every key checked strictly (an unknown key is an error naming
//! its full path, because a misspelled setting silently ignored is one the
//! user believes in and does not have), and what its layer may say.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::approval::Approval;
use super::compat::CompatFile;
use super::layer::{ConfigLayer, ConfigScope, ConfigSource, LoadedConfig};
use super::limits::{LimitsFile, check_limits};
use super::mcp::{McpFile, check_mcp};
use super::model::ModelSection;
use super::prices::check_prices;
use super::providers::{ProviderConfig, check_provider, check_scope};
use super::skills::SkillsConfig;
use super::storage::{StorageConfig, check_storage};
use super::store::StoreConfig;
use super::teams::{TeamsFile, check_teams};
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::price::PriceEntry;

/// The raw file: every section optional.
#[derive(Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    model: Option<ModelSection>,
    #[serde(default)]
    providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    approval: BTreeMap<String, Approval>,
    #[serde(default)]
    storage: Option<StorageConfig>,
    #[serde(default)]
    store: Option<StoreConfig>,
    #[serde(default)]
    compat: Option<CompatFile>,
    #[serde(default)]
    prices: BTreeMap<String, PriceEntry>,
    #[serde(default)]
    limits: LimitsFile,
    #[serde(default)]
    teams: TeamsFile,
    #[serde(default)]
    skills: Option<SkillsConfig>,
    #[serde(default)]
    mcp: Option<McpFile>,
    /// Read for its unknown keys only: each `[agents.external.<name>]`
    /// table is a source of the graph (`remote-agents/<name>`), read by
    /// [`crate::external_agent`], not part of the layered configuration.
    #[serde(default)]
    #[allow(dead_code)]
    agents: Option<crate::external_agent::AgentsFile>,
}

/// Reads `path` (a missing file means the embedded defaults) and checks it.
/// Returns the effective configuration when there are no errors; all
/// problems found are pushed into `diags` together.
pub fn load(path: &Path, diags: &mut Diagnostics) -> Option<LoadedConfig> {
    match read_config_file(path, diags) {
        Ok(Some(text)) => parse(path, &text, diags),
        Ok(None) => Some(LoadedConfig::embedded()),
        Err(()) => None,
    }
}

/// The embedded defaults with each existing file of `files` laid over
/// them in order, as the compile lays the owner's layers (for what is read
/// before any compile, such as `[storage]`). Problems are pushed to
/// `diags`; a file with errors is left out.
pub fn load_layers(files: &[(PathBuf, ConfigScope)], diags: &mut Diagnostics) -> LoadedConfig {
    let mut loaded = LoadedConfig::embedded();
    for (path, scope) in files {
        if let Ok(Some(text)) = read_config_file(path, diags)
            && let Some(layer) = parse_layer(path, &text, *scope, diags)
        {
            loaded.apply(layer);
        }
    }
    loaded
}

/// A config file's text through the one source reader (and its size cap);
/// `Ok(None)` when it does not exist, `Err` after pushing why it cannot be
/// read.
fn read_config_file(path: &Path, diags: &mut Diagnostics) -> Result<Option<String>, ()> {
    use crate::source::{SourceReadError, read_source};
    let unreadable =
        |message: String| Diagnostic::error("config/unreadable", message).with_file(path);
    match read_source(path) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => Ok(Some(text)),
            Err(_) => {
                diags.push(unreadable(
                    "cannot read config: it is not valid UTF-8".into(),
                ));
                Err(())
            }
        },
        Err(SourceReadError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e @ SourceReadError::TooLarge { .. }) => {
            diags.push(Diagnostic::error("compile/file-too-large", e.to_string()).with_file(path));
            Err(())
        }
        Err(SourceReadError::Io(e)) => {
            diags.push(unreadable(format!("cannot read config: {e}")));
            Err(())
        }
    }
}

/// Parses and checks config text that came from `path`, as the user's only
/// file over the embedded defaults.
pub fn parse(path: &Path, text: &str, diags: &mut Diagnostics) -> Option<LoadedConfig> {
    let (layer, ok) = read_layer(path, text, ConfigScope::User, diags)?;
    let mut loaded = LoadedConfig::embedded();
    loaded.apply(layer);
    // Checked even when the file had errors, so all are reported together.
    (loaded.check(diags) && ok).then_some(loaded)
}

/// Parses and checks one config file of `scope`: its syntax, every key and
/// value, and what its layer may say. `None` when there are errors (all
/// pushed into `diags` together).
pub fn parse_layer(
    path: &Path,
    text: &str,
    scope: ConfigScope,
    diags: &mut Diagnostics,
) -> Option<ConfigLayer> {
    read_layer(path, text, scope, diags).and_then(|(layer, ok)| ok.then_some(layer))
}

/// The layer as far as it could be read, and whether it had no errors;
/// `None` when its syntax or shape could not be read at all.
pub fn read_layer(
    path: &Path,
    text: &str,
    scope: ConfigScope,
    diags: &mut Diagnostics,
) -> Option<(ConfigLayer, bool)> {
    let errors_before = diags.count(crate::Severity::Error);
    let mut unknown = Vec::new();
    let de = match toml::Deserializer::parse(text) {
        Ok(de) => de,
        Err(e) => {
            diags.push(toml_diagnostic(path, text, &e));
            return None;
        }
    };
    let file: ConfigFile = match serde_ignored::deserialize(de, |p| unknown.push(key_path(&p))) {
        Ok(f) => f,
        Err(e) => {
            diags.push(toml_diagnostic(path, text, &e));
            return None;
        }
    };
    for key in unknown {
        diags.push(
            Diagnostic::error(
                "config/unknown-key",
                format!("unknown key `{key}`: remove it or check its spelling"),
            )
            .with_file(path)
            .with_field(key),
        );
    }
    let base_dir = path.parent().unwrap_or_else(|| Path::new(""));
    let mut providers = BTreeMap::new();
    for (name, mut provider) in file.providers {
        check_provider(path, &name, &provider, diags);
        check_scope(path, scope, &name, &provider, diags);
        if let Some(model_path) = provider.model_path.take() {
            provider.model_path = Some(base_dir.join(model_path));
        }
        providers.insert(name, provider);
    }
    if let Some(storage) = &file.storage {
        check_storage(path, scope, storage, diags);
    }
    if let (Some(_), ConfigScope::Project(_)) = (&file.store, scope) {
        diags.push(
            Diagnostic::error(
                "config/project-store",
                "a repository's config cannot set [store]: the database it names would receive \
                 every transcript; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("store"),
        );
    }
    if let (Some(_), ConfigScope::Project(_)) = (&file.compat, scope) {
        diags.push(
            Diagnostic::error(
                "config/project-compat",
                "a repository's config cannot set [compat]: which of your other tools' files \
                 evoflux reads is yours to decide; set it in your own config.toml",
            )
            .with_file(path)
            .with_field("compat"),
        );
    }
    let prices = check_prices(path, scope, &file.prices, diags);
    let limits = check_limits(path, file.limits, diags);
    let teams = check_teams(path, file.teams, diags);
    let mcp = check_mcp(path, scope, file.mcp, diags);
    let layer = ConfigLayer {
        source: ConfigSource {
            path: path.to_path_buf(),
            origin: scope.origin(),
        },
        model: file.model,
        providers,
        approval: file.approval,
        storage: file.storage,
        store: match scope {
            ConfigScope::Project(_) => None,
            ConfigScope::Admin | ConfigScope::User => file.store,
        },
        compat: file.compat,
        prices,
        limits,
        teams,
        skills: file.skills,
        mcp,
    };
    Some((layer, diags.count(crate::Severity::Error) == errors_before))
}

/// The dotted key path of an ignored key, without serde's markers for
/// `Option` and newtype layers (which the user never wrote).
fn key_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", key_path(parent)),
        Path::Map { parent, key } => match key_path(parent) {
            p if p.is_empty() => key.clone(),
            p => format!("{p}.{key}"),
        },
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => key_path(parent),
    }
}

fn toml_diagnostic(path: &Path, text: &str, e: &toml::de::Error) -> Diagnostic {
    let mut d = Diagnostic::error(
        "config/toml-invalid",
        format!("invalid config: {}", e.message().trim()),
    )
    .with_file(path);
    if let Some(span) = e.span() {
        let upto = text.get(..span.start).unwrap_or(text);
        let line = upto.matches('\n').count() + 1;
        d = d.with_line(u32::try_from(line).unwrap_or(u32::MAX));
    }
    d
}
