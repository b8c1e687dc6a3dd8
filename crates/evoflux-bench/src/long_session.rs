//! The sixty-step scenario: a realistic coding session, so the figures
//! show what long sessions cost and not only what thirty reads of one size
//! cost.
//!
//! The model lists the tree, runs a build that fails, reads the two files
//! the errors name, fixes them, builds again (it passes), runs a test suite
//! that prints about 200 KB, reads the rest of the twenty source files
//! (2–14 KB of code-like text), greps, edits, builds and tests again, and
//! answers. The plan is data ([`Step`]), checked by the tests below: every
//! edit's old text occurs exactly once in the file it edits at that point,
//! every edited file was read first, every grep matches, and the build
//! script fails before the two fixes and passes after them.

use std::fmt::Write as _;

use serde_json::json;

use crate::scenario::{Dialect, Reply, Script};

/// Steps of the session, the final answer included.
pub const STEPS: usize = 60;

/// The build script: fails with two compiler-like errors until
/// [`FIX_CONFIG`] and [`FIX_PARSER`] are applied.
pub const BUILD_SCRIPT: &str = "build.sh";
/// The test script: prints about [`TEST_OUTPUT_BYTES`] of results.
pub const TEST_SCRIPT: &str = "test.sh";
/// Roughly what one run of the test script prints.
pub const TEST_OUTPUT_BYTES: usize = 200_000;

/// The twenty source files, in the order the session first reads them.
pub const SOURCES: [&str; 20] = [
    "src/config.rs",
    "src/parser.rs",
    "src/error.rs",
    "src/lib.rs",
    "src/lexer.rs",
    "src/token.rs",
    "src/ast.rs",
    "src/eval.rs",
    "src/cache.rs",
    "src/retry.rs",
    "src/net/mod.rs",
    "src/net/client.rs",
    "src/net/server.rs",
    "src/store/mod.rs",
    "src/store/sqlite.rs",
    "src/store/memory.rs",
    "src/cli/args.rs",
    "src/cli/output.rs",
    "src/util.rs",
    "src/main.rs",
];

/// The broken constant in `src/config.rs` and its fix.
pub const FIX_CONFIG: (&str, &str) = (
    "pub const MAX_RETRIES: u32 = \"5\";",
    "pub const MAX_RETRIES: u32 = 5;",
);
/// The broken signature in `src/parser.rs` and its fix.
pub const FIX_PARSER: (&str, &str) = (
    "pub fn parse_header(input: &str) -> Header {",
    "pub fn parse_header(input: &str) -> Result<Header, ParseError> {",
);

/// One step of the session, in terms every harness can be asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// List every file of the workspace.
    ListTree,
    /// Read one file.
    Read(&'static str),
    /// Search `dir` for `pattern` (a literal: no regex metacharacters but
    /// `.`, which matches itself too).
    Grep {
        pattern: &'static str,
        dir: &'static str,
    },
    /// Replace `old` (exactly once in the file) with `new`.
    Edit {
        path: &'static str,
        old: String,
        new: String,
    },
    /// Run the build script.
    Build,
    /// Run the test script.
    Test,
    /// Another shell command.
    Shell {
        command: &'static str,
        why: &'static str,
    },
}

/// The text a `TODO` edit replaces in a generated function.
fn todo(path: &str, function: usize) -> String {
    format!(
        "// TODO({}_{function}): check the limit before slicing",
        stem(path)
    )
}

/// A `TODO` edit of function `function` in `path`.
fn todo_edit(path: &'static str, function: usize) -> Step {
    Step::Edit {
        path,
        old: todo(path, function),
        new: "// The limit is checked by the caller.".to_owned(),
    }
}

/// The session, step by step; the final answer follows the last.
pub fn plan() -> Vec<Step> {
    use Step::*;
    let read = Read;
    let grep = |pattern, dir| Grep { pattern, dir };
    let (config_old, config_new) = FIX_CONFIG;
    let (parser_old, parser_new) = FIX_PARSER;
    vec![
        ListTree,
        Build,
        read("src/config.rs"),
        grep("MAX_RETRIES", "src"),
        Edit {
            path: "src/config.rs",
            old: config_old.to_owned(),
            new: config_new.to_owned(),
        },
        grep("parse_header", "src"),
        read("src/parser.rs"),
        read("src/error.rs"),
        Edit {
            path: "src/parser.rs",
            old: parser_old.to_owned(),
            new: parser_new.to_owned(),
        },
        Build,
        Test,
        read("src/lib.rs"),
        read("src/lexer.rs"),
        grep("TODO", "src"),
        read("src/token.rs"),
        todo_edit("src/token.rs", 1),
        read("src/ast.rs"),
        read("src/eval.rs"),
        grep("ensure_capacity", "src"),
        todo_edit("src/eval.rs", 2),
        read("src/cache.rs"),
        read("src/retry.rs"),
        grep("use crate::config", "src"),
        todo_edit("src/retry.rs", 1),
        read("src/net/mod.rs"),
        read("src/net/client.rs"),
        grep("Result<usize, Error>", "src/net"),
        todo_edit("src/net/client.rs", 3),
        read("src/net/server.rs"),
        read("src/store/mod.rs"),
        read("src/store/sqlite.rs"),
        grep("fn store_", "src/store"),
        todo_edit("src/store/sqlite.rs", 2),
        read("src/store/memory.rs"),
        read("src/cli/args.rs"),
        read("src/cli/output.rs"),
        grep("impl Display", "src"),
        todo_edit("src/cli/output.rs", 1),
        read("src/util.rs"),
        read("src/main.rs"),
        Shell {
            command: "wc -l src/*.rs src/*/*.rs",
            why: "count the lines of the sources",
        },
        Build,
        grep("limit.min", "src"),
        todo_edit("src/util.rs", 1),
        todo_edit("src/cache.rs", 2),
        grep("TODO", "src"),
        todo_edit("src/lexer.rs", 1),
        todo_edit("src/ast.rs", 1),
        read("README.md"),
        Edit {
            path: "README.md",
            old: "The build is currently broken.".to_owned(),
            new: "The build passes; `sh test.sh` runs the tests.".to_owned(),
        },
        Build,
        Test,
        grep("MAX_RETRIES", "src"),
        read("src/config.rs"),
        todo_edit("src/store/memory.rs", 1),
        grep("parse_header", "src"),
        read("src/parser.rs"),
        Build,
        Shell {
            command: "sh test.sh | tail -n 3",
            why: "check the test summary",
        },
    ]
}

/// The final answer.
pub const ANSWER: &str = "The build failed on a string constant in src/config.rs and on parse_header's \
return type in src/parser.rs; both are fixed, the build passes, all 3000 tests pass, and \
eleven TODOs are resolved.";

/// The session as `dialect` is asked for it; `path` turns a workspace
/// path into the form the harness's tools take (absolute for some).
pub fn script(dialect: Dialect, path: &dyn Fn(&str) -> String) -> Script {
    let mut steps: Vec<Reply> = plan().iter().map(|s| reply(dialect, s, path)).collect();
    steps.push(Reply::Text(ANSWER.to_owned()));
    Script { steps }
}

fn reply(dialect: Dialect, step: &Step, path: &dyn Fn(&str) -> String) -> Reply {
    match step {
        Step::ListTree => dialect.shell(
            "find . -type f -not -path './.git/*' | sort",
            "list the workspace",
        ),
        Step::Read(file) => dialect.read(&path(file)),
        Step::Grep { pattern, dir } => dialect.grep(pattern, &path(dir)),
        Step::Edit {
            path: file,
            old,
            new,
        } => dialect.edit(&path(file), old, new),
        Step::Build => dialect.shell(&format!("sh {BUILD_SCRIPT}"), "build the project"),
        Step::Test => dialect.shell(&format!("sh {TEST_SCRIPT}"), "run the tests"),
        Step::Shell { command, why } => dialect.shell(command, why),
    }
}

/// `src/net/client.rs` → `net_client`: the prefix of a file's functions.
fn stem(path: &str) -> String {
    path.trim_start_matches("src/")
        .trim_end_matches(".rs")
        .replace('/', "_")
}

/// The size of the `i`-th source file: spread over 2–14 KB, in an order
/// that is not the reading order.
fn source_bytes(i: usize) -> usize {
    2_000 + (i * 7 % 20) * 630
}

/// Code-like text of about `bytes` bytes for `path`: a doc comment,
/// imports, a type with a `Display` impl, then numbered functions, each
/// with a unique `TODO` line. Always at least three functions.
fn source_text(path: &str, bytes: usize) -> String {
    let stem = stem(path);
    let mut out = format!(
        "//! {path}: part of bench-app.\n\nuse std::fmt::{{self, Display}};\n\nuse crate::config::Settings;\nuse crate::error::Error;\n\n"
    );
    match path {
        "src/config.rs" => {
            let _ = writeln!(
                out,
                "/// How often a request is retried before it fails.\n{}\n",
                FIX_CONFIG.0
            );
        }
        "src/parser.rs" => {
            let _ = writeln!(
                out,
                "/// The header of a record.\n{}\n    let (name, rest) = input.split_once(':').ok_or(ParseError::MissingColon)?;\n    Header {{ name: name.trim().to_owned(), len: rest.trim().parse()? }}\n}}\n",
                FIX_PARSER.0
            );
        }
        _ => {}
    }
    let type_name: String = stem
        .split('_')
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect();
    let _ = write!(
        out,
        "/// What {stem} keeps between calls.\n#[derive(Debug, Clone, Default)]\npub struct {type_name}State {{\n    pub count: usize,\n    pub buffer: Vec<u8>,\n}}\n\nimpl Display for {type_name}State {{\n    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {{\n        write!(f, \"{stem}: {{}} item(s)\", self.count)\n    }}\n}}\n\n"
    );
    let mut function = 1;
    while out.len() < bytes || function <= 3 {
        let _ = write!(
            out,
            "/// Step {function} of {stem}: takes at most `limit` bytes of `input`.\npub fn {stem}_{function}(state: &mut {type_name}State, input: &str, limit: usize, settings: &Settings) -> Result<usize, Error> {{\n    {todo}\n    let limit = limit.min(settings.max_len);\n    let taken = &input.as_bytes()[..limit.min(input.len())];\n    state.buffer.extend_from_slice(taken);\n    ensure_capacity(&mut state.buffer, settings.max_len)?;\n    state.count += 1;\n    Ok(taken.len() + {function})\n}}\n\n",
            todo = todo(path, function),
        );
        function += 1;
    }
    out
}

/// The build script: each check is a breakage a compiler would report,
/// with its error text (about 2 KB in all).
fn build_script(config_line: usize, parser_line: usize) -> String {
    let (config_old, _) = FIX_CONFIG;
    let (_, parser_new) = FIX_PARSER;
    format!(
        r#"#!/bin/sh
# Builds bench-app: stands in for `cargo build`, with its error output.
errors=0
echo "   Compiling bench-app v0.1.0 ($(pwd))"
if grep -qF '{config_old}' src/config.rs; then
  errors=$((errors + 1))
  cat <<'EOF'
error[E0308]: mismatched types
   --> src/config.rs:{config_line}:30
    |
{config_line:>3} | pub const MAX_RETRIES: u32 = "5";
    |                              ^^^ expected `u32`, found `&str`
    |
help: if you meant to write an integer literal, remove the quotes
    |
{config_line:>3} - pub const MAX_RETRIES: u32 = "5";
{config_line:>3} + pub const MAX_RETRIES: u32 = 5;
    |
note: the constant is used as a retry count here
   --> src/retry.rs:14:27
    |
 14 |     for attempt in 0..config::MAX_RETRIES {{
    |                           ^^^^^^^^^^^^^^^^^^^
EOF
fi
if ! grep -qF '{parser_new}' src/parser.rs; then
  errors=$((errors + 1))
  cat <<'EOF'
error[E0277]: the `?` operator can only be used in a function that returns `Result` or `Option` (or another type that implements `FromResidual`)
   --> src/parser.rs:{line2}:79
    |
{parser_line:>3} | pub fn parse_header(input: &str) -> Header {{
    | ------------------------------------------- this function should return `Result` or `Option` to accept `?`
{line2:>3} |     let (name, rest) = input.split_once(':').ok_or(ParseError::MissingColon)?;
    |                                                                               ^ cannot use the `?` operator in a function that returns `Header`
    |
    = help: the trait `FromResidual<Result<Infallible, ParseError>>` is not implemented for `Header`
help: consider adding return type
    |
{parser_line:>3} ~ pub fn parse_header(input: &str) -> Result<Header, ParseError> {{
{line2:>3} |     let (name, rest) = input.split_once(':').ok_or(ParseError::MissingColon)?;
{line3:>3} ~     Ok(Header {{ name: name.trim().to_owned(), len: rest.trim().parse()? }})
    |

warning: unused import: `std::fmt::Display`
 --> src/parser.rs:3:16
  |
3 | use std::fmt::{{self, Display}};
  |                      ^^^^^^^
  |
  = note: `#[warn(unused_imports)]` on by default
EOF
fi
if [ "$errors" -ne 0 ]; then
  echo "Some errors have detailed explanations: E0277, E0308."
  echo "For more information about an error, try \`rustc --explain E0277\`."
  echo "error: could not compile \`bench-app\` (lib) due to $errors previous error(s); 1 warning emitted"
  exit 101
fi
echo "    Finished \`dev\` profile [unoptimized + debuginfo] target(s) in 4.21s"
"#,
        line2 = parser_line + 1,
        line3 = parser_line + 2,
    )
}

/// The test script: 30 modules of 100 tests, one line each, and a summary.
const TEST_SCRIPT_TEXT: &str = r#"#!/bin/sh
# Runs bench-app's tests: stands in for `cargo test`, with its output.
echo "     Running unittests src/lib.rs (target/debug/deps/bench_app-5f3c2a1b9d8e7f60)"
echo ""
echo "running 3000 tests"
awk 'BEGIN { for (m = 1; m <= 30; m++) for (t = 1; t <= 100; t++) printf "test module_%02d::tests::case_%03d_keeps_the_expected_state ... ok\n", m, t }'
echo ""
echo "test result: ok. 3000 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 1.84s"
"#;

/// The 1-based line of the first line of `text` containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}

/// Every file of the workspace, relative to its root, with its text.
pub fn workspace() -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = SOURCES
        .iter()
        .enumerate()
        .map(|(i, p)| ((*p).to_owned(), source_text(p, source_bytes(i))))
        .collect();
    let text = |p: &str| {
        files
            .iter()
            .find(|(f, _)| f == p)
            .map(|(_, t)| t.as_str())
            .unwrap_or_default()
    };
    let config_line = line_of(text("src/config.rs"), FIX_CONFIG.0);
    let parser_line = line_of(text("src/parser.rs"), FIX_PARSER.0);
    files.push((
        BUILD_SCRIPT.to_owned(),
        build_script(config_line, parser_line),
    ));
    files.push((TEST_SCRIPT.to_owned(), TEST_SCRIPT_TEXT.to_owned()));
    files.push((
        "README.md".to_owned(),
        "# bench-app\n\nA small parser and evaluator with a cache and a store.\n\nThe build is currently broken.\n".to_owned(),
    ));
    files
}

impl Dialect {
    /// Searches `dir` for `pattern`.
    pub fn grep(self, pattern: &str, dir: &str) -> Reply {
        match self {
            Dialect::Evoflux => Reply::call("grep", json!({"pattern": pattern, "directory": dir})),
            Dialect::Codex => Reply::call(
                "exec_command",
                json!({ "cmd": format!("grep -rn '{pattern}' {dir}") }),
            ),
            Dialect::Claude => Reply::call("Grep", json!({"pattern": pattern, "path": dir})),
            Dialect::Opencode => Reply::call("grep", json!({"pattern": pattern, "path": dir})),
        }
    }

    /// Replaces `old` (once in the file) with `new` in `path`.
    pub fn edit(self, path: &str, old: &str, new: &str) -> Reply {
        match self {
            Dialect::Evoflux => Reply::call(
                "edit",
                json!({"path": path, "old_string": old, "new_string": new}),
            ),
            // codex has no edit tool besides its patch format: a Python
            // one-liner that refuses unless the old text occurs once. JSON
            // string literals are Python string literals; the scenario's
            // texts hold no single quote, so the shell quoting holds.
            Dialect::Codex => {
                let lit = |s: &str| serde_json::Value::from(s).to_string();
                let program = format!(
                    "import pathlib; p = pathlib.Path({path}); s = p.read_text(); assert s.count({old}) == 1; p.write_text(s.replace({old}, {new}))",
                    path = lit(path),
                    old = lit(old),
                    new = lit(new),
                );
                Reply::call(
                    "exec_command",
                    json!({ "cmd": format!("python3 -c '{program}'") }),
                )
            }
            Dialect::Claude => Reply::call(
                "Edit",
                json!({"file_path": path, "old_string": old, "new_string": new}),
            ),
            Dialect::Opencode => Reply::call(
                "edit",
                json!({"filePath": path, "oldString": old, "newString": new}),
            ),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;
    use std::path::Path;
    use std::process::Command;

    use super::*;

    fn files() -> BTreeMap<String, String> {
        workspace().into_iter().collect()
    }

    /// Runs `sh <script>` on `files` written to a scratch directory.
    fn run(files: &BTreeMap<String, String>, script: &str) -> (bool, String) {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        let out = Command::new("sh")
            .arg(script)
            .current_dir(dir.path())
            .output()
            .unwrap();
        (out.status.success(), String::from_utf8(out.stdout).unwrap())
    }

    #[test]
    fn the_session_has_sixty_steps_of_every_kind() {
        let plan = plan();
        let script = script(Dialect::Evoflux, &|p| p.to_owned());
        assert_eq!(script.steps.len(), STEPS);
        assert_eq!(plan.len(), STEPS - 1);
        assert_eq!(script.steps.last(), Some(&Reply::Text(ANSWER.to_owned())));
        let count = |f: fn(&Step) -> bool| plan.iter().filter(|s| f(s)).count();
        assert_eq!(count(|s| matches!(s, Step::Grep { .. })), 12);
        assert_eq!(count(|s| matches!(s, Step::Edit { .. })), 14);
        assert_eq!(count(|s| matches!(s, Step::Build)), 5);
        assert_eq!(count(|s| matches!(s, Step::Test)), 2);
        let read: std::collections::BTreeSet<&str> = plan
            .iter()
            .filter_map(|s| match s {
                Step::Read(f) if f.starts_with("src/") => Some(*f),
                _ => None,
            })
            .collect();
        assert_eq!(read.len(), SOURCES.len());
    }

    #[test]
    fn the_sources_are_two_to_fourteen_kilobytes_and_distinct() {
        let files = files();
        let sizes: Vec<usize> = SOURCES.iter().map(|p| files[*p].len()).collect();
        assert!(
            sizes.iter().all(|&n| (2_000..=14_600).contains(&n)),
            "{sizes:?}"
        );
        assert!(sizes.iter().any(|&n| n < 3_000) && sizes.iter().any(|&n| n > 13_000));
        let distinct: std::collections::BTreeSet<&String> =
            SOURCES.iter().map(|p| &files[*p]).collect();
        assert_eq!(distinct.len(), SOURCES.len());
    }

    /// Replays the plan on the workspace: edits apply (old text exactly
    /// once, file read before), greps match, the build fails until both
    /// fixes are in and passes after.
    #[test]
    fn every_step_of_the_plan_works_on_the_workspace() {
        let mut files = files();
        let mut read = std::collections::BTreeSet::new();
        let mut builds = Vec::new();
        for step in plan() {
            match step {
                Step::Read(f) => {
                    assert!(files.contains_key(f), "{f} is read but not written");
                    read.insert(f);
                }
                Step::Grep { pattern, dir } => {
                    let hits = files
                        .iter()
                        .filter(|(p, t)| p.starts_with(dir) && t.contains(pattern))
                        .count();
                    assert!(hits > 0, "grep {pattern} in {dir} matches nothing");
                }
                Step::Edit { path, old, new } => {
                    assert!(read.contains(path), "{path} is edited before it is read");
                    assert!(!old.contains('\'') && !new.contains('\''));
                    let text = files.get_mut(path).unwrap();
                    assert_eq!(text.matches(old.as_str()).count(), 1, "{old} in {path}");
                    *text = text.replace(old.as_str(), &new);
                }
                Step::Build => builds.push(run(&files, BUILD_SCRIPT)),
                Step::ListTree | Step::Test | Step::Shell { .. } => {}
            }
        }
        let (passed, first) = &builds[0];
        assert!(!passed);
        assert!(first.contains("error[E0308]") && first.contains("error[E0277]"));
        assert!((1_800..=3_000).contains(&first.len()), "{}", first.len());
        assert!(builds[1..].iter().all(|(passed, _)| *passed));
    }

    #[test]
    fn one_fix_is_not_enough_for_the_build() {
        let mut files = files();
        let config = files.get_mut("src/config.rs").unwrap();
        *config = config.replace(FIX_CONFIG.0, FIX_CONFIG.1);
        let (passed, out) = run(&files, BUILD_SCRIPT);
        assert!(!passed);
        assert!(out.contains("error[E0277]") && !out.contains("error[E0308]"));
        assert!(out.contains("due to 1 previous error"));
    }

    #[test]
    fn the_test_run_prints_about_two_hundred_kilobytes() {
        let (passed, out) = run(&files(), TEST_SCRIPT);
        assert!(passed);
        assert!((190_000..=230_000).contains(&out.len()), "{}", out.len());
        assert!(out.contains("3000 passed"));
    }

    #[test]
    fn each_harness_is_asked_in_its_own_tools() {
        let abs = |p: &str| Path::new("/w").join(p).display().to_string();
        let at = |d: Dialect, i: usize| match &script(d, &abs).steps[i] {
            Reply::ToolCalls(c) => c[0].clone(),
            Reply::Text(t) => panic!("step {i} is text: {t}"),
        };
        // Step 3 greps, step 4 edits src/config.rs.
        let g = at(Dialect::Evoflux, 3);
        assert_eq!(g.name, "grep");
        assert_eq!(
            g.arguments,
            json!({"pattern": "MAX_RETRIES", "directory": "/w/src"})
        );
        let e = at(Dialect::Evoflux, 4);
        assert_eq!(e.name, "edit");
        assert_eq!(e.arguments["old_string"], FIX_CONFIG.0);
        assert_eq!(at(Dialect::Claude, 3).name, "Grep");
        assert_eq!(
            at(Dialect::Claude, 4).arguments["file_path"],
            "/w/src/config.rs"
        );
        assert_eq!(
            at(Dialect::Opencode, 4).arguments["oldString"],
            FIX_CONFIG.0
        );
        assert_eq!(
            at(Dialect::Codex, 3).arguments["cmd"],
            "grep -rn 'MAX_RETRIES' /w/src"
        );
        let cmd = at(Dialect::Codex, 4).arguments["cmd"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(cmd.starts_with("python3 -c 'import pathlib;"));
        assert!(cmd.contains(r#""pub const MAX_RETRIES: u32 = \"5\";""#));
    }

    /// The codex edit, run for real where Python is present.
    #[test]
    fn the_codex_edit_command_applies_the_edit() {
        if Command::new("python3").arg("--version").output().is_err() {
            evoflux_core::prerequisite::missing("python3", "install Python 3 (Debian: python3)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("a.rs"),
            "x\npub fn parse_header(input: &str) -> Header {\n",
        )
        .unwrap();
        let Reply::ToolCalls(c) = Dialect::Codex.edit("a.rs", FIX_PARSER.0, FIX_PARSER.1) else {
            panic!("an edit is a call");
        };
        let status = Command::new("sh")
            .args(["-c", c[0].arguments["cmd"].as_str().unwrap()])
            .current_dir(dir.path())
            .status()
            .unwrap();
        assert!(status.success());
        let text = std::fs::read_to_string(dir.path().join("a.rs")).unwrap();
        assert_eq!(text, format!("x\n{}\n", FIX_PARSER.1));
    }
}
