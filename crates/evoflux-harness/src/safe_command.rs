//! Shell commands that may skip an `always` approval, and the key an
//! "always" answer to a shell command is remembered by.
//!
//! With `[approval] shell = "always"` the user wants to see every command
//! that could change something or run code nobody read. Asking before a
//! plain read is noise, so [`is_read_only`] lets a few through — and a
//! command that only *looks* read-only is the usual way around such a
//! prompt: `git status` runs the repository's `core.fsmonitor`,
//! `uniq IN OUT` and `sort -o F` write files, `find -delete` deletes. So
//! the judgement is an allow-list with argument checks, never a list of
//! dangers, and when in doubt the command asks:
//!
//! - The command line is split into words the way a POSIX shell (or zsh)
//!   would. Anything the shell itself would execute, redirect or expand
//!   beyond file-name globs — `;`, `&`, `<`, `>`, `$`, backquotes,
//!   parentheses, braces, a backslash, a comment, a newline — makes it
//!   ask. Quoted text is inert: in `rg '>' f` the `>` is an argument.
//! - A pipeline (`rg x | head`) is judged stage by stage: none of the
//!   listed programs runs or writes what it reads, so a pipeline of them
//!   only reads. `||` and `|&` ask.
//! - Every stage's program must be in [`PROGRAMS`] and pass its argument
//!   check. An assignment (`X=1 ls`) or a path (`/bin/ls`) is not a listed
//!   program, so it asks.
//! - A glob that may expand to a word starting with `-` (`*`, `?x`, `-*`)
//!   counts as any option wherever options matter: a file named
//!   `--output=x` must not turn `sort *` into a write.
//!
//! Passing only skips the question: the command still runs in the sandbox.

/// How a listed program's arguments are judged.
#[derive(Debug, Clone, Copy)]
enum Check {
    /// No option of the program writes a file or runs another program.
    Any,
    /// Read-only unless given one of these options: `short` letters alone
    /// or bundled (`-uo`), `long` names also abbreviated (GNU getopt takes
    /// `--out` for `--output`).
    Without {
        short: &'static str,
        long: &'static [&'static str],
    },
    /// No action that deletes, writes a file or runs a program
    /// ([`FIND_ACTIONS`]).
    Find,
    /// At most one operand: `uniq`'s second one is an output file.
    Uniq,
    /// No `-i`, and a script that only prints by line number.
    Sed,
    /// The few subcommands that run no repository-configured program
    /// ([`git_reads_only`]).
    Git,
}

/// The programs that may skip an `always` approval, and how each one's
/// arguments are judged. Options are those of GNU coreutils, findutils
/// and sed, ripgrep, tree and file; the BSD tools accept no writing option
/// these checks miss.
const PROGRAMS: &[(&str, Check)] = &[
    ("ls", Check::Any),
    ("pwd", Check::Any),
    ("cat", Check::Any),
    ("head", Check::Any),
    ("tail", Check::Any),
    ("wc", Check::Any),
    ("grep", Check::Any),
    ("echo", Check::Any),
    ("which", Check::Any),
    ("stat", Check::Any),
    ("du", Check::Any),
    ("df", Check::Any),
    ("basename", Check::Any),
    ("dirname", Check::Any),
    ("realpath", Check::Any),
    ("uname", Check::Any),
    ("whoami", Check::Any),
    ("cut", Check::Any),
    ("nl", Check::Any),
    ("diff", Check::Any),
    (
        "rg",
        Check::Without {
            short: "",
            long: &["pre", "pre-glob", "hostname-bin"],
        },
    ),
    (
        "sort",
        Check::Without {
            short: "o",
            long: &["output", "compress-program"],
        },
    ),
    (
        "file",
        Check::Without {
            short: "C",
            long: &["compile"],
        },
    ),
    // `-R` reruns tree with `-o 00Tree.html` in every directory.
    (
        "tree",
        Check::Without {
            short: "oR",
            long: &[],
        },
    ),
    ("find", Check::Find),
    ("uniq", Check::Uniq),
    ("sed", Check::Sed),
    ("git", Check::Git),
];

/// `find` primaries that delete, write a file or run a program, matched as
/// prefixes (`-exec` covers `-execdir`, `-fprint` covers `-fprintf`).
const FIND_ACTIONS: &[&str] = &["delete", "exec", "ok", "fprint", "fls"];

/// One word of a command as the shell would pass it, quotes removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Word {
    text: String,
    /// Holds an unquoted glob character, so the shell may replace it with
    /// any number of file names.
    glob: bool,
    /// Some of those names may start with `-` and be read as options: the
    /// word starts with a glob, or with `-` itself.
    wild: bool,
}

/// A word being read; it exists once any character or quote of it is.
#[derive(Debug, Default)]
struct WordBuilder {
    text: String,
    glob: bool,
    glob_first: bool,
}

impl WordBuilder {
    fn quoted(&mut self, c: char) {
        self.text.push(c);
    }

    /// Globs are bash's `*?[` and zsh's `^` and `~` (`extendedglob`); a
    /// `~` that starts a word is the home directory instead.
    fn unquoted(&mut self, c: char) {
        let glob = matches!(c, '*' | '?' | '[' | '^') || (c == '~' && !self.text.is_empty());
        if glob && self.text.is_empty() {
            self.glob_first = true;
        }
        self.glob |= glob;
        self.text.push(c);
    }

    fn finish(self) -> Word {
        let wild = self.glob && (self.glob_first || self.text.starts_with('-'));
        Word {
            text: self.text,
            glob: self.glob,
            wild,
        }
    }
}

/// The stages of `command` when it is one simple command or a pipeline of
/// them, each its words; `None` for anything else the shell would do.
fn pipeline(command: &str) -> Option<Vec<Vec<Word>>> {
    let mut stages = Vec::new();
    let mut words = Vec::new();
    let mut word: Option<WordBuilder> = None;
    let mut chars = command.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => words.extend(word.take().map(WordBuilder::finish)),
            '|' => {
                words.extend(word.take().map(WordBuilder::finish));
                if words.is_empty() || matches!(chars.peek(), Some('|' | '&')) {
                    return None;
                }
                stages.push(std::mem::take(&mut words));
            }
            '\'' => {
                let word = word.get_or_insert_default();
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.quoted(c),
                    }
                }
            }
            '"' => {
                let word = word.get_or_insert_default();
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' | '\\' => return None,
                        c => word.quoted(c),
                    }
                }
            }
            ';' | '&' | '<' | '>' | '(' | ')' | '$' | '`' | '\\' | '#' | '{' | '}' => return None,
            c if c.is_control() => return None,
            c => word.get_or_insert_default().unquoted(c),
        }
    }
    words.extend(word.map(WordBuilder::finish));
    if words.is_empty() {
        return None;
    }
    stages.push(words);
    Some(stages)
}

/// The words of `command` when it is one simple command, else `None`.
pub fn simple_words(command: &str) -> Option<Vec<String>> {
    let mut stages = pipeline(command)?;
    if stages.len() != 1 {
        return None;
    }
    let words = stages.pop()?;
    Some(words.into_iter().map(|w| w.text).collect())
}

/// Whether `command` only reads and may run without asking, even when the
/// user's policy for `shell` is `always`.
pub fn is_read_only(command: &str) -> bool {
    pipeline(command).is_some_and(|stages| stages.iter().all(|words| stage_reads_only(words)))
}

/// Whether one simple command is a listed program whose arguments pass
/// its check.
fn stage_reads_only(words: &[Word]) -> bool {
    let Some((program, args)) = words.split_first() else {
        return false;
    };
    let Some((_, check)) = PROGRAMS.iter().find(|(name, _)| *name == program.text) else {
        return false;
    };
    match *check {
        Check::Any => true,
        Check::Without { short, long } => args
            .iter()
            .all(|a| !a.wild && !is_option_among(&a.text, short, long)),
        Check::Find => args.iter().all(|a| !a.wild && !is_find_action(&a.text)),
        Check::Uniq => uniq_reads_only(args),
        Check::Sed => sed_reads_only(args),
        Check::Git => git_reads_only(args),
    }
}

/// Whether `arg` is one of the `short` letters (alone or bundled) or one
/// of the `long` names (or an abbreviation of one). Option values are not
/// told apart (`sort -t o` asks): judging too strictly only asks.
fn is_option_among(arg: &str, short: &str, long: &[&str]) -> bool {
    if let Some(name) = arg.strip_prefix("--") {
        let name = name.split_once('=').map_or(name, |(name, _)| name);
        !name.is_empty() && long.iter().any(|l| l.starts_with(name))
    } else if let Some(letters) = arg.strip_prefix('-') {
        letters.chars().any(|c| short.contains(c))
    } else {
        false
    }
}

/// Whether `arg` is a `find` primary of [`FIND_ACTIONS`], however many
/// dashes it is written with.
fn is_find_action(arg: &str) -> bool {
    let name = arg.trim_start_matches('-');
    name.len() < arg.len() && FIND_ACTIONS.iter().any(|a| name.starts_with(a))
}

/// The options a program accepts when its operands have to be told apart
/// from its options (`uniq`'s second operand is an output file, `sed`'s
/// first is its script).
#[derive(Debug)]
struct Options {
    /// Short letters that take no value; they may be bundled (`-cd`).
    flags: &'static str,
    /// Short letters that take a value: the rest of the word, else the
    /// next word.
    valued: &'static str,
    /// Long names, exactly (an abbreviation asks), with the short letter
    /// of those that take a value (`--name=V` or `--name V`).
    long: &'static [(&'static str, Option<char>)],
}

/// Arguments split as getopt would split them.
#[derive(Debug, Default)]
struct Parsed<'a> {
    operands: Vec<&'a Word>,
    /// Option values, by the option's short letter.
    values: Vec<(char, &'a str)>,
}

/// `args` split into options and operands; `None` when an option is not in
/// `options`, a value is missing or a glob, a word may expand to an option,
/// or an option follows an operand — with `POSIXLY_CORRECT` set that
/// option would be an operand, so the two readings would disagree.
fn parse_options<'a>(args: &'a [Word], options: &Options) -> Option<Parsed<'a>> {
    let value = |word: Option<&'a Word>| word.filter(|w| !w.glob).map(|w| w.text.as_str());
    let mut parsed = Parsed::default();
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word.wild {
            return None;
        }
        let text = word.text.as_str();
        if text == "--" {
            for word in words.by_ref() {
                if word.wild {
                    return None;
                }
                parsed.operands.push(word);
            }
            break;
        }
        if text.len() < 2 || !text.starts_with('-') {
            parsed.operands.push(word);
            continue;
        }
        if !parsed.operands.is_empty() {
            return None;
        }
        if let Some(long) = text.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, v)) => (name, Some(v)),
                None => (long, None),
            };
            let (_, letter) = options.long.iter().find(|(n, _)| *n == name)?;
            if let Some(letter) = *letter {
                let v = match attached {
                    Some(v) => v,
                    None => value(words.next())?,
                };
                parsed.values.push((letter, v));
            }
        } else if let Some(bundle) = text.strip_prefix('-') {
            let mut letters = bundle.chars();
            while let Some(c) = letters.next() {
                if options.flags.contains(c) {
                    continue;
                }
                if !options.valued.contains(c) {
                    return None;
                }
                let v = match letters.as_str() {
                    "" => value(words.next())?,
                    rest => rest,
                };
                parsed.values.push((c, v));
                break;
            }
        }
    }
    Some(parsed)
}

/// GNU `uniq`'s options (`-N` is the obsolete `-f N`).
const UNIQ: Options = Options {
    flags: "cdDiuz0123456789",
    valued: "fsw",
    long: &[
        ("count", None),
        ("repeated", None),
        ("all-repeated", None),
        ("group", None),
        ("ignore-case", None),
        ("unique", None),
        ("zero-terminated", None),
        ("skip-fields", Some('f')),
        ("skip-chars", Some('s')),
        ("check-chars", Some('w')),
        ("help", None),
        ("version", None),
    ],
};

/// `uniq [INPUT [OUTPUT]]` writes OUTPUT, so at most one operand, and no
/// glob that could make two.
fn uniq_reads_only(args: &[Word]) -> bool {
    parse_options(args, &UNIQ)
        .is_some_and(|p| p.operands.len() <= 1 && p.operands.iter().all(|w| !w.glob))
}

/// The `sed` options that neither edit in place (`-i`) nor read a script
/// from a file (`-f`), which could not be judged.
const SED: Options = Options {
    flags: "nErsuz",
    valued: "e",
    long: &[
        ("quiet", None),
        ("silent", None),
        ("regexp-extended", None),
        ("separate", None),
        ("null-data", None),
        ("unbuffered", None),
        ("posix", None),
        ("debug", None),
        ("sandbox", None),
        ("expression", Some('e')),
        ("help", None),
        ("version", None),
    ],
};

/// Every character a judged `sed` script may hold: line-number addresses
/// (`10,20`, `$`, `0~4`, `5,+2`, `!`) and the commands `p`, `d`, `q`,
/// `Q`, `=` with `{}` and `;`. Without the letters of `w`, `e`, `r`, `s`
/// and their kin no script spelled with these writes, runs or reads a
/// file; `sed` scripts beyond this (a regex address, `s///`) ask.
const SED_SCRIPT: &str = "0123456789$,;!~+=pdqQ{} \t\n";

/// Whether `sed` runs without `-i` and with scripts of [`SED_SCRIPT`]
/// only: those of `-e`, else its first operand.
fn sed_reads_only(args: &[Word]) -> bool {
    let Some(parsed) = parse_options(args, &SED) else {
        return false;
    };
    let mut scripts: Vec<&str> = parsed
        .values
        .iter()
        .filter(|(letter, _)| *letter == 'e')
        .map(|(_, script)| *script)
        .collect();
    if scripts.is_empty() {
        match parsed.operands.first() {
            Some(script) if !script.glob => scripts.push(&script.text),
            _ => return false,
        }
    }
    scripts
        .iter()
        .all(|script| script.chars().all(|c| SED_SCRIPT.contains(c)))
}

/// `git rev-parse` options that print what git knows from its directory
/// and refs alone.
const REV_PARSE_OPTIONS: &[&str] = &[
    "--show-toplevel",
    "--show-prefix",
    "--show-cdup",
    "--git-dir",
    "--absolute-git-dir",
    "--git-common-dir",
    "--is-inside-work-tree",
    "--is-inside-git-dir",
    "--is-bare-repository",
    "--is-shallow-repository",
    "--show-object-format",
    "--verify",
    "--quiet",
    "-q",
    "--short",
    "--abbrev-ref",
    "--symbolic",
    "--symbolic-full-name",
    "--all",
    "--branches",
    "--tags",
    "--remotes",
];

/// Whether `git` runs one of the few commands that run no program a
/// repository's configuration names. The repository is not the user's to
/// vouch for, and its config can name programs git runs:
///
/// - reading the index runs `core.fsmonitor` — `git status`, `git diff`,
///   `git ls-files`, `git blame`, even `git rev-parse :path`;
/// - showing changes runs textconv and external diff drivers — `git diff`,
///   `git log -p`, `git show`, `git blame`;
/// - `branch.sort` or a format can ask for signatures, which runs
///   `gpg.program` — `git branch`, `git for-each-ref`, `git log`;
/// - reading a commit that a partial clone lacks fetches it, running the
///   remote's `uploadpack` or `core.sshCommand` — `git rev-parse HEAD~1`,
///   `git log`, `git cat-file`;
/// - commands that change something run hooks; `git help` runs a viewer.
///
/// So only these pass, with `--no-pager` as the one global option (no
/// `-c`, `-C`, `--git-dir`, `--work-tree`, `--exec-path`, `--config-env`);
/// aliases cannot shadow them, and the shell tool's output is a pipe, so
/// no pager starts:
///
/// - `git rev-parse` with [`REV_PARSE_OPTIONS`] and plain ref names
///   ([`is_plain_ref`]);
/// - `git remote` and `git remote -v`;
/// - `git branch --show-current`;
/// - `git version` and `git --version`.
fn git_reads_only(args: &[Word]) -> bool {
    if args.iter().any(|a| a.glob) {
        return false;
    }
    let args: Vec<&str> = args
        .iter()
        .map(|a| a.text.as_str())
        .skip_while(|a| *a == "--no-pager")
        .collect();
    match args.as_slice() {
        ["--version"] | ["version"] | ["branch", "--show-current"] => true,
        ["remote", flags @ ..] => flags.iter().all(|f| matches!(*f, "-v" | "--verbose")),
        ["rev-parse", args @ ..] => args.iter().all(|a| {
            REV_PARSE_OPTIONS.contains(a)
                || a.strip_prefix("--short=")
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
                || is_plain_ref(a)
        }),
        _ => false,
    }
}

/// A name git resolves from its refs alone (`HEAD`, `main`,
/// `origin/main`, a hex id): no `~`, `^` or `..`, which read commits (and
/// fetch a partial clone's missing ones), and no `:`, which reads a tree
/// or the index.
fn is_plain_ref(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && !name.contains("..")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '_' | '-' | '.'))
}

/// What an "always" answer to `command` covers: its program for a simple
/// command (`cargo test` → `cargo`), else the exact command line.
pub fn grant_command(command: &str) -> String {
    match simple_words(command).and_then(|words| words.into_iter().next()) {
        Some(program) => program,
        None => command.trim().to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn assert_read_only(commands: &[&str]) {
        for command in commands {
            assert!(is_read_only(command), "should be read-only: {command}");
        }
    }

    fn assert_asks(commands: &[&str]) {
        for command in commands {
            assert!(!is_read_only(command), "should ask: {command}");
        }
    }

    #[test]
    fn plain_reads_are_read_only() {
        assert_read_only(&[
            "ls",
            "ls -la",
            "ls *.rs",
            "cat f",
            "cat README.md src/*",
            "rg x",
            "rg 'fn main' crates",
            "rg \"fn main\" crates",
            "rg --pretty -z x",
            "sort f",
            "sort -u -k 2 f",
            "sort src/*.txt",
            "uniq f",
            "wc -l f",
            "head f",
            "head -n 5 f",
            "tail -n 20 f",
            "grep -rn x .",
            "find . -name '*.rs' -type f",
            "tree -L 2",
            "file f",
            "diff a b",
            "du -sh .",
        ]);
    }

    #[test]
    fn the_issues_disqualifiers_ask() {
        assert_asks(&[
            "git status",
            "git diff",
            "uniq a b",
            "sort --output=f x",
            "sort -o f x",
            "tee f",
            "find . -delete",
            "find . -fprint f",
            "sed -i s/a/b/ f",
            "cat a > b",
            "cat a >> b",
            "cat a >b",
            "cat < a",
            "ls 2>&1",
            "cat $(echo a)",
            "echo \"$(id)\"",
            "cat `x`",
            "echo \"`x`\"",
        ]);
    }

    #[test]
    fn writing_options_are_caught_however_they_are_spelled() {
        assert_asks(&[
            "sort --out=f x",
            "sort --o=f x",
            "sort -uo f x",
            "sort -of x",
            "sort x -o f",
            "sort '-o' f x",
            "sort \"--output=f\" x",
            "sort --compress-program=sh x",
            "rg --pre=sh x",
            "rg --pre sh x",
            "rg --pre-glob '*' --pre sh x",
            "rg --hostname-bin=sh x",
            "file -C -m m",
            "file --compile",
            "tree -o f",
            "tree -R -H .",
            "find . -exec rm '{}' +",
            "find . -execdir rm '{}' +",
            "find . -ok rm '{}' +",
            "find . -okdir rm '{}' +",
            "find . -fls f",
            "find . -fprint0 f",
            "find . -fprintf f x",
            "find . --delete",
        ]);
    }

    #[test]
    fn uniq_reads_only_with_at_most_one_operand() {
        assert_read_only(&[
            "uniq -c f",
            "uniq -f 1 f",
            "uniq -f1 -c f",
            "uniq --skip-fields 1 f",
            "uniq --skip-fields=1 --count f",
            "uniq -3 f",
            "uniq",
        ]);
        assert_asks(&[
            "uniq -c a b",
            "uniq -- a b",
            "uniq -f 1 a b",
            "uniq *.txt",
            "uniq a*",
            "uniq f -c",
            "uniq --skip-f 1 f",
            "uniq -x f",
        ]);
    }

    #[test]
    fn sed_reads_only_without_in_place_and_with_a_line_number_script() {
        assert_read_only(&[
            "sed -n 10,20p f",
            "sed -n '$p' f",
            "sed 5q f",
            "sed '1d;$d' f",
            "sed -n -e 1p -e '$=' f",
            "sed -ne 1p f",
            "sed --quiet --expression=1p f",
            "sed -n 1p src/*.rs",
        ]);
        assert_asks(&[
            "sed -i 1d f",
            "sed -i.bak 1d f",
            "sed --in-place 1d f",
            "sed -ni 1p f",
            "sed -n -i 1p f",
            "sed 's/a/b/w out' f",
            "sed 1w out f",
            "sed 1e f",
            "sed -f script f",
            "sed -n '/x/p' f",
            "sed s/a/b/ f",
            "sed 1p f -n",
            "sed",
        ]);
    }

    #[test]
    fn git_runs_only_commands_that_run_no_repository_code() {
        assert_read_only(&[
            "git rev-parse --show-toplevel",
            "git rev-parse HEAD",
            "git rev-parse --short=12 HEAD",
            "git rev-parse --abbrev-ref HEAD",
            "git rev-parse --verify -q origin/main",
            "git --no-pager rev-parse --git-dir",
            "git remote -v",
            "git remote",
            "git branch --show-current",
            "git version",
            "git --version",
        ]);
        assert_asks(&[
            "git status",
            "git status --short",
            "git diff",
            "git diff --stat HEAD~1",
            "git log",
            "git log --oneline",
            "git log -p",
            "git show",
            "git blame f",
            "git ls-files",
            "git branch",
            "git branch --list",
            "git cat-file -p HEAD",
            "git rev-parse :f",
            "git rev-parse HEAD:f",
            "git rev-parse HEAD~1",
            "git rev-parse HEAD^",
            "git rev-parse main..HEAD",
            "git rev-parse --show-superproject-working-tree",
            "git remote show origin",
            "git -c core.pager=sh rev-parse HEAD",
            "git -C .. rev-parse HEAD",
            "git --git-dir=x rev-parse HEAD",
            "git --work-tree=x rev-parse HEAD",
            "git --exec-path=x version",
            "git --config-env=core.pager=X version",
            "git -p version",
            "git push",
            "git help status",
            "git",
        ]);
    }

    #[test]
    fn quoted_text_is_inert_and_anything_else_the_shell_does_asks() {
        assert_read_only(&[
            "rg '>' f",
            "rg 'a|b' f",
            "rg \"a;b & c\" f",
            "grep '$(x)' f",
            "grep 'a`b`' f",
            "rg '#' f",
            "cat ~/notes",
            "cat ''",
        ]);
        assert_asks(&[
            "ls; rm -rf /",
            "ls && rm x",
            "ls & rm x",
            "ls\nrm x",
            "X=1 ls",
            "/bin/ls",
            "(ls)",
            "{ ls; }",
            "ls # comment",
            "echo {a,b}",
            "ls \\x",
            "cat <(ls)",
            "ls $HOME",
            "ls ${X}",
            "echo \"$HOME\"",
            "rg \"a\\\"b\" f",
            "cat 'unterminated",
            "rm -rf target",
            "cargo test",
            "",
            "   ",
        ]);
    }

    #[test]
    fn a_glob_that_may_expand_to_an_option_asks_where_options_matter() {
        assert_read_only(&["ls *", "cat -* x", "sort ./*", "rg x src/*"]);
        assert_asks(&[
            "sort *",
            "sort *.txt",
            "sort ?x",
            "sort [-]o x",
            "sort -*",
            "sort ''*",
            "rg x *",
            "find * -name x",
            "git rev-parse H*",
        ]);
    }

    #[test]
    fn a_pipeline_is_read_only_when_every_stage_is() {
        assert_read_only(&["rg x | head -5", "cat f | sort | uniq -c", "ls|wc -l"]);
        assert_asks(&[
            "cat f | sh",
            "ls | tee f",
            "cat f | sort -o g",
            "ls || rm x",
            "ls |& head",
            "ls |",
            "| ls",
            "ls | | head",
        ]);
    }

    #[test]
    fn grants_cover_a_program_or_an_exact_command_line() {
        assert_eq!(grant_command("cargo test -p x"), "cargo");
        assert_eq!(
            grant_command("cargo test | tee log"),
            "cargo test | tee log"
        );
        assert_eq!(grant_command("echo $(id)"), "echo $(id)");
    }

    /// A word without shell syntax outside its quotes.
    fn inert_word() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z0-9._/=,:@%+-]{1,8}",
            "'[^']{0,8}'",
            "\"[^\"$`\\\\]{0,8}\"",
        ]
    }

    proptest! {
        #[test]
        fn an_unquoted_redirection_or_substitution_is_never_read_only(
            program in prop::sample::select(vec![
                "ls", "cat", "rg x", "sort", "uniq", "wc -l", "head", "sed -n 1p",
                "find .", "git rev-parse", "git --no-pager remote -v",
            ]),
            before in prop::collection::vec(inert_word(), 0..4),
            after in prop::collection::vec(inert_word(), 0..4),
            operator in prop::sample::select(vec![">", ">>", ">|", "2>", "&>", "$(", "<>"]),
            spaced_before in any::<bool>(),
            spaced_after in any::<bool>(),
            pipe_first in any::<bool>(),
        ) {
            let gap = |spaced: bool| if spaced { " " } else { "" };
            let command = format!(
                "{}{program} {}{}{operator}{}{}",
                if pipe_first { "ls | " } else { "" },
                before.join(" "),
                gap(spaced_before),
                gap(spaced_after),
                after.join(" "),
            );
            prop_assert!(!is_read_only(&command), "{command}");
        }

        #[test]
        fn single_quoted_text_never_makes_cat_ask(text in "[^']{0,40}") {
            let command = format!("cat -- '{text}'");
            prop_assert!(is_read_only(&command), "{command}");
        }
    }
}
