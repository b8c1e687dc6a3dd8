//! Where evoflux keeps its files.
//!
//! Four directories: config (user `config.toml`, agents, skills), data
//! (sessions, registry, artifacts), cache (converted models, derived
//! indexes) and admin (machine-wide policy). Each comes from an
//! `EVOFLUX_*_DIR` variable when set, else the XDG location. Resolution takes
//! the environment as a function so tests never touch the real home
//! directory or mutate the process environment.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::diagnostic::Diagnostic;

/// The four directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DirKind {
    Config,
    Data,
    Cache,
    Admin,
}

impl DirKind {
    pub const ALL: [DirKind; 4] = [
        DirKind::Config,
        DirKind::Data,
        DirKind::Cache,
        DirKind::Admin,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            DirKind::Config => "config",
            DirKind::Data => "data",
            DirKind::Cache => "cache",
            DirKind::Admin => "admin",
        }
    }

    /// The evoflux override variable.
    pub const fn env_var(self) -> &'static str {
        match self {
            DirKind::Config => "EVOFLUX_CONFIG_DIR",
            DirKind::Data => "EVOFLUX_DATA_DIR",
            DirKind::Cache => "EVOFLUX_CACHE_DIR",
            DirKind::Admin => "EVOFLUX_ADMIN_DIR",
        }
    }

    /// The XDG base variable and the fallback below `$HOME`, or `None` for
    /// the admin directory, which is fixed.
    const fn xdg(self) -> Option<(&'static str, &'static str)> {
        match self {
            DirKind::Config => Some(("XDG_CONFIG_HOME", ".config")),
            DirKind::Data => Some(("XDG_DATA_HOME", ".local/share")),
            DirKind::Cache => Some(("XDG_CACHE_HOME", ".cache")),
            DirKind::Admin => None,
        }
    }
}

impl fmt::Display for DirKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a resolved directory came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "source", content = "variable", rename_all = "lowercase")]
pub enum DirSource {
    /// An `EVOFLUX_*_DIR` variable.
    Env(&'static str),
    /// An XDG base variable such as `XDG_CONFIG_HOME`.
    Xdg(&'static str),
    /// The XDG default below `$HOME`.
    Home,
    /// Built in (`/etc/evoflux`).
    Default,
}

impl fmt::Display for DirSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DirSource::Env(var) | DirSource::Xdg(var) => write!(f, "${var}"),
            DirSource::Home => f.write_str("$HOME"),
            DirSource::Default => f.write_str("default"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResolvedDir {
    pub path: PathBuf,
    #[serde(flatten)]
    pub source: DirSource,
}

/// The resolved directories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dirs {
    pub config: ResolvedDir,
    pub data: ResolvedDir,
    pub cache: ResolvedDir,
    pub admin: ResolvedDir,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DirsError {
    #[error("${var} must be an absolute path, got `{}`: set it to a full path such as /srv/evoflux", value.display())]
    NotAbsolute { var: &'static str, value: PathBuf },
    #[error("cannot place the {kind} directory: $HOME is not set; set $HOME or ${override_var}")]
    HomeUnset {
        kind: DirKind,
        override_var: &'static str,
    },
}

impl DirsError {
    pub fn to_diagnostic(&self) -> Diagnostic {
        match self {
            DirsError::NotAbsolute { var, .. } => {
                Diagnostic::error("paths/not-absolute", self.to_string()).with_field(*var)
            }
            DirsError::HomeUnset { override_var, .. } => {
                Diagnostic::error("paths/home-unset", self.to_string()).with_field(*override_var)
            }
        }
    }
}

impl Dirs {
    /// Resolves from the process environment.
    pub fn from_env() -> Result<Dirs, DirsError> {
        Self::resolve(|name| std::env::var_os(name))
    }

    /// Resolves from an arbitrary environment lookup. Empty values count as
    /// unset; relative XDG values are ignored, as the XDG spec requires,
    /// while a relative `EVOFLUX_*_DIR` is an error because the user asked
    /// for it explicitly.
    pub fn resolve(env: impl Fn(&str) -> Option<OsString>) -> Result<Dirs, DirsError> {
        let get = |name: &str| env(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let one = |kind: DirKind| -> Result<ResolvedDir, DirsError> {
            let var = kind.env_var();
            if let Some(path) = get(var) {
                if !path.is_absolute() {
                    return Err(DirsError::NotAbsolute { var, value: path });
                }
                return Ok(ResolvedDir {
                    path,
                    source: DirSource::Env(var),
                });
            }
            let Some((xdg_var, home_suffix)) = kind.xdg() else {
                return Ok(ResolvedDir {
                    path: PathBuf::from("/etc/evoflux"),
                    source: DirSource::Default,
                });
            };
            if let Some(base) = get(xdg_var).filter(|p| p.is_absolute()) {
                return Ok(ResolvedDir {
                    path: base.join("evoflux"),
                    source: DirSource::Xdg(xdg_var),
                });
            }
            match get("HOME") {
                Some(home) if home.is_absolute() => Ok(ResolvedDir {
                    path: home.join(home_suffix).join("evoflux"),
                    source: DirSource::Home,
                }),
                _ => Err(DirsError::HomeUnset {
                    kind,
                    override_var: var,
                }),
            }
        };
        Ok(Dirs {
            config: one(DirKind::Config)?,
            data: one(DirKind::Data)?,
            cache: one(DirKind::Cache)?,
            admin: one(DirKind::Admin)?,
        })
    }

    pub fn get(&self, kind: DirKind) -> &ResolvedDir {
        match kind {
            DirKind::Config => &self.config,
            DirKind::Data => &self.data,
            DirKind::Cache => &self.cache,
            DirKind::Admin => &self.admin,
        }
    }

    /// The user's `config.toml`.
    pub fn config_file(&self) -> PathBuf {
        self.config.path.join("config.toml")
    }

    pub fn config_dir(&self) -> &Path {
        &self.config.path
    }

    pub fn data_dir(&self) -> &Path {
        &self.data.path
    }

    pub fn cache_dir(&self) -> &Path {
        &self.cache.path
    }

    pub fn admin_dir(&self) -> &Path {
        &self.admin.path
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn home_defaults() {
        let d = Dirs::resolve(env(&[("HOME", "/home/u")])).unwrap();
        assert_eq!(d.config.path, Path::new("/home/u/.config/evoflux"));
        assert_eq!(d.data.path, Path::new("/home/u/.local/share/evoflux"));
        assert_eq!(d.cache.path, Path::new("/home/u/.cache/evoflux"));
        assert_eq!(d.admin.path, Path::new("/etc/evoflux"));
        assert_eq!(d.config.source, DirSource::Home);
        assert_eq!(d.admin.source, DirSource::Default);
        assert_eq!(
            d.config_file(),
            Path::new("/home/u/.config/evoflux/config.toml")
        );
    }

    #[test]
    fn xdg_then_evoflux_overrides() {
        let d = Dirs::resolve(env(&[
            ("HOME", "/home/u"),
            ("XDG_CONFIG_HOME", "/x/conf"),
            ("XDG_DATA_HOME", "relative/ignored"),
            ("EVOFLUX_CACHE_DIR", "/c"),
            ("XDG_CACHE_HOME", "/x/cache"),
            ("EVOFLUX_ADMIN_DIR", "/adm"),
        ]))
        .unwrap();
        assert_eq!(d.config.path, Path::new("/x/conf/evoflux"));
        assert_eq!(d.config.source, DirSource::Xdg("XDG_CONFIG_HOME"));
        assert_eq!(d.data.path, Path::new("/home/u/.local/share/evoflux"));
        assert_eq!(d.cache.path, Path::new("/c"));
        assert_eq!(d.cache.source, DirSource::Env("EVOFLUX_CACHE_DIR"));
        assert_eq!(d.admin.path, Path::new("/adm"));
    }

    #[test]
    fn every_dir_can_be_set_without_home() {
        let d = Dirs::resolve(env(&[
            ("EVOFLUX_CONFIG_DIR", "/1"),
            ("EVOFLUX_DATA_DIR", "/2"),
            ("EVOFLUX_CACHE_DIR", "/3"),
            ("EVOFLUX_ADMIN_DIR", "/4"),
        ]))
        .unwrap();
        for (kind, want) in DirKind::ALL.into_iter().zip(["/1", "/2", "/3", "/4"]) {
            assert_eq!(d.get(kind).path, Path::new(want));
            assert_eq!(d.get(kind).source, DirSource::Env(kind.env_var()));
        }
    }

    #[test]
    fn relative_override_is_an_error_and_empty_is_unset() {
        let e = Dirs::resolve(env(&[("HOME", "/h"), ("EVOFLUX_DATA_DIR", "data")])).unwrap_err();
        assert_eq!(e.to_diagnostic().code, "paths/not-absolute");
        assert!(e.to_string().contains("EVOFLUX_DATA_DIR"));
        let d = Dirs::resolve(env(&[("HOME", "/h"), ("EVOFLUX_DATA_DIR", "")])).unwrap();
        assert_eq!(d.data.source, DirSource::Home);
    }

    #[test]
    fn no_home_is_a_clear_error() {
        let e = Dirs::resolve(env(&[])).unwrap_err();
        assert_eq!(e.to_diagnostic().code, "paths/home-unset");
        assert!(e.to_string().contains("EVOFLUX_CONFIG_DIR"), "{e}");
    }

    #[test]
    fn json_shape_names_the_source() {
        let d = Dirs::resolve(env(&[("HOME", "/h"), ("EVOFLUX_DATA_DIR", "/d")])).unwrap();
        let v = serde_json::to_value(&d).unwrap();
        assert_eq!(v["data"]["path"], "/d");
        assert_eq!(v["data"]["source"], "env");
        assert_eq!(v["data"]["variable"], "EVOFLUX_DATA_DIR");
        assert_eq!(v["config"]["source"], "home");
        assert_eq!(v["admin"]["source"], "default");
    }
}
