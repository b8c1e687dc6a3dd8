//! How evoflux runs git itself, and what a git repository may hold before
//! evoflux treats it as plain data.
//!
//! A repository's configuration can name programs git runs:
//! `core.fsmonitor` on every index refresh (`git status`, `git diff`),
//! hooks, external diff and textconv drivers, a pager, an ssh command.
//! evoflux's own git calls (`/diff` in chat, fleets, replay, evals) are
//! made on the user's behalf outside any sandbox, so each one turns all of
//! them off with [`HARDENED_CONFIG`], whatever the repository says.

/// `-c` settings given before the subcommand of every git call evoflux
/// makes: no fsmonitor, no hooks, no pager, no credential helper (an empty
/// value clears the list), no `ext::` transport. An external diff driver
/// has no setting that turns it off: diff-like subcommands (`diff`, `log
/// -p`, `show`) pass `--no-ext-diff --no-textconv`.
pub const HARDENED_CONFIG: [&str; 5] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "credential.helper=",
    "protocol.ext.allow=never",
];

/// Environment variables that would name a program for git to run; every
/// git call evoflux makes removes them.
pub const UNSAFE_ENV: [&str; 5] = [
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
];

/// The arguments that go between `git` and its subcommand.
pub fn hardened_args() -> impl Iterator<Item = String> {
    HARDENED_CONFIG
        .iter()
        .flat_map(|setting| ["-c".to_owned(), (*setting).to_owned()])
}

/// A `git` command with [`hardened_args`] and without [`UNSAFE_ENV`];
/// diff-like subcommands should also pass `--no-ext-diff --no-textconv`.
pub fn command() -> std::process::Command {
    let mut cmd = std::process::Command::new("git");
    cmd.args(hardened_args());
    for name in UNSAFE_ENV {
        cmd.env_remove(name);
    }
    cmd
}

/// Configuration keys (section, key) a repository that a command created
/// may hold and still be left in place: what `git init`, `git clone` and
/// `cargo new` write. `*` stands for a subsection (a remote's or branch's
/// name).
const PLAIN_KEYS: &[(&str, &str)] = &[
    ("core", "repositoryformatversion"),
    ("core", "filemode"),
    ("core", "bare"),
    ("core", "logallrefupdates"),
    ("core", "ignorecase"),
    ("core", "precomposeunicode"),
    ("core", "symlinks"),
    ("core", "autocrlf"),
    ("extensions", "objectformat"),
    ("init", "defaultbranch"),
    ("remote", "url"),
    ("remote", "fetch"),
    ("remote", "pushurl"),
    ("branch", "remote"),
    ("branch", "merge"),
    ("user", "name"),
    ("user", "email"),
    ("submodule", "url"),
    ("submodule", "active"),
];

/// Why a git configuration file is more than plain data, or `Ok` when every
/// setting in it is on the list of plain keys.
pub fn plain_config(text: &str) -> Result<(), String> {
    let mut section = String::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            // Git reads a setting after the `]` on the same line
            // (`[core]fsmonitor=x`): a header is plain only when nothing
            // but a comment follows it.
            let Some((inner, after)) = header.split_once(']') else {
                return Err(format!(
                    "line {}: a section header this check cannot read",
                    n + 1
                ));
            };
            let after = after.trim_start();
            if !(after.is_empty() || after.starts_with('#') || after.starts_with(';')) {
                return Err(format!("line {}: a setting after a section header", n + 1));
            }
            section = inner
                .split(|c: char| c.is_whitespace() || c == '"' || c == '.')
                .next()
                .unwrap_or_default()
                .to_ascii_lowercase();
            continue;
        }
        let key = line
            .split(['=', ' ', '\t'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if !PLAIN_KEYS.iter().any(|(s, k)| *s == section && *k == key) {
            return Err(format!(
                "line {}: `{section}.{key}` is not a plain setting",
                n + 1
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_git_init_and_clone_write_is_plain_and_code_is_not() {
        let init = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n";
        assert_eq!(plain_config(init), Ok(()));
        let clone = format!(
            "{init}[remote \"origin\"]\n\turl = https://example.org/x.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n[branch \"main\"]\n\tremote = origin\n\tmerge = refs/heads/main\n"
        );
        assert_eq!(plain_config(&clone), Ok(()));
        for bad in [
            "[core]\n\tfsmonitor = ./run.sh\n",
            "[core]\nhooksPath = .githooks\n",
            "[include]\n\tpath = ../x\n",
            "[diff \"x\"]\n\ttextconv = sh\n",
            "[alias]\n\tst = !sh\n",
            "[core\n",
            "[core]fsmonitor=./x #]\n",
            "[core] hooksPath = x\n",
        ] {
            assert!(plain_config(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn every_setting_comes_before_the_subcommand_as_a_pair() {
        let args: Vec<String> = hardened_args().collect();
        assert_eq!(args.len(), 2 * HARDENED_CONFIG.len());
        assert!(args.chunks(2).all(|p| p[0] == "-c"));
        assert!(args.contains(&"core.fsmonitor=false".to_owned()));
    }
}
