//! WORKSPACE `workspace-context`: the one owner of Coding workspace
//! context.
//!
//! Every model call of a Coding session gets one system section with
//! the repository map (when there are several repositories, with language
//! signals from their manifests) and each root's `AGENTS.md` chain — the
//! instruction files from the repository's top (the nearest ancestor with
//! `.git`) down to the workspace root — each file exactly once even when
//! roots share ancestors. In each directory `AGENTS.override.md` wins over
//! `AGENTS.md`.
//!
//! Instruction files in directories *below* a root apply when a tool first
//! touches a path under them (the path comes from the call's declared path
//! arguments, see [`crate::tool_paths`]). Their rules reach the model in
//! that call's result, never in the system section: a mutating call
//! (action class Write, Execute or Artifact) is held back once, with the
//! new rules as its result, so the model can re-plan; any other call runs
//! and gets them appended to its result. So the system section, which
//! opens every request's cached prefix, stays byte-identical for the
//! session, and each nested file is sent once, in that result (which
//! projection and compaction treat like any other).
//! Loaded nested files are remembered in
//! `<artifacts>/workspace-instructions.json`, so a resumed session does not
//! hold a call back again.
//!
//! A file over [`INSTRUCTION_FILE_MAX_BYTES`] is cut with a visible notice
//! naming both sizes; each file has its own limit, so a large root file
//! never starves the nested ones. Work sessions get nothing from here.
//!
//! The user's own instruction files of other harnesses
//! ([`user_instruction_files`]: `~/.codex/AGENTS.md`, `~/.claude/CLAUDE.md`)
//! come first, before every repository's: they are what the user wants in
//! every repository, and the repository's own files refine them. evoflux
//! has no user-level instruction file of its own, so nothing comes before
//! them.
//!
//! Claude Code's `@path` imports are inlined where they stand
//! ([`expand_imports`]): a file written for Claude Code that keeps its
//! rules in `@docs/rules.md` would otherwise hand the model a bare file
//! name. An import is relative to the importing file (`@~/…` to the home),
//! followed [`MAX_IMPORT_DEPTH`] levels deep as in Claude Code, and only to
//! a file inside the importing file's repository (the home, for the user's
//! own files): an instruction file must not pull in what lies outside what
//! it may speak for. A cycle stops at the file seen again; `@` inside code
//! spans and fences is text. What is not inlined is named in a warning
//! (`instructions/import-…`), and the whole, imports included, is bounded
//! like one file.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use evoflux_core::AppMode;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_graph::tool::{ActionClass, ToolDefinition};
use evoflux_model::ToolCall;
use serde::{Deserialize, Serialize};

use crate::events::ToolResult;
use crate::hooks::{Hook, HookContext, HookFuture, ModelCall, SystemSection, ToolGate};
use crate::tool_paths::path_arguments;

/// The owner name of this hook.
pub const OWNER: &str = "workspace-context";
/// Wins over [`STANDARD_FILE`] in the same directory.
pub const OVERRIDE_FILE: &str = "AGENTS.override.md";
pub const STANDARD_FILE: &str = "AGENTS.md";
/// Bytes of one instruction file injected at most.
pub const INSTRUCTION_FILE_MAX_BYTES: usize = 128 * 1024;
/// The first line of the notice that ends a cut file.
pub const TRUNCATION_NOTICE: &str = "[AGENTS.md truncated — file exceeds the injected-size limit]";
/// Heads the result of a mutating call held back for new rules.
pub const PREFLIGHT_HEADER: &str = "[Instruction preflight — call not executed]";
/// Heads the notice appended to a reading call's result.
pub const APPENDED_HEADER: &str = "[New nested workspace instructions]";
/// Where the loaded nested files are remembered, below the artifacts dir.
pub const STATE_FILE: &str = "workspace-instructions.json";

/// One instruction file as injected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    pub path: PathBuf,
    /// The text shown, ending with the truncation notice when cut.
    pub text: String,
    /// The file's full size in bytes, its imports inlined.
    pub bytes: usize,
    pub truncated: bool,
    /// The files its `@path` imports inlined, in order.
    pub imported: Vec<PathBuf>,
    /// The imports that were not inlined.
    pub problems: Vec<ImportProblem>,
}

/// How many levels of `@path` imports are followed (Claude Code's bound).
pub const MAX_IMPORT_DEPTH: usize = 5;

/// Why an `@path` import was not inlined. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportRefusal {
    /// No such file.
    Missing,
    /// Outside the repository (or the home, for the user's own files).
    Outside,
    /// It imports a file that is already being inlined.
    Cycle,
    /// Deeper than [`MAX_IMPORT_DEPTH`].
    TooDeep,
}

impl ImportRefusal {
    pub const fn code(self) -> &'static str {
        match self {
            ImportRefusal::Missing => "instructions/import-missing",
            ImportRefusal::Outside => "instructions/import-outside",
            ImportRefusal::Cycle => "instructions/import-cycle",
            ImportRefusal::TooDeep => "instructions/import-too-deep",
        }
    }
}

/// One `@path` import that was not inlined: where it is written and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportProblem {
    pub refusal: ImportRefusal,
    /// The file that writes the import, and its line (1-based).
    pub file: PathBuf,
    pub line: u32,
    /// The import as written, without the `@`.
    pub import: String,
}

impl ImportProblem {
    pub fn message(&self) -> String {
        let what = match self.refusal {
            ImportRefusal::Missing => "names no file",
            ImportRefusal::Outside => {
                "is outside the repository (the home, for your own files), and is not read"
            }
            ImportRefusal::Cycle => "imports a file that is already being imported",
            ImportRefusal::TooDeep => "is deeper than 5 levels of imports, and is not read",
        };
        format!(
            "`@{}` in `{}` (line {}) {what}; its text is left as written",
            self.import,
            self.file.display(),
            self.line
        )
    }

    pub fn to_diagnostic(&self) -> evoflux_core::Diagnostic {
        evoflux_core::Diagnostic::warning(self.refusal.code(), self.message())
            .with_file(&self.file)
            .with_line(self.line)
    }
}

impl InstructionFile {
    fn render(&self) -> String {
        format!("### `{}`\n{}", self.path.display(), self.text.trim_end())
    }
}

/// Read in a directory without `AGENTS.md`, in this order, when other
/// harnesses' instruction files are read (`[compat] instructions`).
pub const COMPAT_FILES: [&str; 2] = ["CLAUDE.md", "GEMINI.md"];

/// Which files instruct a directory. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum InstructionFiles {
    /// `AGENTS.override.md`, else `AGENTS.md`.
    Agents,
    /// As [`InstructionFiles::Agents`], else `CLAUDE.md`, else `GEMINI.md`.
    #[default]
    AgentsThenCompat,
}

impl InstructionFiles {
    /// The choice `[compat] instructions` makes.
    pub fn from_compat(read_compat: bool) -> InstructionFiles {
        match read_compat {
            true => InstructionFiles::AgentsThenCompat,
            false => InstructionFiles::Agents,
        }
    }

    fn names(self) -> &'static [&'static str] {
        match self {
            InstructionFiles::Agents => &[OVERRIDE_FILE, STANDARD_FILE],
            InstructionFiles::AgentsThenCompat => &[
                OVERRIDE_FILE,
                STANDARD_FILE,
                COMPAT_FILES[0],
                COMPAT_FILES[1],
            ],
        }
    }
}

/// The instruction file of one directory: the first of `files` present,
/// so the override wins and another harness's file serves only a
/// directory without `AGENTS.md`.
pub fn instruction_file_in(dir: &Path, files: InstructionFiles) -> Option<PathBuf> {
    files
        .names()
        .iter()
        .map(|name| dir.join(name))
        .find(|p| p.is_file())
}

/// The user's own instruction files of other harnesses, in this order:
/// codex's `~/.codex/AGENTS.override.md` (else `~/.codex/AGENTS.md`), then
/// Claude Code's `~/.claude/CLAUDE.md`; those present, and none when
/// other harnesses' files are not read (`[compat] instructions`).
pub fn user_instruction_files(home: &Path, files: InstructionFiles) -> Vec<PathBuf> {
    match files {
        InstructionFiles::Agents => Vec::new(),
        InstructionFiles::AgentsThenCompat => {
            let codex = [OVERRIDE_FILE, STANDARD_FILE]
                .iter()
                .map(|name| home.join(".codex").join(name))
                .find(|p| p.is_file());
            let claude = Some(home.join(".claude").join(COMPAT_FILES[0])).filter(|p| p.is_file());
            codex.into_iter().chain(claude).collect()
        }
    }
}

/// Where a repository's instruction file may import from: its repository
/// (the top of its chain), or its own folder outside any.
pub fn import_scope(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(path);
    root_chain(dir)
        .into_iter()
        .next()
        .unwrap_or_else(|| dir.to_path_buf())
}

/// Reads an instruction file, its imports inlined, cut visibly at the
/// limit. `None` for a whitespace-only or unreadable file (nothing to
/// inject).
pub fn load_instruction(path: &Path) -> Option<InstructionFile> {
    read_instruction(path, &import_scope(path), None)
        .ok()
        .flatten()
}

/// [`load_instruction`] for the user's own file: imports stay in `home`.
pub fn load_user_instruction(path: &Path, home: &Path) -> Option<InstructionFile> {
    read_instruction(path, home, Some(home)).ok().flatten()
}

/// [`load_instruction`] that says why a file could not be read, so the
/// owner can tell the user that their instructions were left out. Imports
/// are followed inside `scope`; `@~/` names `home`.
fn read_instruction(
    path: &Path,
    scope: &Path,
    home: Option<&Path>,
) -> Result<Option<InstructionFile>, std::io::Error> {
    let raw = std::fs::read(path)?;
    let raw = String::from_utf8_lossy(&raw).into_owned();
    let mut imports = Imports {
        scope: std::fs::canonicalize(scope).unwrap_or_else(|_| scope.to_path_buf()),
        home,
        stack: vec![std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())],
        imported: Vec::new(),
        problems: Vec::new(),
    };
    let expanded = imports.expand(&raw, path, 0);
    let bytes = expanded.into_bytes();
    let full = bytes.len();
    let truncated = full > INSTRUCTION_FILE_MAX_BYTES;
    let shown = &bytes[..full.min(INSTRUCTION_FILE_MAX_BYTES)];
    let mut text = String::from_utf8_lossy(shown).into_owned();
    if truncated {
        // A cut inside a multi-byte character shows as one replacement
        // character; drop it rather than show a broken glyph.
        while text.ends_with('\u{FFFD}') {
            text.pop();
        }
        text.push_str(&format!(
            "\n{TRUNCATION_NOTICE}\nShowed the first {INSTRUCTION_FILE_MAX_BYTES} of {full} bytes; read the file for the rest."
        ));
    }
    if text.trim().is_empty() {
        return Ok(None);
    }
    Ok(Some(InstructionFile {
        path: path.to_path_buf(),
        text,
        bytes: full,
        truncated,
        imported: imports.imported,
        problems: imports.problems,
    }))
}

/// The imports of one instruction file as they are inlined.
struct Imports<'a> {
    /// Canonical: what an import must stay inside.
    scope: PathBuf,
    home: Option<&'a Path>,
    /// The files being inlined, outermost first (canonical).
    stack: Vec<PathBuf>,
    imported: Vec<PathBuf>,
    problems: Vec<ImportProblem>,
}

/// Bytes of one file's text with its imports inlined, before the cut;
/// past it, imports are no longer read (the cut would drop them).
const EXPANDED_MAX_BYTES: usize = 2 * INSTRUCTION_FILE_MAX_BYTES;

impl Imports<'_> {
    /// `text` of `file` (at `depth`, 0 for the file itself) with each
    /// `@path` that names a file inlined after the line that writes it.
    fn expand(&mut self, text: &str, file: &Path, depth: usize) -> String {
        let dir = file.parent().unwrap_or(Path::new(""));
        let mut out = String::with_capacity(text.len());
        let mut fence: Option<(char, usize)> = None;
        for (n, line) in text.split_inclusive('\n').enumerate() {
            out.push_str(line);
            let trimmed = line.trim_start();
            let indent = line.len() - trimmed.len();
            // A fence opens or closes: ``` or ~~~, at most three spaces in.
            let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~');
            if let Some(c) = marker
                && indent <= 3
            {
                let run = trimmed.chars().take_while(|x| *x == c).count();
                if run >= 3 {
                    fence = match fence {
                        None => Some((c, run)),
                        Some((open, len)) if open == c && run >= len => None,
                        Some(f) => Some(f),
                    };
                    continue;
                }
            }
            if fence.is_some() {
                continue;
            }
            for import in import_tokens(line) {
                if out.len() > EXPANDED_MAX_BYTES {
                    return out;
                }
                let line_no = u32::try_from(n + 1).unwrap_or(u32::MAX);
                let problem = |refusal| ImportProblem {
                    refusal,
                    file: file.to_path_buf(),
                    line: line_no,
                    import: import.to_owned(),
                };
                let target = match import.strip_prefix("~/") {
                    Some(rest) => match self.home {
                        Some(home) => home.join(rest),
                        // `~/` in a repository's file: outside it.
                        None => {
                            self.problems.push(problem(ImportRefusal::Outside));
                            continue;
                        }
                    },
                    None => dir.join(import),
                };
                let Ok(real) = std::fs::canonicalize(&target) else {
                    // A word like `@alice` is prose, not a missing file.
                    if import.contains(['/', '.']) {
                        self.problems.push(problem(ImportRefusal::Missing));
                    }
                    continue;
                };
                if !real.is_file() {
                    continue;
                }
                if !real.starts_with(&self.scope) {
                    self.problems.push(problem(ImportRefusal::Outside));
                    continue;
                }
                if self.stack.contains(&real) {
                    self.problems.push(problem(ImportRefusal::Cycle));
                    continue;
                }
                if depth >= MAX_IMPORT_DEPTH {
                    self.problems.push(problem(ImportRefusal::TooDeep));
                    continue;
                }
                let Ok(bytes) = std::fs::read(&real) else {
                    self.problems.push(problem(ImportRefusal::Missing));
                    continue;
                };
                let body = String::from_utf8_lossy(&bytes).into_owned();
                self.stack.push(real.clone());
                self.imported.push(target.clone());
                let inlined = self.expand(&body, &target, depth + 1);
                self.stack.pop();
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push_str(&inlined);
                if !out.ends_with('\n') {
                    out.push('\n');
                }
            }
        }
        out
    }
}

/// The `@path` imports of one line: a word that starts with `@` (at the
/// line's start or after whitespace), outside backtick code spans, with
/// trailing punctuation dropped.
fn import_tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut in_code = false;
    let mut prev_space = true;
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'`' {
            in_code = !in_code;
            prev_space = false;
            i += 1;
            continue;
        }
        if c == b'@' && prev_space && !in_code {
            let start = i + 1;
            let end = line[start..]
                .find(|ch: char| ch.is_whitespace() || ch == '`')
                .map_or(line.len(), |e| start + e);
            let token = line[start..end].trim_end_matches([',', ';', ':', ')', '!', '?', '.']);
            if !token.is_empty() {
                out.push(token);
            }
            i = end;
            prev_space = false;
            continue;
        }
        prev_space = c.is_ascii_whitespace();
        i += 1;
    }
    out
}

/// The directories of a root's chain, top first: from the nearest ancestor
/// holding `.git` (the root itself when it has one) down to the root. With
/// no repository marker above it, only the root.
pub fn root_chain(root: &Path) -> Vec<PathBuf> {
    let top = root.ancestors().find(|d| d.join(".git").exists());
    let Some(top) = top else {
        return vec![root.to_path_buf()];
    };
    let mut chain: Vec<PathBuf> = root
        .ancestors()
        .take_while(|d| d.starts_with(top))
        .map(Path::to_path_buf)
        .collect();
    chain.reverse();
    chain
}

/// Languages a repository's root manifests suggest, for the repository map.
pub fn language_signals(root: &Path) -> Vec<&'static str> {
    const SIGNALS: &[(&[&str], &str)] = &[
        (
            &["pyproject.toml", "setup.py", "requirements.txt"],
            "Python",
        ),
        (&["Cargo.toml"], "Rust"),
        (&["package.json"], "JavaScript/TypeScript"),
        (&["tsconfig.json"], "TypeScript"),
        (&["go.mod"], "Go"),
        (
            &["pom.xml", "build.gradle", "build.gradle.kts"],
            "Java/Kotlin",
        ),
        (&["Gemfile"], "Ruby"),
        (&["composer.json"], "PHP"),
        (&["Package.swift"], "Swift"),
    ];
    SIGNALS
        .iter()
        .filter(|(files, _)| files.iter().any(|f| root.join(f).is_file()))
        .map(|(_, lang)| *lang)
        .collect()
}

/// The root context, computed once per session so the section is
/// byte-stable (and cacheable) from call to call.
#[derive(Debug, Clone)]
struct RootContext {
    map: Option<String>,
    files: Vec<InstructionFile>,
    /// Instruction files that exist and could not be read.
    unreadable: Vec<(PathBuf, String)>,
}

fn root_context(roots: &[PathBuf], names: InstructionFiles, user: &UserFiles) -> RootContext {
    // Always listed (this owner is the one place repositories are named);
    // language signals only help to tell several apart.
    let several = roots.len() >= 2;
    let map = Some({
        let mut text = String::from("## Available Repositories\n");
        for (i, root) in roots.iter().enumerate() {
            let name = root
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| root.display().to_string());
            text.push_str(&format!("- **{name}**: `{}`", root.display()));
            if i == 0 {
                text.push_str(" (primary)");
            }
            let signals = if several {
                language_signals(root)
            } else {
                Vec::new()
            };
            if !signals.is_empty() {
                text.push_str(&format!(" — signals: {}", signals.join(", ")));
            }
            text.push('\n');
        }
        text.push_str(if several {
            "Relative paths resolve against the primary repository; use absolute paths for the others."
        } else {
            "Relative paths resolve inside it."
        });
        text
    });
    let mut seen = BTreeSet::new();
    let mut files = Vec::new();
    let mut unreadable = Vec::new();
    // The user's own files first: the repositories' refine them.
    if let Some(home) = &user.home {
        for path in &user.files {
            if !seen.insert(path.clone()) {
                continue;
            }
            match read_instruction(path, home, Some(home)) {
                Ok(Some(f)) => files.push(f),
                Ok(None) => {}
                Err(e) => unreadable.push((path.clone(), e.to_string())),
            }
        }
    }
    for root in roots {
        let chain = root_chain(root);
        let scope = chain.first().cloned().unwrap_or_else(|| root.clone());
        for dir in chain {
            let Some(path) = instruction_file_in(&dir, names) else {
                continue;
            };
            if !seen.insert(path.clone()) {
                continue;
            }
            match read_instruction(&path, &scope, None) {
                Ok(Some(f)) => files.push(f),
                Ok(None) => {}
                Err(e) => unreadable.push((path, e.to_string())),
            }
        }
    }
    RootContext {
        map,
        files,
        unreadable,
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Persisted {
    nested: Vec<PathBuf>,
}

#[derive(Debug, Default)]
struct State {
    roots: Option<RootContext>,
    /// Instruction files already applied (root chain and nested).
    applied: BTreeSet<PathBuf>,
    /// Nested files in the order they were loaded.
    nested: Vec<InstructionFile>,
    /// Rules to append to a call's result, by call id.
    pending: HashMap<String, String>,
    restored: bool,
}

/// The user's own instruction files ([`user_instruction_files`]) and the
/// home their imports stay in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UserFiles {
    pub home: Option<PathBuf>,
    pub files: Vec<PathBuf>,
}

impl UserFiles {
    /// The files [`user_instruction_files`] finds in `home`.
    pub fn in_home(home: Option<&Path>, files: InstructionFiles) -> UserFiles {
        UserFiles {
            home: home.map(Path::to_path_buf),
            files: home.map_or_else(Vec::new, |h| user_instruction_files(h, files)),
        }
    }
}

/// The Coding workspace-context owner. See the module docs.
#[derive(Debug, Default)]
pub struct WorkspaceInstructionsHook {
    state: Mutex<State>,
    files: InstructionFiles,
    user: UserFiles,
}

impl WorkspaceInstructionsHook {
    pub fn new() -> WorkspaceInstructionsHook {
        WorkspaceInstructionsHook::default()
    }

    /// The same owner, reading `files` in each directory.
    pub fn reading(files: InstructionFiles) -> WorkspaceInstructionsHook {
        WorkspaceInstructionsHook {
            files,
            ..WorkspaceInstructionsHook::default()
        }
    }

    /// The same owner, with the user's own files before the repositories'.
    pub fn with_user_files(self, user: UserFiles) -> WorkspaceInstructionsHook {
        WorkspaceInstructionsHook { user, ..self }
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        match self.state.lock() {
            Ok(mut s) => f(&mut s),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Loads the root context and the nested files a previous process of
    /// this session applied, once.
    fn ensure_loaded(
        state: &mut State,
        ctx: &HookContext<'_>,
        files: InstructionFiles,
        user: &UserFiles,
    ) {
        if state.roots.is_none() {
            let rc = root_context(ctx.session.workspace.roots(), files, user);
            for (path, e) in &rc.unreadable {
                unreadable_warning(ctx, path, e);
            }
            for problem in rc.files.iter().flat_map(|f| &f.problems) {
                ctx.warn(problem.refusal.code(), problem.message());
            }
            state
                .applied
                .extend(rc.files.iter().map(|f| f.path.clone()));
            state.roots = Some(rc);
        }
        if !state.restored {
            state.restored = true;
            let path = ctx.artifacts_dir.join(STATE_FILE);
            let persisted: Persisted = std::fs::read(&path)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
            for p in persisted.nested {
                if state.applied.insert(p.clone())
                    && let Some(f) = load_instruction(&p)
                {
                    state.nested.push(f);
                }
            }
        }
    }

    fn persist(state: &State, ctx: &HookContext<'_>) {
        let persisted = Persisted {
            nested: state.nested.iter().map(|f| f.path.clone()).collect(),
        };
        let write = evoflux_core::private::create_private_dir(ctx.artifacts_dir)
            .map_err(|e| e.to_string())
            .and_then(|()| serde_json::to_vec_pretty(&persisted).map_err(|e| e.to_string()))
            .and_then(|bytes| {
                write_atomic(
                    &ctx.artifacts_dir.join(STATE_FILE),
                    &bytes,
                    AtomicOptions::SECRET,
                )
                .map_err(|e| e.to_string())
            });
        if let Err(e) = write {
            tracing::warn!(error = %e, "cannot remember the loaded nested instruction files");
        }
    }

    /// The section text: repository map and root files (nested files go
    /// to the model in tool results, see the module docs).
    fn section(state: &State) -> String {
        let mut parts = Vec::new();
        if let Some(rc) = &state.roots {
            if let Some(map) = &rc.map {
                parts.push(map.clone());
            }
            if !rc.files.is_empty() {
                let mut text = String::from("## Workspace Instructions\n");
                text.push_str(
                    "Follow these repository instructions; deeper files refine the ones above them \
                     (they reach you with the results of the calls they apply to).",
                );
                for f in &rc.files {
                    text.push_str("\n\n");
                    text.push_str(&f.render());
                }
                parts.push(text);
            }
        }
        parts.join("\n\n")
    }

    /// Instruction files strictly below the target's root, down to the
    /// target's directory, not applied yet.
    fn new_nested(
        state: &State,
        ctx: &HookContext<'_>,
        argument: &str,
        files: InstructionFiles,
    ) -> Vec<PathBuf> {
        let Ok(resolved) = ctx.workspace.resolve(argument) else {
            return Vec::new();
        };
        let target = resolved.path;
        let dir = if target.is_dir() {
            target.as_path()
        } else {
            match target.parent() {
                Some(p) => p,
                None => return Vec::new(),
            }
        };
        // The deepest root holding the target (roots may nest).
        let Some(root) = ctx
            .workspace
            .roots()
            .iter()
            .filter(|r| dir.starts_with(r))
            .max_by_key(|r| r.components().count())
        else {
            return Vec::new();
        };
        let mut below: Vec<&Path> = dir
            .ancestors()
            .take_while(|d| *d != root.as_path() && d.starts_with(root))
            .collect();
        below.reverse();
        below
            .into_iter()
            .filter_map(|d| instruction_file_in(d, files))
            .filter(|p| !state.applied.contains(p))
            .collect()
    }
}

fn unreadable_warning(ctx: &HookContext<'_>, path: &Path, e: &dyn std::fmt::Display) {
    ctx.warn(
        "instructions/file-unreadable",
        format!(
            "cannot read the instruction file `{}` ({e}); its rules are left out",
            path.display()
        ),
    );
}

/// Whether a call changes the workspace, by its declared action class.
const fn mutates(class: ActionClass) -> bool {
    match class {
        ActionClass::Write | ActionClass::Execute | ActionClass::Artifact => true,
        ActionClass::Read
        | ActionClass::Verify
        | ActionClass::Dispatch
        | ActionClass::Ask
        | ActionClass::Network => false,
    }
}

impl Hook for WorkspaceInstructionsHook {
    fn before_model<'a>(
        &'a self,
        ctx: &'a HookContext<'a>,
        call: &'a mut ModelCall,
    ) -> HookFuture<'a> {
        match ctx.mode() {
            AppMode::Work => {}
            AppMode::Coding => {
                let text = self.with_state(|s| {
                    Self::ensure_loaded(s, ctx, self.files, &self.user);
                    Self::section(s)
                });
                if !text.is_empty() {
                    call.system.push(SystemSection { owner: OWNER, text });
                }
            }
        }
        Box::pin(async { Ok(()) })
    }

    fn before_tool(
        &self,
        ctx: &HookContext<'_>,
        call: &ToolCall,
        tool: &ToolDefinition,
    ) -> ToolGate {
        match ctx.mode() {
            AppMode::Work => return ToolGate::Proceed,
            AppMode::Coding => {}
        }
        let arguments = path_arguments(tool, &call.arguments);
        if arguments.is_empty() {
            return ToolGate::Proceed;
        }
        self.with_state(|s| {
            Self::ensure_loaded(s, ctx, self.files, &self.user);
            let mut loaded = Vec::new();
            for argument in arguments {
                for path in Self::new_nested(s, ctx, argument, self.files) {
                    if !s.applied.insert(path.clone()) {
                        continue;
                    }
                    match read_instruction(&path, &import_scope(&path), None) {
                        Ok(Some(f)) => {
                            for problem in &f.problems {
                                ctx.warn(problem.refusal.code(), problem.message());
                            }
                            loaded.push(f);
                        }
                        Ok(None) => {}
                        Err(e) => unreadable_warning(ctx, &path, &e),
                    }
                }
            }
            if loaded.is_empty() {
                return ToolGate::Proceed;
            }
            // The rules go to the model in the call's own result, where
            // they apply, never into the system prompt: the system prompt
            // opens every request's cached prefix and stays byte-identical
            // for the session.
            let rules: Vec<String> = loaded.iter().map(InstructionFile::render).collect();
            let rules = rules.join("\n\n");
            s.nested.extend(loaded);
            Self::persist(s, ctx);
            if mutates(tool.behavior.action_class) {
                ToolGate::HoldBack {
                    reason: format!(
                        "{PREFLIGHT_HEADER}\nNew workspace instructions apply to the path this call touches. \
                         Read them, then issue the call again if it still follows them.\n\n{rules}"
                    ),
                }
            } else {
                s.pending.insert(call.id.clone(), rules);
                ToolGate::Proceed
            }
        })
    }

    fn after_tool(
        &self,
        _ctx: &HookContext<'_>,
        call: &ToolCall,
        _tool: &ToolDefinition,
        result: &mut ToolResult,
    ) {
        if let Some(rules) = self.with_state(|s| s.pending.remove(&call.id)) {
            result
                .content
                .push_str(&format!("\n\n{APPENDED_HEADER}\n{rules}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_in_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(STANDARD_FILE), "standard").unwrap();
        assert_eq!(
            instruction_file_in(dir.path(), InstructionFiles::default()),
            Some(dir.path().join(STANDARD_FILE))
        );
        std::fs::write(dir.path().join(OVERRIDE_FILE), "override").unwrap();
        assert_eq!(
            instruction_file_in(dir.path(), InstructionFiles::default()),
            Some(dir.path().join(OVERRIDE_FILE))
        );
    }

    #[test]
    fn another_harness_file_serves_only_a_directory_without_agents_md() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("GEMINI.md"), "gemini").unwrap();
        let with = InstructionFiles::AgentsThenCompat;
        assert_eq!(
            instruction_file_in(dir.path(), with),
            Some(dir.path().join("GEMINI.md"))
        );
        std::fs::write(dir.path().join("CLAUDE.md"), "claude").unwrap();
        assert_eq!(
            instruction_file_in(dir.path(), with),
            Some(dir.path().join("CLAUDE.md"))
        );
        assert_eq!(
            instruction_file_in(dir.path(), InstructionFiles::Agents),
            None
        );
        std::fs::write(dir.path().join(STANDARD_FILE), "agents").unwrap();
        assert_eq!(
            instruction_file_in(dir.path(), with),
            Some(dir.path().join(STANDARD_FILE))
        );
        assert_eq!(
            InstructionFiles::from_compat(false),
            InstructionFiles::Agents
        );
    }

    #[test]
    fn chain_runs_from_the_repository_top_to_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let top = dir.path().join("mono");
        let pkg = top.join("packages/app");
        std::fs::create_dir_all(top.join(".git")).unwrap();
        std::fs::create_dir_all(&pkg).unwrap();
        assert_eq!(
            root_chain(&pkg),
            [top.clone(), top.join("packages"), pkg.clone()]
        );
        let lone = dir.path().join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(root_chain(&lone), [lone]);
    }

    #[test]
    fn oversized_file_is_cut_visibly() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(STANDARD_FILE);
        std::fs::write(&p, "x".repeat(INSTRUCTION_FILE_MAX_BYTES + 10)).unwrap();
        let f = load_instruction(&p).unwrap();
        assert!(f.truncated);
        assert!(f.text.contains(TRUNCATION_NOTICE));
        assert!(
            f.text
                .contains(&format!("of {} bytes", INSTRUCTION_FILE_MAX_BYTES + 10))
        );
        std::fs::write(&p, "  \n").unwrap();
        assert!(load_instruction(&p).is_none());
    }

    /// A repository with `.git` in a temp folder, and the folder.
    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        (dir, repo)
    }

    #[test]
    fn imports_are_inlined_where_they_stand_and_never_in_code() {
        let (_dir, repo) = repo();
        std::fs::create_dir_all(repo.join("docs")).unwrap();
        std::fs::write(repo.join("docs/rules.md"), "Use tabs.\nSee @style.md.\n").unwrap();
        std::fs::write(repo.join("docs/style.md"), "Short lines.").unwrap();
        std::fs::write(
            repo.join("CLAUDE.md"),
            "# Rules\n@docs/rules.md\nMail @alice or `@docs/rules.md` here.\n```\n@docs/style.md\n```\nend\n",
        )
        .unwrap();
        let f = load_instruction(&repo.join("CLAUDE.md")).unwrap();
        assert_eq!(
            f.text,
            "# Rules\n@docs/rules.md\nUse tabs.\nSee @style.md.\nShort lines.\nMail @alice or \
             `@docs/rules.md` here.\n```\n@docs/style.md\n```\nend\n"
        );
        assert_eq!(
            f.imported,
            [repo.join("docs/rules.md"), repo.join("docs/style.md")]
        );
        assert!(f.problems.is_empty(), "{:?}", f.problems);
    }

    #[test]
    fn imports_stop_at_the_depth_bound_a_cycle_and_the_repository_edge() {
        let (dir, repo) = repo();
        // a0 imports a1 … a6: five levels are followed, the sixth is named.
        for i in 0..7 {
            std::fs::write(
                repo.join(format!("a{i}.md")),
                format!("level {i}\n@a{}.md\n", i + 1),
            )
            .unwrap();
        }
        let f = load_instruction(&repo.join("a0.md")).unwrap();
        assert!(f.text.contains("level 5") && !f.text.contains("level 6"));
        let codes: Vec<&str> = f.problems.iter().map(|p| p.refusal.code()).collect();
        assert_eq!(codes, ["instructions/import-too-deep"]);
        // A cycle.
        std::fs::write(repo.join("x.md"), "x\n@y.md\n").unwrap();
        std::fs::write(repo.join("y.md"), "y\n@x.md\n").unwrap();
        let f = load_instruction(&repo.join("x.md")).unwrap();
        assert_eq!(f.text, "x\n@y.md\ny\n@x.md\n");
        assert_eq!(f.problems[0].refusal, ImportRefusal::Cycle);
        assert_eq!(f.problems[0].file, repo.join("y.md"));
        // Outside the repository, the home from a repository file, missing.
        std::fs::write(dir.path().join("secret.md"), "SECRET").unwrap();
        std::fs::write(
            repo.join("AGENTS.md"),
            "@../secret.md\n@~/notes.md\n@missing/file.md\n",
        )
        .unwrap();
        let f = load_instruction(&repo.join("AGENTS.md")).unwrap();
        assert!(!f.text.contains("SECRET"));
        let codes: Vec<&str> = f.problems.iter().map(|p| p.refusal.code()).collect();
        assert_eq!(
            codes,
            [
                "instructions/import-outside",
                "instructions/import-outside",
                "instructions/import-missing"
            ]
        );
        assert_eq!(f.problems[2].line, 3);
    }

    #[test]
    fn the_user_s_own_files_come_from_the_home_and_import_from_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(home.join(".codex")).unwrap();
        std::fs::create_dir_all(home.join(".claude")).unwrap();
        assert!(user_instruction_files(&home, InstructionFiles::default()).is_empty());
        std::fs::write(home.join(".codex/AGENTS.md"), "codex rules").unwrap();
        std::fs::write(
            home.join(".claude/CLAUDE.md"),
            "claude\n@~/.claude/more.md\n",
        )
        .unwrap();
        std::fs::write(home.join(".claude/more.md"), "more rules").unwrap();
        let files = user_instruction_files(&home, InstructionFiles::default());
        assert_eq!(
            files,
            [
                home.join(".codex/AGENTS.md"),
                home.join(".claude/CLAUDE.md")
            ]
        );
        assert!(user_instruction_files(&home, InstructionFiles::Agents).is_empty());
        let f = load_user_instruction(&files[1], &home).unwrap();
        assert!(f.text.contains("more rules"), "{}", f.text);
        let (_d, repo) = self::repo();
        let rc = root_context(
            std::slice::from_ref(&repo),
            InstructionFiles::default(),
            &UserFiles::in_home(Some(&home), InstructionFiles::default()),
        );
        let paths: Vec<&Path> = rc.files.iter().map(|f| f.path.as_path()).collect();
        assert_eq!(
            paths,
            [
                home.join(".codex/AGENTS.md").as_path(),
                home.join(".claude/CLAUDE.md").as_path()
            ]
        );
    }

    #[test]
    fn signals_come_from_root_manifests() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("Cargo.toml"), "").unwrap();
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(
            language_signals(dir.path()),
            ["Rust", "JavaScript/TypeScript"]
        );
    }
}
