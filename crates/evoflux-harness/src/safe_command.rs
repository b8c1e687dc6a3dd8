//! Shell commands that are safe to run without asking, and the key an
//! "always" answer to a shell command is remembered by.
//!
//! A command is judged only when it is one simple command: words with
//! plain or single/double quoting and nothing the shell would execute or
//! redirect (`;`, `&`, `|`, `<`, `>`, `$`, backquotes, parentheses, a
//! backslash, a newline). A read-only program from the list below, without
//! a flag that would make it write or run something else, never asks, even
//! when the user's policy for `shell` is `always`. It still runs in the
//! sandbox: skipping the question is all this decides.

/// Programs that only read, whatever their arguments, and the flags that
/// would make one of them write a file or run another program.
const READ_ONLY: &[(&str, &[&str])] = &[
    ("ls", &[]),
    ("pwd", &[]),
    ("cat", &[]),
    ("head", &[]),
    ("tail", &[]),
    ("wc", &[]),
    ("grep", &[]),
    ("rg", &["--pre", "--pre-glob"]),
    ("echo", &[]),
    ("which", &[]),
    ("file", &[]),
    ("stat", &[]),
    ("tree", &["-o"]),
    ("du", &[]),
    ("df", &[]),
    ("basename", &[]),
    ("dirname", &[]),
    ("realpath", &[]),
    ("uname", &[]),
    ("whoami", &[]),
    ("cut", &[]),
    ("nl", &[]),
    ("diff", &[]),
    ("sort", &["-o", "--output", "--compress-program"]),
    ("uniq", &[]),
];

/// `git` subcommands that only read, and their writing or program-running
/// flags.
const GIT_READ_ONLY: &[(&str, &[&str])] = &[
    ("status", &[]),
    ("diff", &["--output", "--ext-diff"]),
    ("log", &["--output", "--ext-diff"]),
    ("show", &["--output", "--ext-diff"]),
    ("rev-parse", &[]),
    ("ls-files", &[]),
    ("blame", &[]),
];

/// The words of `command` when it is one simple command, else `None`.
pub fn simple_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.trim().chars();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' => return None,
                        c => word.push(c),
                    }
                }
            }
            ';' | '&' | '|' | '<' | '>' | '$' | '`' | '(' | ')' | '\\' | '\n' | '\r' => {
                return None;
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    (!words.is_empty()).then_some(words)
}

/// Whether `command` only reads and may run without asking.
pub fn is_read_only(command: &str) -> bool {
    let Some(words) = simple_words(command) else {
        return false;
    };
    let forbidden_in = |args: &[String], flags: &[&str]| {
        args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || a.starts_with(&format!("{f}=")))
        })
    };
    let (program, args) = (&words[0], &words[1..]);
    if program == "git" {
        let Some(sub) = args.first() else {
            return false;
        };
        return GIT_READ_ONLY
            .iter()
            .find(|(name, _)| name == sub)
            .is_some_and(|(_, flags)| !forbidden_in(&args[1..], flags));
    }
    READ_ONLY
        .iter()
        .find(|(name, _)| name == program)
        .is_some_and(|(_, flags)| !forbidden_in(args, flags))
}

/// What an "always" answer to `command` covers: its program for a simple
/// command (`cargo test` → `cargo`), else the exact command line.
pub fn grant_command(command: &str) -> String {
    match simple_words(command) {
        Some(words) => words[0].clone(),
        None => command.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_only_commands_are_recognised_and_anything_else_is_not() {
        for safe in [
            "ls -la",
            "git status",
            "git diff --stat HEAD~1",
            "rg 'fn main' crates",
            "rg \"fn main\" crates",
            "cat README.md",
            "ls *.rs",
        ] {
            assert!(is_read_only(safe), "{safe}");
        }
        for unsafe_ in [
            "ls; rm -rf /",
            "cat a > b",
            "git push",
            "git -c core.pager=sh status",
            "git diff --output=/tmp/x",
            "rg --pre ./evil x",
            "sort -o out in",
            "echo $(whoami)",
            "cat `x`",
            "rm -rf target",
            "ls | sh",
            "echo \"$HOME\"",
            "cargo test",
            "git",
            "",
            "cat 'unterminated",
        ] {
            assert!(!is_read_only(unsafe_), "{unsafe_}");
        }
    }

    #[test]
    fn grants_cover_a_program_or_an_exact_command_line() {
        assert_eq!(grant_command("cargo test -p x"), "cargo");
        assert_eq!(
            grant_command("cargo test | tee log"),
            "cargo test | tee log"
        );
    }
}
