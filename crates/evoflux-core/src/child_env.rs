//! Which of evoflux's environment variables a child process inherits.
//!
//! Shell commands, command-backed tools and stdio MCP servers never get
//! evoflux's environment wholesale: it holds provider API keys and
//! evoflux's own `EVOFLUX_*` settings, which model-written commands and
//! third-party servers must not see. They all start from this one
//! allowlist of what makes a program behave as in the user's terminal
//! (executables, user, locale, terminal, temp dirs, time zone); each
//! caller then adds exactly what it declares.

/// Variables a child inherits from evoflux when they are set.
pub const INHERITED_VARS: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TERM_PROGRAM",
    "TERM_PROGRAM_VERSION",
    "NO_COLOR",
    "FORCE_COLOR",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "SYSTEMROOT",
];

/// Locale variables are inherited as a family (`LC_ALL`, `LC_CTYPE`, …).
pub const INHERITED_PREFIX: &str = "LC_";

/// evoflux's own configuration: never inherited, even when declared.
pub const OWN_PREFIX: &str = "EVOFLUX_";

/// Whether a child inherits `name` without declaring it.
pub fn is_inherited(name: &str) -> bool {
    !name.starts_with(OWN_PREFIX)
        && (INHERITED_VARS.contains(&name) || name.starts_with(INHERITED_PREFIX))
}

/// Whether `command` names one executable: not empty, and no whitespace
/// or NUL. A server or tool command is spawned without a shell, so
/// `"npx -y thing"` would look for a program of that whole name; its
/// arguments belong in `args`. The one rule for a command looked up on
/// `PATH` in `mcp.json`, global or plugin (a plugin's `./relative` command
/// names one file of its package, whose name may hold spaces).
pub fn is_one_executable(command: &str) -> bool {
    !command.is_empty() && !command.chars().any(|c| c.is_whitespace() || c == '\0')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_executable_has_no_spaces_or_nul() {
        assert!(is_one_executable("npx"));
        assert!(is_one_executable("./bin/server"));
        for bad in ["", "npx -y thing", " npx", "a\tb", "a\0b"] {
            assert!(!is_one_executable(bad), "{bad:?}");
        }
    }

    #[test]
    fn keys_and_own_settings_are_not_inherited() {
        for yes in ["PATH", "HOME", "LC_ALL", "LC_CTYPE", "TMPDIR"] {
            assert!(is_inherited(yes), "{yes}");
        }
        for no in [
            "OPENAI_API_KEY",
            "EVOFLUX_DATA_DIR",
            "AWS_SECRET_ACCESS_KEY",
            "LD_PRELOAD",
        ] {
            assert!(!is_inherited(no), "{no}");
        }
    }
}
