//! Placeholder expansion in descriptions and bodies.
//!
//! Authors write `{SKILL_DIR}/scripts/run.sh` instead of an absolute path
//! that would break as soon as the bundle moves. Exactly four placeholders
//! exist; any other text in braces (code samples, templates, `{baseDir}`
//! from other clients) is left untouched.

use std::path::{Path, PathBuf};

/// The directories a placeholder can name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaceholderDirs {
    /// `{EVOFLUX_CONFIG_DIR}`.
    pub config_dir: PathBuf,
    /// `{AGENTS_DIR}`.
    pub agents_dir: PathBuf,
    /// `{SKILLS_DIR}`.
    pub skills_dir: PathBuf,
}

impl PlaceholderDirs {
    /// The conventional layout below the config dir.
    pub fn from_config_dir(config_dir: impl Into<PathBuf>) -> Self {
        let config_dir = config_dir.into();
        PlaceholderDirs {
            agents_dir: config_dir.join("agents"),
            skills_dir: config_dir.join("skills"),
            config_dir,
        }
    }
}

/// Replaces the four placeholders in `text`; `{SKILL_DIR}` becomes
/// `skill_dir`.
pub fn expand(text: &str, dirs: &PlaceholderDirs, skill_dir: &Path) -> String {
    if !text.contains('{') {
        return text.to_owned();
    }
    let pairs: [(&str, &Path); 4] = [
        ("{EVOFLUX_CONFIG_DIR}", &dirs.config_dir),
        ("{AGENTS_DIR}", &dirs.agents_dir),
        ("{SKILLS_DIR}", &dirs.skills_dir),
        ("{SKILL_DIR}", skill_dir),
    ];
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while let Some(i) = rest.find('{') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        for (token, path) in pairs {
            if let Some(after) = tail.strip_prefix(token) {
                out.push_str(&path.to_string_lossy());
                rest = after;
                continue 'scan;
            }
        }
        out.push('{');
        rest = &tail[1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_the_four_and_leaves_other_braces() {
        let dirs = PlaceholderDirs::from_config_dir("/cfg");
        let text = "run {SKILL_DIR}/x.sh; see {SKILLS_DIR} {AGENTS_DIR} {EVOFLUX_CONFIG_DIR}/c \
                    but not {baseDir} or {SKILL_DIR or {}";
        assert_eq!(
            expand(text, &dirs, Path::new("/s/review")),
            "run /s/review/x.sh; see /cfg/skills /cfg/agents /cfg/c but not {baseDir} or \
             {SKILL_DIR or {}"
        );
        assert_eq!(expand("no braces", &dirs, Path::new("/s")), "no braces");
        assert_eq!(
            expand("ünï {SKILL_DIR}ç", &dirs, Path::new("/s")),
            "ünï /sç"
        );
    }
}
