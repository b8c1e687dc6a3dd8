#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::Path;

use evoflux_tools::files::{self, FileTool};
use evoflux_tools::{ToolError, ToolOutput, Workspace};
use serde_json::{Value, json};
use tempfile::TempDir;

fn setup() -> (TempDir, Workspace) {
    let dir = tempfile::tempdir().unwrap();
    let ws = Workspace::new([dir.path()]).unwrap();
    (dir, ws)
}

fn ok(ws: &Workspace, run: FileTool, input: Value) -> String {
    let out: ToolOutput = run(ws, &input).unwrap();
    assert!(!out.is_error);
    out.text
}

fn err(ws: &Workspace, run: FileTool, input: Value) -> ToolError {
    run(ws, &input).unwrap_err()
}

fn put(root: &Path, rel: &str, text: &str) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

// ---- read ----

#[test]
fn read_numbers_lines() {
    let (dir, ws) = setup();
    put(dir.path(), "a.txt", "alpha\nbeta\ngamma\n");
    let text = ok(&ws, files::read, json!({"path": "a.txt"}));
    assert_eq!(text, "    1| alpha\n    2| beta\n    3| gamma\n");
}

#[test]
fn read_offset_and_limit_window_with_notice() {
    let (dir, ws) = setup();
    let body: String = (1..=10).map(|n| format!("line {n}\n")).collect();
    put(dir.path(), "a.txt", &body);
    let text = ok(
        &ws,
        files::read,
        json!({"path": "a.txt", "offset": 3, "limit": 2}),
    );
    assert!(text.starts_with("    3| line 3\n    4| line 4\n"), "{text}");
    assert!(!text.contains("line 5"));
    assert!(
        text.contains("[Truncated: showed lines 3-4 of 10 lines; continue with offset=5]"),
        "{text}"
    );
}

#[test]
fn read_caps_characters_with_visible_notice() {
    let (dir, ws) = setup();
    let body: String = (1..=5000).map(|n| format!("{n:0>40}\n")).collect();
    put(dir.path(), "big.txt", &body);
    let text = ok(&ws, files::read, json!({"path": "big.txt"}));
    assert!(text.len() <= evoflux_tools::READ_MAX_OUTPUT_BYTES + 200);
    assert!(
        text.contains("[Truncated: showed lines 1-"),
        "notice missing"
    );
    assert!(text.contains("of 5000 lines; continue with offset="));
}

#[test]
fn read_offset_past_end_is_an_error() {
    let (dir, ws) = setup();
    put(dir.path(), "a.txt", "one\n");
    let e = err(&ws, files::read, json!({"path": "a.txt", "offset": 5}));
    assert_eq!(e.code(), "tool/offset-past-end");
}

#[test]
fn read_refuses_binary_and_directories_and_missing() {
    let (dir, ws) = setup();
    fs::write(dir.path().join("b.bin"), [0u8, 1, 2, 0]).unwrap();
    fs::create_dir(dir.path().join("d")).unwrap();
    assert_eq!(
        err(&ws, files::read, json!({"path": "b.bin"})).code(),
        "tool/binary-file"
    );
    assert_eq!(
        err(&ws, files::read, json!({"path": "d"})).code(),
        "tool/wrong-kind"
    );
    assert_eq!(
        err(&ws, files::read, json!({"path": "nope"})).code(),
        "tool/not-found"
    );
}

// ---- input parsing ----

#[test]
fn input_errors_name_the_field() {
    let (_dir, ws) = setup();
    let e = err(&ws, files::read, json!({}));
    assert_eq!(e.code(), "tool/input-invalid");
    assert!(e.to_string().contains("`path`"), "{e}");
    let e = err(&ws, files::read, json!({"path": "a", "offset": "three"}));
    assert!(
        matches!(&e, ToolError::InvalidInput { field, .. } if field == "offset"),
        "{e}"
    );
    let e = err(&ws, files::read, json!({"path": "a", "offset": 0}));
    assert!(
        matches!(&e, ToolError::InvalidInput { field, .. } if field == "offset"),
        "{e}"
    );
    let e = err(
        &ws,
        files::write,
        json!({"path": "a", "content": "x", "mode": 1}),
    );
    assert!(
        matches!(&e, ToolError::InvalidInput { field, .. } if field == "mode"),
        "{e}"
    );
    let e = err(&ws, files::grep, json!({"pattern": "x", "context": 11}));
    assert!(
        matches!(&e, ToolError::InvalidInput { field, .. } if field == "context"),
        "{e}"
    );
    let e = err(&ws, files::ls, json!("not an object"));
    assert_eq!(e.code(), "tool/input-invalid");
}

// ---- write ----

#[test]
fn write_creates_with_parents_and_overwrites() {
    let (dir, ws) = setup();
    let text = ok(
        &ws,
        files::write,
        json!({"path": "sub/dir/f.txt", "content": "hello"}),
    );
    assert!(text.starts_with("Created sub/dir/f.txt"), "{text}");
    assert_eq!(
        fs::read_to_string(dir.path().join("sub/dir/f.txt")).unwrap(),
        "hello"
    );
    let text = ok(
        &ws,
        files::write,
        json!({"path": "sub/dir/f.txt", "content": "bye"}),
    );
    assert!(text.starts_with("Overwrote"), "{text}");
    assert_eq!(
        fs::read_to_string(dir.path().join("sub/dir/f.txt")).unwrap(),
        "bye"
    );
}

#[test]
fn write_without_overwrite_refuses_existing_file() {
    let (dir, ws) = setup();
    put(dir.path(), "f.txt", "keep");
    let e = err(
        &ws,
        files::write,
        json!({"path": "f.txt", "content": "new", "overwrite": false}),
    );
    assert_eq!(e.code(), "tool/already-exists");
    assert_eq!(
        fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "keep"
    );
    ok(
        &ws,
        files::write,
        json!({"path": "g.txt", "content": "new", "overwrite": false}),
    );
}

// ---- edit ----

#[test]
fn edit_replaces_a_unique_match() {
    let (dir, ws) = setup();
    put(dir.path(), "f.rs", "fn a() {}\nfn b() {}\n");
    let text = ok(
        &ws,
        files::edit,
        json!({"path": "f.rs", "old_string": "fn b", "new_string": "fn c"}),
    );
    assert_eq!(text, "Replaced 1 occurrence in f.rs");
    assert_eq!(
        fs::read_to_string(dir.path().join("f.rs")).unwrap(),
        "fn a() {}\nfn c() {}\n"
    );
}

#[test]
fn edit_zero_matches_names_the_count() {
    let (dir, ws) = setup();
    put(dir.path(), "f.rs", "abc\n");
    let e = err(
        &ws,
        files::edit,
        json!({"path": "f.rs", "old_string": "xyz", "new_string": "q"}),
    );
    assert!(matches!(e, ToolError::EditMatch { count: 0, .. }), "{e}");
    assert_eq!(e.code(), "tool/edit-match");
    assert!(e.to_string().contains("matched 0 times"), "{e}");
    let e = err(
        &ws,
        files::edit,
        json!({"path": "f.rs", "old_string": "xyz", "new_string": "q", "replace_all": true}),
    );
    assert!(matches!(e, ToolError::EditMatch { count: 0, .. }), "{e}");
}

#[test]
fn edit_many_matches_needs_replace_all() {
    let (dir, ws) = setup();
    put(dir.path(), "f.txt", "x x x\n");
    let e = err(
        &ws,
        files::edit,
        json!({"path": "f.txt", "old_string": "x", "new_string": "y"}),
    );
    assert!(matches!(e, ToolError::EditMatch { count: 3, .. }), "{e}");
    assert!(e.to_string().contains("matched 3 times"), "{e}");
    assert_eq!(
        fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "x x x\n"
    );
    let text = ok(
        &ws,
        files::edit,
        json!({"path": "f.txt", "old_string": "x", "new_string": "y", "replace_all": true}),
    );
    assert_eq!(text, "Replaced 3 occurrences in f.txt");
    assert_eq!(
        fs::read_to_string(dir.path().join("f.txt")).unwrap(),
        "y y y\n"
    );
}

#[test]
fn edit_rejects_empty_or_identical_strings() {
    let (dir, ws) = setup();
    put(dir.path(), "f.txt", "abc");
    let e = err(
        &ws,
        files::edit,
        json!({"path": "f.txt", "old_string": "", "new_string": "y"}),
    );
    assert!(matches!(&e, ToolError::InvalidInput { field, .. } if field == "old_string"));
    let e = err(
        &ws,
        files::edit,
        json!({"path": "f.txt", "old_string": "a", "new_string": "a"}),
    );
    assert!(matches!(&e, ToolError::InvalidInput { field, .. } if field == "new_string"));
}

// ---- ls ----

#[test]
fn ls_lists_sorted_with_directory_marks() {
    let (dir, ws) = setup();
    put(dir.path(), "b.txt", "");
    put(dir.path(), "a/inner.txt", "");
    put(dir.path(), ".hidden", "");
    assert_eq!(ok(&ws, files::ls, json!({})), ".hidden\na/\nb.txt\n");
    assert_eq!(ok(&ws, files::ls, json!({"path": "a"})), "inner.txt\n");
    assert_eq!(
        err(&ws, files::ls, json!({"path": "b.txt"})).code(),
        "tool/wrong-kind"
    );
}

// ---- glob ----

#[test]
fn glob_matches_names_and_paths_with_max_results() {
    let (dir, ws) = setup();
    put(dir.path(), "src/lib.rs", "");
    put(dir.path(), "src/deep/mod.rs", "");
    put(dir.path(), "README.md", "");
    assert_eq!(
        ok(&ws, files::glob, json!({"pattern": "*.rs"})),
        "src/deep/mod.rs\nsrc/lib.rs\n"
    );
    assert_eq!(
        ok(&ws, files::glob, json!({"pattern": "src/*.rs"})),
        "src/lib.rs\n"
    );
    assert_eq!(
        ok(
            &ws,
            files::glob,
            json!({"pattern": "**/*.rs", "directory": "src/deep"})
        ),
        "src/deep/mod.rs\n"
    );
    let text = ok(
        &ws,
        files::glob,
        json!({"pattern": "*.rs", "max_results": 1}),
    );
    assert!(
        text.starts_with("src/deep/mod.rs\n[Truncated: showed the first 1 matches"),
        "{text}"
    );
    assert!(ok(&ws, files::glob, json!({"pattern": "*.py"})).starts_with("No files match"));
    let e = err(&ws, files::glob, json!({"pattern": "a[", "directory": "."}));
    assert!(
        matches!(&e, ToolError::InvalidInput { field, .. } if field == "pattern"),
        "{e}"
    );
}

// ---- grep ----

#[test]
fn grep_finds_matches_with_include_and_case() {
    let (dir, ws) = setup();
    put(dir.path(), "src/a.rs", "fn main() {}\nlet Main = 1;\n");
    put(dir.path(), "notes.md", "main notes\n");
    assert_eq!(
        ok(
            &ws,
            files::grep,
            json!({"pattern": "main", "include": "*.rs"})
        ),
        "src/a.rs:1:fn main() {}\n"
    );
    assert_eq!(
        ok(
            &ws,
            files::grep,
            json!({"pattern": "^.*main", "include": "*.rs", "case_insensitive": true})
        ),
        "src/a.rs:1:fn main() {}\nsrc/a.rs:2:let Main = 1;\n"
    );
    assert_eq!(
        ok(&ws, files::grep, json!({"pattern": "notes"})),
        "notes.md:1:main notes\n"
    );
    assert!(ok(&ws, files::grep, json!({"pattern": "absent"})).starts_with("No matches"));
    let e = err(&ws, files::grep, json!({"pattern": "("}));
    assert!(
        matches!(&e, ToolError::InvalidInput { field, .. } if field == "pattern"),
        "{e}"
    );
}

#[test]
fn grep_context_lines_and_group_separators() {
    let (dir, ws) = setup();
    put(dir.path(), "f.txt", "a\nHIT\nb\nc\nd\ne\nHIT\nf\n");
    let text = ok(&ws, files::grep, json!({"pattern": "HIT", "context": 1}));
    assert_eq!(
        text,
        "f.txt-1-a\nf.txt:2:HIT\nf.txt-3-b\n--\nf.txt-6-e\nf.txt:7:HIT\nf.txt-8-f\n"
    );
}

#[test]
fn grep_max_results_truncates_visibly() {
    let (dir, ws) = setup();
    put(dir.path(), "f.txt", "x\nx\nx\n");
    let text = ok(&ws, files::grep, json!({"pattern": "x", "max_results": 2}));
    assert!(
        text.starts_with("f.txt:1:x\nf.txt:2:x\n[Truncated: showed the first 2 matches"),
        "{text}"
    );
}

#[test]
fn grep_respects_gitignore() {
    let (dir, ws) = setup();
    put(dir.path(), ".gitignore", "target/\n*.log\n");
    put(dir.path(), "src/a.rs", "needle\n");
    put(dir.path(), "target/out.rs", "needle\n");
    put(dir.path(), "debug.log", "needle\n");
    assert_eq!(
        ok(&ws, files::grep, json!({"pattern": "needle"})),
        "src/a.rs:1:needle\n"
    );
    assert_eq!(
        ok(&ws, files::glob, json!({"pattern": "*"})),
        ".gitignore\nsrc/a.rs\n"
    );
}

#[test]
fn searches_include_hidden_files_but_not_git_internals() {
    let (dir, ws) = setup();
    put(dir.path(), ".github/workflows/ci.yml", "needle\n");
    put(dir.path(), ".git/config", "needle\n");
    assert_eq!(
        ok(&ws, files::grep, json!({"pattern": "needle"})),
        ".github/workflows/ci.yml:1:needle\n"
    );
    assert_eq!(
        ok(&ws, files::glob, json!({"pattern": "*.yml"})),
        ".github/workflows/ci.yml\n"
    );
}

#[test]
fn read_clips_an_overlong_line() {
    let (dir, ws) = setup();
    put(dir.path(), "min.js", &"x".repeat(100_000));
    let text = ok(&ws, files::read, json!({"path": "min.js"}));
    assert!(text.len() < evoflux_tools::READ_MAX_OUTPUT_BYTES);
    assert!(
        text.contains("[line truncated: 100000 characters]"),
        "{}",
        &text[text.len() - 80..]
    );
}

#[test]
fn grep_on_a_single_file() {
    let (dir, ws) = setup();
    put(dir.path(), "one.txt", "find me\n");
    assert_eq!(
        ok(
            &ws,
            files::grep,
            json!({"pattern": "find", "directory": "one.txt", "include": "*.rs"})
        ),
        "one.txt:1:find me\n"
    );
}

// ---- workspace confinement ----

#[test]
fn dotdot_outside_the_workspace_is_refused() {
    let outer = tempfile::tempdir().unwrap();
    let inner = outer.path().join("ws");
    fs::create_dir(&inner).unwrap();
    put(outer.path(), "secret.txt", "s");
    let ws = Workspace::new([&inner]).unwrap();
    for x in [files::read, files::ls] {
        let e = err(&ws, x, json!({"path": "../secret.txt"}));
        assert_eq!(e.code(), "tool/outside-workspace", "{x:?}: {e}");
    }
    let e = err(
        &ws,
        files::write,
        json!({"path": "a/../../evil.txt", "content": "x"}),
    );
    assert_eq!(e.code(), "tool/outside-workspace");
    assert!(!outer.path().join("evil.txt").exists());
    let e = err(&ws, files::grep, json!({"pattern": "s", "directory": ".."}));
    assert_eq!(e.code(), "tool/outside-workspace");
    let e = err(
        &ws,
        files::glob,
        json!({"pattern": "*", "directory": "../"}),
    );
    assert_eq!(e.code(), "tool/outside-workspace");
    // `..` that comes back inside is fine.
    put(&inner, "a.txt", "in");
    ok(&ws, files::read, json!({"path": "sub/../a.txt"}));
}

#[test]
fn absolute_path_elsewhere_is_refused_and_inside_is_accepted() {
    let (dir, ws) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    put(elsewhere.path(), "x.txt", "x");
    let abs = elsewhere.path().join("x.txt");
    let e = err(&ws, files::read, json!({"path": abs.to_str().unwrap()}));
    assert_eq!(e.code(), "tool/outside-workspace");
    let e = err(
        &ws,
        files::edit,
        json!({"path": abs.to_str().unwrap(), "old_string": "x", "new_string": "y"}),
    );
    assert_eq!(e.code(), "tool/outside-workspace");
    assert_eq!(fs::read_to_string(&abs).unwrap(), "x");
    put(dir.path(), "in.txt", "in");
    let inside = dir.path().join("in.txt");
    assert_eq!(
        ok(&ws, files::read, json!({"path": inside.to_str().unwrap()})),
        "    1| in\n"
    );
}

#[test]
fn symlink_pointing_out_is_refused() {
    let (dir, ws) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    put(elsewhere.path(), "secret.txt", "s");
    std::os::unix::fs::symlink(elsewhere.path(), dir.path().join("link")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.path().join("secret.txt"),
        dir.path().join("file-link"),
    )
    .unwrap();
    let e = err(&ws, files::read, json!({"path": "link/secret.txt"}));
    assert_eq!(e.code(), "tool/outside-workspace");
    let e = err(&ws, files::read, json!({"path": "file-link"}));
    assert_eq!(e.code(), "tool/outside-workspace");
    // A new file under a linked directory would land outside too.
    let e = err(
        &ws,
        files::write,
        json!({"path": "link/new.txt", "content": "x"}),
    );
    assert_eq!(e.code(), "tool/outside-workspace");
    assert!(!elsewhere.path().join("new.txt").exists());
    // Searches do not follow the link out.
    assert!(ok(&ws, files::grep, json!({"pattern": "s"})).starts_with("No matches"));
}

#[test]
fn dangling_symlink_is_refused() {
    let (dir, ws) = setup();
    let elsewhere = tempfile::tempdir().unwrap();
    let target = elsewhere.path().join("not-yet.txt");
    std::os::unix::fs::symlink(&target, dir.path().join("dangling")).unwrap();
    let e = err(
        &ws,
        files::write,
        json!({"path": "dangling", "content": "x"}),
    );
    assert_eq!(e.code(), "tool/outside-workspace");
    assert!(!target.exists());
}

#[test]
fn several_roots_accept_absolute_paths_in_any_root() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    put(second.path(), "b.txt", "two");
    let ws = Workspace::new([first.path(), second.path()]).unwrap();
    let abs = second.path().join("b.txt");
    assert_eq!(
        ok(&ws, files::read, json!({"path": abs.to_str().unwrap()})),
        "    1| two\n"
    );
    // Relative paths resolve against the first root only.
    assert_eq!(
        err(&ws, files::read, json!({"path": "b.txt"})).code(),
        "tool/not-found"
    );
}

#[test]
fn workspace_needs_an_existing_directory() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    assert_eq!(
        Workspace::new([&missing]).unwrap_err().code(),
        "tool/root-invalid"
    );
    assert_eq!(
        Workspace::new(Vec::<&Path>::new()).unwrap_err().code(),
        "tool/root-invalid"
    );
}

// ---- dispatch ----

/// The compiler keeps this match exhaustive: a new executor variant fails
/// to build here until the test says whether this crate implements it.
/// The file tools, each on the model's JSON input.
const ALL: [FileTool; 7] = [
    files::read,
    files::write,
    files::edit,
    files::ls,
    files::glob,
    files::grep,
    files::artifact,
];

#[test]
fn every_file_tool_answers_an_empty_input() {
    let (_dir, ws) = setup();
    for run in ALL {
        // An empty object: each tool accepts or rejects it by its own rules.
        let _ = run(&ws, &json!({}));
    }
}

#[test]
fn errors_become_model_visible_outputs() {
    let (_dir, ws) = setup();
    let out = err(&ws, files::read, json!({"path": "../x"})).into_output();
    assert!(out.is_error);
    assert!(out.text.contains("outside the workspace"), "{}", out.text);
}

/// The parsers accept exactly the fields the graph's framework schemas
/// advertise to the model, and the graph routes each tool to the
/// executor this crate implements for it.
#[test]
fn parsers_match_the_framework_schemas() {
    use evoflux_graph::tool::{BuiltinExecutor as X, ToolExecutor, framework_tool};
    use evoflux_tools::{EditInput, GlobInput, GrepInput, LsInput, ReadInput, WriteInput};
    let cases: [(&str, X, FileTool, &[&str]); 6] = [
        ("read", X::Read, files::read, ReadInput::FIELDS),
        ("write", X::Write, files::write, WriteInput::FIELDS),
        ("edit", X::Edit, files::edit, EditInput::FIELDS),
        ("ls", X::Ls, files::ls, LsInput::FIELDS),
        ("glob", X::Glob, files::glob, GlobInput::FIELDS),
        ("grep", X::Grep, files::grep, GrepInput::FIELDS),
    ];
    for (name, executor, run, fields) in cases {
        let def = framework_tool(name).unwrap();
        assert_eq!(
            def.executor,
            Some(ToolExecutor::Builtin { executor }),
            "{name}"
        );
        let mut schema: Vec<&str> = def.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        schema.sort_unstable();
        let mut ours = fields.to_vec();
        ours.sort_unstable();
        assert_eq!(schema, ours, "{name}");
        // Omitting each required field is an error naming that field.
        let required: Vec<&str> = def.input_schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        for missing in &required {
            let input: serde_json::Map<String, Value> = required
                .iter()
                .filter(|f| *f != missing)
                .map(|f| ((*f).to_owned(), json!("x")))
                .collect();
            let e = run(&setup().1, &Value::Object(input)).unwrap_err();
            assert!(
                matches!(&e, ToolError::InvalidInput { field, .. } if field == missing),
                "{name}.{missing}: {e}"
            );
        }
    }
}

#[test]
fn read_pages_through_a_file_of_any_size_and_says_what_it_did_not_count() {
    let (dir, ws) = setup();
    let scan = usize::try_from(evoflux_tools::READ_SCAN_BYTES).unwrap();
    // Three scan budgets of numbered lines.
    let count = 3 * scan / 100;
    let text: String = (1..=count).map(|i| format!("{i:0>99}\n")).collect();
    put(dir.path(), "huge.txt", &text);
    let early = ok(
        &ws,
        files::read,
        json!({"path": "huge.txt", "offset": 52_000, "limit": 2}),
    );
    assert!(early.starts_with("52000| "), "{}", &early[..20]);
    assert!(
        early.contains("more than"),
        "{}",
        &early[early.len() - 160..]
    );
    assert!(early.contains("continue with offset=52002"), "{early}");
    // Far past any byte cap, the offset the notice suggests still works,
    // and at the end the total is exact.
    let near_end = count - 1;
    let late = ok(
        &ws,
        files::read,
        json!({"path": "huge.txt", "offset": near_end, "limit": 1}),
    );
    assert!(
        late.starts_with(&format!("{near_end:>5}| {near_end:0>99}")),
        "{}",
        &late[..40]
    );
    assert!(late.contains(&format!("of {count} lines")), "{late}");
    let past = files::read(&ws, &json!({"path": "huge.txt", "offset": count + 1})).unwrap_err();
    assert!(
        matches!(past, ToolError::OffsetPastEnd { lines, .. } if lines == count),
        "{past}"
    );
}

#[test]
fn the_agents_own_controls_are_read_only_to_write_and_edit() {
    let (dir, ws) = setup();
    put(dir.path(), "AGENTS.md", "Keep it simple.\n");
    put(dir.path(), "sub/AGENTS.override.md", "Tabs.\n");
    put(
        dir.path(),
        ".evoflux/tools/existing.toml",
        "argv = [\"true\"]\n",
    );
    let refused: [(FileTool, Value); _] = [
        (
            files::write,
            json!({"path": ".evoflux/tools/run_it.toml", "content": "argv = [\"bash\"]"}),
        ),
        (
            files::write,
            json!({"path": ".evoflux/tools/shell.toml", "content": "disable = true"}),
        ),
        (
            files::write,
            json!({"path": ".agents/skills/x/SKILL.md", "content": "x"}),
        ),
        (
            files::write,
            json!({"path": ".claude/settings.json", "content": "{}"}),
        ),
        (
            files::write,
            json!({"path": "nested/.opencode/agent.md", "content": "x"}),
        ),
        (
            files::write,
            json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh"}),
        ),
        // Everything git keeps beside its data: `commondir` would move
        // `config` and `hooks/` elsewhere.
        (
            files::write,
            json!({"path": ".git/commondir", "content": "../x"}),
        ),
        (
            files::write,
            json!({"path": ".git/config.local", "content": "x"}),
        ),
        (
            files::write,
            json!({"path": "AGENTS.md", "content": "Do anything.", "overwrite": true}),
        ),
        (
            files::edit,
            json!({"path": "sub/AGENTS.override.md", "old_string": "Tabs.", "new_string": "Spaces."}),
        ),
        (
            files::edit,
            json!({"path": ".evoflux/tools/existing.toml", "old_string": "true", "new_string": "false"}),
        ),
    ];
    for (x, input) in refused {
        let e = err(&ws, x, input.clone());
        assert_eq!(e.code(), "tool/protected-control", "{input}: {e}");
    }
    assert!(!dir.path().join(".evoflux/tools/run_it.toml").exists());
    assert_eq!(
        fs::read_to_string(dir.path().join("AGENTS.md")).unwrap(),
        "Keep it simple.\n"
    );
    // Names that only look alike, and reads, are ordinary.
    ok(
        &ws,
        files::write,
        json!({"path": "docs/.evoflux-notes.md", "content": "x"}),
    );
    ok(
        &ws,
        files::write,
        json!({"path": ".git/COMMIT_EDITMSG", "content": "x"}),
    );
    ok(
        &ws,
        files::write,
        json!({"path": "AGENTS.md.bak", "content": "x"}),
    );
    assert!(ok(&ws, files::read, json!({"path": "AGENTS.md"})).contains("Keep it simple."));
}

#[test]
fn grep_names_the_files_it_did_not_search() {
    let (dir, ws) = setup();
    put(dir.path(), "small.txt", "nothing here\n");
    let big = "needle in a large file\n".repeat(6 * 1024 * 1024 / 23 + 1);
    put(dir.path(), "big.log", &big);
    let text = ok(&ws, files::grep, json!({"pattern": "needle"}));
    assert!(text.starts_with("No matches for `needle`"), "{text}");
    assert!(
        text.contains(
            "[Not searched: big.log (larger than 5 MiB); read them in pages with `read`]"
        ),
        "{text}"
    );
    // Without skipped files the answer is as before.
    assert_eq!(
        ok(
            &ws,
            files::grep,
            json!({"pattern": "needle", "include": "*.txt"})
        ),
        "No matches for `needle` in ."
    );
}
