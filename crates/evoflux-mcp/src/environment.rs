//! The environment of stdio servers, built explicitly.
//!
//! A server process never inherits evoflux's environment wholesale: API
//! keys for model providers and anything else the user exported would
//! leak into every third-party server. The base is a short allowlist of
//! variables a program needs to run at all (where executables are, who
//! the user is, locale, temp dir); the declaration's overlay goes on top.

use std::collections::BTreeMap;

/// Variables copied from the parent environment when present (plus the
/// `LC_*` family): the one allowlist of `evoflux_core::child_env`, shared
/// with shell commands and command tools.
pub use evoflux_core::child_env::INHERITED_VARS as BASE_VARS;
use evoflux_core::child_env::is_inherited;

/// The allowlisted part of `parent`.
pub fn base_environment<I, K, V>(parent: I) -> BTreeMap<String, String>
where
    I: IntoIterator<Item = (K, V)>,
    K: Into<String>,
    V: Into<String>,
{
    parent
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .filter(|(k, _)| is_inherited(k))
        .collect()
}

/// The allowlisted part of this process's environment (variables that are
/// not valid UTF-8 are left out).
pub fn process_base_environment() -> BTreeMap<String, String> {
    base_environment(
        std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?))),
    )
}

/// `base` with `overlay` on top.
pub fn compose(
    base: &BTreeMap<String, String>,
    overlay: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut env = base.clone();
    env.extend(overlay.iter().map(|(k, v)| (k.clone(), v.clone())));
    env
}

const ROOT_PLACEHOLDER: &str = "${PLUGIN_ROOT}";
const DATA_PLACEHOLDER: &str = "${PLUGIN_DATA}";

/// Replaces every exact `${PLUGIN_ROOT}` and `${PLUGIN_DATA}` in `text` in
/// one left-to-right pass. Replacement text is never scanned again, so a
/// root path that itself contains `${PLUGIN_DATA}` stays as it is; any
/// other `${NAME}` or `$NAME` is left literal.
pub fn expand_placeholders(text: &str, root: &str, data: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(pos) = rest.find("${") {
        out.push_str(&rest[..pos]);
        let tail = &rest[pos..];
        if let Some(after) = tail.strip_prefix(ROOT_PLACEHOLDER) {
            out.push_str(root);
            rest = after;
        } else if let Some(after) = tail.strip_prefix(DATA_PLACEHOLDER) {
            out.push_str(data);
            rest = after;
        } else {
            out.push_str("${");
            rest = &tail[2..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_allowlisted_variables_pass() {
        let env = base_environment([
            ("PATH", "/bin"),
            ("HOME", "/home/u"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
        ]);
        assert_eq!(env.keys().collect::<Vec<_>>(), ["HOME", "PATH"]);
    }

    #[test]
    fn overlay_wins() {
        let base = base_environment([("PATH", "/bin")]);
        let env = compose(&base, &BTreeMap::from([("PATH".into(), "/opt".into())]));
        assert_eq!(env["PATH"], "/opt");
    }

    #[test]
    fn expansion_is_exact_and_single_pass() {
        let e = |t: &str| expand_placeholders(t, "/r", "/d");
        assert_eq!(e("${PLUGIN_ROOT}/bin"), "/r/bin");
        assert_eq!(e("a=${PLUGIN_DATA}:${PLUGIN_ROOT}"), "a=/d:/r");
        assert_eq!(e("${PLUGIN_ROOT}${PLUGIN_ROOT}"), "/r/r");
        for literal in [
            "$HOME",
            "${OTHER}",
            "${PLUGIN_ROOT_SUFFIX}",
            "$PLUGIN_ROOT",
            "${",
            "x${y",
        ] {
            assert_eq!(e(literal), literal);
        }
        assert_eq!(e("${${PLUGIN_DATA}}"), "${/d}");
        // A root path containing a placeholder is not expanded twice.
        assert_eq!(
            expand_placeholders("${PLUGIN_ROOT}/x", "/p/${PLUGIN_DATA}", "/d"),
            "/p/${PLUGIN_DATA}/x"
        );
        assert_eq!(
            expand_placeholders("${PLUGIN_DATA}", "/r", "/q/${PLUGIN_ROOT}"),
            "/q/${PLUGIN_ROOT}"
        );
    }
}
