//! `[mcp]`: which MCP servers a mode's default lead may use without an
//! agent file naming them. A user who configured servers (in evoflux's
//! `mcp.json`, or in the other tools' files `[compat] mcp` reads) or
//! enabled a plugin expects the agent they talk to to use them; writing
//! an agent file only to list them again is a step nobody guesses. Only
//! the user's and the admin's files may set it: a repository deciding
//! what the user's lead may call would be someone else's choice.
//!
//! ```toml
//! [mcp]
//! default_grant = "all"            # the default
//! # default_grant = "none"         # only agent files' `mcp:` lists grant
//! # default_grant = ["github", "myplugin/search"]
//! max_result_mib = 8               # the default: one tool call's result
//! ```
//!
//! `max_result_mib` bounds what one MCP call may return (the stdio line,
//! the HTTP body or event): a server that floods is cut off with
//! `mcp/result-too-large` instead of filling memory. Whole MiB, 1 to
//! [`MAX_RESULT_MIB_LIMIT`]: 0 would refuse every result, and more than a
//! GiB is no bound at all.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::layer::ConfigScope;
use crate::diagnostic::{Diagnostic, Diagnostics};

/// `[mcp] default_grant`: the servers each mode's default lead is granted
/// when its agent file (or its built-in profile) lists none with `mcp:`.
/// Members and workers are never granted by default. Closed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "GrantFile", into = "GrantFile")]
pub enum DefaultGrant {
    /// Every server the application runs: the user's, trusted
    /// repositories', and enabled plugins'.
    #[default]
    All,
    /// None: only an agent file's `mcp:` list grants a server.
    None,
    /// The servers of these references (`name`, or `<plugin>/<name>` for a
    /// plugin's server), as `evoflux mcp list` shows them.
    Named(Vec<String>),
}

impl DefaultGrant {
    /// The setting as the user writes it in `config.toml`, for messages:
    /// `[mcp] default_grant = "all"`.
    pub fn as_setting(&self) -> String {
        let value = match self {
            DefaultGrant::All => "\"all\"".to_owned(),
            DefaultGrant::None => "\"none\"".to_owned(),
            DefaultGrant::Named(names) => format!(
                "[{}]",
                names
                    .iter()
                    .map(|n| format!("\"{n}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        format!("[mcp] default_grant = {value}")
    }

    /// Whether this setting grants the server of `server_ref`.
    pub fn grants(&self, server_ref: &str) -> bool {
        match self {
            DefaultGrant::All => true,
            DefaultGrant::None => false,
            DefaultGrant::Named(names) => names.iter().any(|n| n == server_ref),
        }
    }
}

/// `default_grant` as a file writes it: a word or a list of names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum GrantFile {
    Word(String),
    Names(Vec<String>),
}

/// Why a `default_grant` value is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum GrantFileError {
    #[error("`{0}` is not a grant: write \"all\", \"none\" or a list of server names")]
    Word(String),
    #[error("write \"all\", \"none\" or a list of server names")]
    Shape,
    #[error(
        "the list holds an empty server name: write each server as `evoflux mcp list` shows it"
    )]
    EmptyName,
}

impl TryFrom<GrantFile> for DefaultGrant {
    type Error = GrantFileError;

    fn try_from(file: GrantFile) -> Result<Self, Self::Error> {
        match file {
            GrantFile::Word(w) => match w.as_str() {
                "all" => Ok(DefaultGrant::All),
                "none" => Ok(DefaultGrant::None),
                _ => Err(GrantFileError::Word(w)),
            },
            GrantFile::Names(names) => {
                if names.iter().any(|n| n.trim().is_empty()) {
                    return Err(GrantFileError::EmptyName);
                }
                let mut out: Vec<String> = Vec::new();
                for n in names {
                    let n = n.trim().to_owned();
                    if !out.contains(&n) {
                        out.push(n);
                    }
                }
                Ok(DefaultGrant::Named(out))
            }
        }
    }
}

impl From<DefaultGrant> for GrantFile {
    fn from(g: DefaultGrant) -> GrantFile {
        match g {
            DefaultGrant::All => GrantFile::Word("all".into()),
            DefaultGrant::None => GrantFile::Word("none".into()),
            DefaultGrant::Named(n) => GrantFile::Names(n),
        }
    }
}

/// `[mcp]`: the MCP settings of the effective configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct McpConfig {
    #[serde(default)]
    pub default_grant: DefaultGrant,
    /// `[mcp] max_result_mib`: the bound of one MCP call's result, in MiB;
    /// unset for the MCP client's own default (8 MiB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_mib: Option<u64>,
}

/// The largest `[mcp] max_result_mib` accepted: 1 GiB.
pub const MAX_RESULT_MIB_LIMIT: u64 = 1024;

impl McpConfig {
    pub fn is_unset(&self) -> bool {
        *self == McpConfig::default()
    }

    /// `max_result_mib` in bytes, when set.
    pub fn max_result_bytes(&self) -> Option<usize> {
        self.max_result_mib
            .and_then(|mib| usize::try_from(mib.saturating_mul(1024 * 1024)).ok())
    }
}

/// What one file's `[mcp]` sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct McpLayer {
    pub(super) default_grant: Option<DefaultGrant>,
    pub(super) max_result_mib: Option<u64>,
}

/// `[mcp]` as a file writes it: each key optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub(super) struct McpFile {
    /// Any value, so that a wrong one gets this table's diagnostic.
    #[serde(default)]
    pub(super) default_grant: Option<toml::Value>,
    #[serde(default)]
    pub(super) max_result_mib: Option<toml::Value>,
}

/// `[mcp]`: only in the user's or the admin's file, with a value that is a
/// grant and a bound in range. Returns what a good file sets.
pub(super) fn check_mcp(
    path: &Path,
    scope: ConfigScope,
    file: Option<McpFile>,
    diags: &mut Diagnostics,
) -> McpLayer {
    let Some(file) = file else {
        return McpLayer::default();
    };
    if let ConfigScope::Project(_) = scope {
        diags.push(
            Diagnostic::error(
                "config/project-mcp",
                "a repository's config cannot set [mcp]: which servers your lead may use is \
                 yours to decide; set it in your own config.toml and remove it here",
            )
            .with_file(path)
            .with_field("mcp"),
        );
        return McpLayer::default();
    }
    McpLayer {
        max_result_mib: check_max_result(path, file.max_result_mib, diags),
        default_grant: check_grant(path, file.default_grant, diags),
    }
}

/// `[mcp] max_result_mib`: a whole number of MiB, 1 to
/// [`MAX_RESULT_MIB_LIMIT`].
fn check_max_result(
    path: &Path,
    value: Option<toml::Value>,
    diags: &mut Diagnostics,
) -> Option<u64> {
    let value = value?;
    match value.as_integer().map(u64::try_from) {
        Some(Ok(mib)) if (1..=MAX_RESULT_MIB_LIMIT).contains(&mib) => Some(mib),
        _ => {
            diags.push(
                Diagnostic::error(
                    "config/mcp-max-result-invalid",
                    format!(
                        "[mcp] max_result_mib = {value}: write a whole number of MiB from 1 to \
                         {MAX_RESULT_MIB_LIMIT} (the default is 8), or remove the key"
                    ),
                )
                .with_file(path)
                .with_field("mcp.max_result_mib"),
            );
            None
        }
    }
}

/// `[mcp] default_grant`: a word or a list of server names.
fn check_grant(
    path: &Path,
    value: Option<toml::Value>,
    diags: &mut Diagnostics,
) -> Option<DefaultGrant> {
    let value = value?;
    let shown = value.to_string();
    let read = match &value {
        toml::Value::String(w) => Ok(GrantFile::Word(w.clone())),
        toml::Value::Array(items) => items
            .iter()
            .map(|v| v.as_str().map(str::to_owned))
            .collect::<Option<Vec<String>>>()
            .map(GrantFile::Names)
            .ok_or(GrantFileError::Shape),
        _ => Err(GrantFileError::Shape),
    };
    match read.and_then(DefaultGrant::try_from) {
        Ok(g) => Some(g),
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    "config/mcp-default-grant-invalid",
                    format!("[mcp] default_grant = {shown}: {e}"),
                )
                .with_file(path)
                .with_field("mcp.default_grant"),
            );
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_reads_as_a_word_or_a_list_and_writes_back_the_same() {
        let read = |s: &str| -> DefaultGrant {
            let t: toml::Table = toml::from_str(s).unwrap();
            t["g"].clone().try_into().unwrap()
        };
        assert_eq!(read("g = \"all\""), DefaultGrant::All);
        assert_eq!(read("g = \"none\""), DefaultGrant::None);
        assert_eq!(
            read("g = [\"a\", \"p/b\", \"a\"]"),
            DefaultGrant::Named(vec!["a".into(), "p/b".into()])
        );
        assert!(DefaultGrant::Named(vec!["a".into()]).grants("a"));
        assert!(!DefaultGrant::Named(vec!["a".into()]).grants("b"));
        assert!(!DefaultGrant::None.grants("a"));
        assert_eq!(
            DefaultGrant::Named(vec!["a".into()]).as_setting(),
            "[mcp] default_grant = [\"a\"]"
        );
        let json = serde_json::to_value(DefaultGrant::None).unwrap();
        assert_eq!(json, serde_json::json!("none"));
    }

    #[test]
    fn a_bad_value_or_a_repository_setting_is_an_error_naming_the_file() {
        let path = Path::new("/u/config.toml");
        for value in ["\"some\"", "[\" \"]", "3", "[1]"] {
            let file: McpFile = toml::from_str(&format!("default_grant = {value}")).unwrap();
            let mut diags = Diagnostics::new();
            assert_eq!(
                check_mcp(path, ConfigScope::User, Some(file), &mut diags).default_grant,
                None
            );
            assert!(
                diags.has_code("config/mcp-default-grant-invalid"),
                "{diags:?}"
            );
            let d = diags.iter().next().unwrap();
            assert_eq!(d.locator.file.as_deref(), Some(path));
            assert!(d.message.contains(value), "{}", d.message);
        }
        let mut diags = Diagnostics::new();
        let file: McpFile = toml::from_str("default_grant = \"none\"").unwrap();
        let project = ConfigScope::Project(crate::trust::Trust::Trusted);
        assert_eq!(
            check_mcp(path, project, Some(file), &mut diags),
            McpLayer::default()
        );
        assert!(diags.has_code("config/project-mcp"));
    }

    #[test]
    fn the_result_bound_is_read_in_mib_and_a_bad_one_names_the_file_and_key() {
        let path = Path::new("/u/config.toml");
        let mut diags = Diagnostics::new();
        let loaded = crate::config::parse(path, "[mcp]\nmax_result_mib = 2\n", &mut diags).unwrap();
        assert_eq!(loaded.config.mcp.max_result_mib, Some(2));
        assert_eq!(loaded.config.mcp.max_result_bytes(), Some(2 * 1024 * 1024));
        let unset = crate::config::parse(path, "", &mut diags).unwrap();
        assert_eq!(unset.config.mcp.max_result_bytes(), None);
        assert!(diags.is_empty(), "{diags:?}");
        for value in ["0", "-1", "1025", "\"8\"", "1.5"] {
            let mut diags = Diagnostics::new();
            let text = format!("[mcp]\nmax_result_mib = {value}\n");
            assert!(crate::config::parse(path, &text, &mut diags).is_none());
            assert_eq!(diags.codes(), ["config/mcp-max-result-invalid"]);
            let d = diags.iter().next().unwrap();
            assert_eq!(d.locator.file.as_deref(), Some(path));
            assert_eq!(d.locator.field.as_deref(), Some("mcp.max_result_mib"));
            assert!(d.message.contains(value), "{}", d.message);
        }
    }

    #[test]
    fn the_users_file_sets_the_grant_and_is_named_as_its_source() {
        let path = Path::new("/u/config.toml");
        let mut diags = Diagnostics::new();
        let text = "[mcp]\ndefault_grant = [\"gh\"]\n";
        let loaded = crate::config::parse(path, text, &mut diags).unwrap();
        assert_eq!(
            loaded.config.mcp.default_grant,
            DefaultGrant::Named(vec!["gh".into()])
        );
        assert_eq!(loaded.default_grant_source.unwrap().path, path);
        let unset = crate::config::parse(path, "", &mut diags).unwrap();
        assert_eq!(unset.config.mcp.default_grant, DefaultGrant::All);
        assert!(diags.is_empty(), "{diags:?}");
        let bad = "[mcp]\ndefault_grant = 3\nother = 1\n";
        assert!(crate::config::parse(path, bad, &mut diags).is_none());
        assert_eq!(
            diags.codes(),
            ["config/unknown-key", "config/mcp-default-grant-invalid"]
        );
    }
}
