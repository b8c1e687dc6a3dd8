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
//! arguments, see [`crate::tool_paths`]). A mutating call (action class
//! Write or Execute) is held back once with the new rules so the model
//! can re-plan; any other call runs and gets a notice appended to its
//! result. The rules themselves live in one place only — the system
//! section of every later call — so each file appears exactly once in any
//! request (a copy in a tool result as well would repeat it in every
//! later request, and be lost when that result is projected or compacted).
//! Loaded nested files are remembered in
//! `<artifacts>/workspace-instructions.json`, so a resumed session does not
//! hold a call back again.
//!
//! A file over [`INSTRUCTION_FILE_MAX_BYTES`] is cut with a visible notice
//! naming both sizes; each file has its own limit, so a large root file
//! never starves the nested ones. Work sessions get nothing from here.

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
    /// The file's full size in bytes.
    pub bytes: usize,
    pub truncated: bool,
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

/// Reads an instruction file, cut visibly at the limit. `None` for a
/// whitespace-only or unreadable file (nothing to inject).
pub fn load_instruction(path: &Path) -> Option<InstructionFile> {
    read_instruction(path).ok().flatten()
}

/// [`load_instruction`] that says why a file could not be read, so the
/// owner can tell the user that their instructions were left out.
fn read_instruction(path: &Path) -> Result<Option<InstructionFile>, std::io::Error> {
    let bytes = std::fs::read(path)?;
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
    }))
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

fn root_context(roots: &[PathBuf], names: InstructionFiles) -> RootContext {
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
    for root in roots {
        for dir in root_chain(root) {
            let Some(path) = instruction_file_in(&dir, names) else {
                continue;
            };
            if !seen.insert(path.clone()) {
                continue;
            }
            match read_instruction(&path) {
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

/// The Coding workspace-context owner. See the module docs.
#[derive(Debug, Default)]
pub struct WorkspaceInstructionsHook {
    state: Mutex<State>,
    files: InstructionFiles,
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

    fn with_state<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        match self.state.lock() {
            Ok(mut s) => f(&mut s),
            Err(poisoned) => f(&mut poisoned.into_inner()),
        }
    }

    /// Loads the root context and the nested files a previous process of
    /// this session applied, once.
    fn ensure_loaded(state: &mut State, ctx: &HookContext<'_>, files: InstructionFiles) {
        if state.roots.is_none() {
            let rc = root_context(ctx.session.workspace.roots(), files);
            for (path, e) in &rc.unreadable {
                unreadable_warning(ctx, path, e);
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

    /// The section text: repository map, root files, loaded nested files.
    fn section(state: &State) -> String {
        let mut parts = Vec::new();
        if let Some(rc) = &state.roots {
            if let Some(map) = &rc.map {
                parts.push(map.clone());
            }
            if !rc.files.is_empty() || !state.nested.is_empty() {
                let mut text = String::from("## Workspace Instructions\n");
                text.push_str(
                    "Follow these repository instructions; deeper files refine the ones above them.",
                );
                for f in rc.files.iter().chain(&state.nested) {
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
                    Self::ensure_loaded(s, ctx, self.files);
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
            Self::ensure_loaded(s, ctx, self.files);
            let mut loaded = Vec::new();
            for argument in arguments {
                for path in Self::new_nested(s, ctx, argument, self.files) {
                    if !s.applied.insert(path.clone()) {
                        continue;
                    }
                    match read_instruction(&path) {
                        Ok(Some(f)) => loaded.push(f),
                        Ok(None) => {}
                        Err(e) => unreadable_warning(ctx, &path, &e),
                    }
                }
            }
            if loaded.is_empty() {
                return ToolGate::Proceed;
            }
            let files: Vec<String> = loaded
                .iter()
                .map(|f| format!("- `{}`", f.path.display()))
                .collect();
            let files = files.join("\n");
            s.nested.extend(loaded);
            Self::persist(s, ctx);
            if mutates(tool.behavior.action_class) {
                ToolGate::HoldBack {
                    reason: format!(
                        "{PREFLIGHT_HEADER}\nNew workspace instructions apply to the path this call touches:\n{files}\n\
                         They are now part of the Workspace Instructions in the system prompt. Read them, \
                         then issue the call again if it still follows them."
                    ),
                }
            } else {
                s.pending.insert(
                    call.id.clone(),
                    format!(
                        "{files}\nThese files apply to the path this call touched; they are now part of \
                         the Workspace Instructions in the system prompt."
                    ),
                );
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
