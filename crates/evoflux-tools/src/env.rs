//! The environment a command runs with. Commands never inherit the
//! harness's environment wholesale: it holds provider API keys and
//! evoflux's own `EVOFLUX_*` settings, which a model-written command
//! must not see. A command gets a fixed allowlist of the variables that
//! make tools behave like in the user's terminal (PATH, locale, terminal,
//! temp dirs), plus, for a command-backed project tool, exactly the names
//! its definition declares.

use std::ffi::{OsStr, OsString};

use evoflux_core::child_env::{OWN_PREFIX, is_inherited};

/// Variables every command inherits from the parent when present: the
/// one allowlist of `evoflux_core::child_env`, shared with MCP servers.
pub use evoflux_core::child_env::INHERITED_VARS as ALLOWED_ENV;

/// Used when the parent has no `PATH` at all, so `sh -c 'ls'` still works.
const FALLBACK_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The child's complete environment: the allowlisted variables of
/// `parent`, plus the `declared` names (a command tool's `env`), never a
/// variable of evoflux's own.
pub(crate) fn child_env(
    parent: &[(OsString, OsString)],
    declared: &[String],
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = parent
        .iter()
        .filter(|(name, _)| allowed(name, declared))
        .cloned()
        .collect();
    if !out.iter().any(|(name, _)| name == "PATH") {
        out.push(("PATH".into(), FALLBACK_PATH.into()));
    }
    out
}

fn allowed(name: &OsStr, declared: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    // A declared name never unlocks evoflux's own settings.
    is_inherited(name) || (!name.starts_with(OWN_PREFIX) && declared.iter().any(|d| d == name))
}

/// The value of `name` in `env`, if set and valid UTF-8.
pub(crate) fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .rev()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_os_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn only_allowlisted_and_declared_names_pass() {
        let parent = env(&[
            ("PATH", "/bin"),
            ("LC_ALL", "C"),
            ("OPENAI_API_KEY", "sk"),
            ("EVOFLUX_HOME", "/x"),
            ("DEPLOY_TOKEN", "t"),
        ]);
        assert_eq!(names(&child_env(&parent, &[])), ["PATH", "LC_ALL"]);
        assert_eq!(
            names(&child_env(
                &parent,
                &["DEPLOY_TOKEN".into(), "EVOFLUX_HOME".into()]
            )),
            ["PATH", "LC_ALL", "DEPLOY_TOKEN"]
        );
    }

    #[test]
    fn a_missing_path_gets_a_fallback() {
        let out = child_env(&env(&[("HOME", "/h")]), &[]);
        assert_eq!(lookup(&out, "PATH"), Some(OsStr::new(FALLBACK_PATH)));
    }
}
