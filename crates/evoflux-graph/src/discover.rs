//! Discovery: roots become candidates.
//!
//! Discovery reads directory listings and nothing else (except `mcp.json`,
//! the MCP server files of other harnesses and the `[agents.external]`
//! tables of `config.toml`: one file declares several slots, whose entry
//! names it must know).
//! It never parses a definition: that is done for winners only, after
//! composition.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_core::config::ForeignMcp;
use evoflux_core::trust::Trust;
use evoflux_core::{Diagnostic, Diagnostics};

use crate::candidate::{AppFolder, AppRoot, Backing, Candidate, Owner, SourceId};
use crate::connection;
use crate::layer::{Form, Layer};
use crate::mcp_format::{self, McpFormat};
use crate::registry::BuiltinRegistry;
use crate::slot::{self, FileFormat, PathClass, Slot, SlotKind};

/// What a root directory contains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootShape {
    /// Every slot kind (`.evoflux/`, the user config dir, the admin dir).
    Full,
    /// Only skill bundles as immediate children (`.agents/skills`).
    Skills,
    /// Exactly these skill bundles, listed by their owner (a plugin's
    /// `skills/`): the folder itself is not scanned.
    Listed(Vec<ListedSkill>),
    /// Claude Code's subagents (`.claude/agents/`, `~/.claude/agents/`):
    /// each immediate `<name>.md` is the Coding agent `<name>` (a member of
    /// the default lead unless it says otherwise), derived, so an evoflux
    /// agent file of the same name in the same layer wins.
    ClaudeAgents,
    /// One MCP server file of another harness in `dir` (Claude Code's
    /// `.mcp.json`, codex's `config.toml`, …), of which the entries of
    /// `scopes` join the layer as derived candidates.
    McpFile {
        file: PathBuf,
        scopes: Vec<McpFormat>,
    },
}

/// One root to discover.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    pub layer: Layer,
    pub dir: PathBuf,
    pub shape: RootShape,
    pub owner: Owner,
    /// Stable, relocation-independent label used in source ids.
    pub label: String,
    /// Untrusted only for a repository the user has not trusted.
    pub trust: Trust,
}

/// Where to look, taken from explicit options (never the real home unless
/// the caller passes it).
#[derive(Debug, Clone, Default)]
pub struct RootOptions {
    pub admin_dir: Option<PathBuf>,
    pub user_config_dir: Option<PathBuf>,
    /// For the compatible user skill roots (`~/.agents/skills`, …).
    pub home: Option<PathBuf>,
    /// The workspace directories whose repositories join the project layer.
    pub workspaces: Vec<PathBuf>,
    /// The repository roots the user trusts (canonical); every other
    /// repository is untrusted.
    pub trusted: Vec<PathBuf>,
    /// Enabled plugins (bundled and installed/linked), in registry order.
    /// Plugins contribute skills only to the graph; their MCP servers run
    /// in the plugin runtime.
    pub plugins: Vec<PluginRoot>,
    /// Whose MCP server files are read besides evoflux's own (`[compat]
    /// mcp` of the owner's config; none unless the caller says).
    pub foreign_mcp: Vec<evoflux_core::config::ForeignMcp>,
}

/// One enabled plugin whose `skills/` folder joins the composition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PluginRoot {
    /// `true` for plugins shipped with the release (the `bundled-plugin`
    /// layer), `false` for installed and linked ones (`plugin`).
    pub bundled: bool,
    /// The installation id from the registry.
    pub installation: String,
    /// The plugin's manifest name.
    pub name: String,
    /// The plugin root (the folder holding `plugin.json`).
    pub dir: PathBuf,
    /// The skill bundles this plugin may load, as listed by the plugin
    /// crate's one rule (immediate children of `skills/` that stay inside
    /// the plugin root). Discovery takes exactly these and never scans the
    /// plugin's `skills/` on its own, so it loads no skill that inspection
    /// skips.
    pub skills: Vec<ListedSkill>,
}

/// One skill bundle listed by its owner rather than found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedSkill {
    /// The bundle folder's name: the skill's slot.
    pub name: String,
    /// The bundle folder (holding `SKILL.md`).
    pub dir: PathBuf,
}

const PROJECT_SKILL_ROOTS: [(&str, AppFolder); 3] = [
    (".agents/skills", AppFolder::Agents),
    (".claude/skills", AppFolder::Claude),
    (".opencode/skills", AppFolder::Opencode),
];
const USER_SKILL_ROOTS: [(&str, AppFolder); 3] = [
    (".agents/skills", AppFolder::Agents),
    (".claude/skills", AppFolder::Claude),
    (".config/opencode/skills", AppFolder::Opencode),
];

/// The folders of a project that hold its sources (`.evoflux/` and the
/// project skill roots), relative to a directory between the workspace and
/// its git root.
pub fn project_source_dirs() -> impl Iterator<Item = &'static str> {
    std::iter::once(".evoflux").chain(PROJECT_SKILL_ROOTS.iter().map(|(sub, _)| *sub))
}

/// Where Claude Code keeps subagents, in a project and in the home.
const CLAUDE_AGENTS: &str = ".claude/agents";

/// Limits that keep a pathological tree from stalling discovery.
const MAX_DEPTH: usize = 8;
const MAX_FILES_PER_ROOT: usize = 20_000;

/// The directories from `start` up to the nearest enclosing git root
/// (inclusive), nearest first. Without a git root, just `start`.
pub fn dirs_to_git_root(start: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut cur = Some(start);
    while let Some(dir) = cur {
        out.push(dir.to_path_buf());
        if dir.join(".git").exists() {
            return out;
        }
        cur = dir.parent();
    }
    vec![start.to_path_buf()]
}

/// The standard roots in discovery order within each layer.
pub fn standard_roots(opts: &RootOptions) -> Vec<Root> {
    let mut roots = Vec::new();
    for p in &opts.plugins {
        let layer = if p.bundled {
            Layer::BundledPlugin
        } else {
            Layer::Plugin
        };
        roots.push(Root {
            layer,
            dir: p.dir.join("skills"),
            shape: RootShape::Listed(p.skills.clone()),
            owner: Owner::Plugin {
                installation: p.installation.clone(),
                name: p.name.clone(),
            },
            label: format!("{}:{}", p.name, p.installation),
            trust: Trust::Trusted,
        });
    }
    let app = |root: AppRoot, folder: AppFolder, dir: &Path| Owner::Application {
        root,
        folder,
        path: dir.to_path_buf(),
    };
    if let Some(dir) = &opts.admin_dir {
        roots.push(Root {
            layer: Layer::Admin,
            dir: dir.clone(),
            shape: RootShape::Full,
            owner: app(AppRoot::Admin, AppFolder::Evoflux, dir),
            label: "admin".into(),
            trust: Trust::Trusted,
        });
    }
    if let Some(dir) = &opts.user_config_dir {
        roots.push(Root {
            layer: Layer::User,
            dir: dir.clone(),
            shape: RootShape::Full,
            owner: app(AppRoot::User, AppFolder::Evoflux, dir),
            label: "user".into(),
            trust: Trust::Trusted,
        });
    }
    if let Some(home) = &opts.home {
        for (rel, folder) in USER_SKILL_ROOTS {
            let dir = home.join(rel);
            roots.push(Root {
                layer: Layer::User,
                owner: app(AppRoot::User, folder, &dir),
                dir,
                shape: RootShape::Skills,
                label: format!("~/{rel}"),
                trust: Trust::Trusted,
            });
        }
    }
    if let Some(home) = &opts.home {
        let dir = home.join(CLAUDE_AGENTS);
        roots.push(Root {
            layer: Layer::User,
            owner: app(AppRoot::User, AppFolder::Claude, &dir),
            dir,
            shape: RootShape::ClaudeAgents,
            label: format!("~/{CLAUDE_AGENTS}"),
            trust: Trust::Trusted,
        });
    }
    let reads = |h: ForeignMcp| opts.foreign_mcp.contains(&h);
    let chains: Vec<Vec<PathBuf>> = opts
        .workspaces
        .iter()
        .map(|ws| dirs_to_git_root(ws))
        .collect();
    if let Some(home) = &opts.home {
        let mut user_file = |rel: &str, folder, scopes: Vec<McpFormat>| {
            let file = home.join(rel);
            roots.push(Root {
                layer: Layer::User,
                owner: app(AppRoot::User, folder, &file),
                dir: file
                    .parent()
                    .map_or_else(|| home.clone(), Path::to_path_buf),
                shape: RootShape::McpFile { file, scopes },
                label: format!("~/{rel}"),
                trust: Trust::Trusted,
            });
        };
        if reads(ForeignMcp::ClaudeCode) {
            // The servers Claude Code keeps for the workspace's directories
            // come before its user-wide ones, as they do in Claude Code.
            let mut scopes: Vec<McpFormat> = Vec::new();
            for chain in &chains {
                for dir in chain {
                    let project = McpFormat::ClaudeLocal {
                        project: dir.display().to_string(),
                    };
                    if !scopes.contains(&project) {
                        scopes.push(project);
                    }
                }
            }
            scopes.push(McpFormat::ClaudeUser);
            user_file(".claude.json", AppFolder::Claude, scopes);
        }
        if reads(ForeignMcp::Codex) {
            user_file(
                ".codex/config.toml",
                AppFolder::Codex,
                vec![McpFormat::Codex],
            );
        }
        if reads(ForeignMcp::Cursor) {
            user_file(
                ".cursor/mcp.json",
                AppFolder::Cursor,
                vec![McpFormat::CursorUser],
            );
        }
        if reads(ForeignMcp::Opencode) {
            user_file(
                ".config/opencode/opencode.json",
                AppFolder::Opencode,
                vec![McpFormat::OpencodeUser],
            );
        }
    }
    let project_files = [
        (".mcp.json", AppFolder::Claude, McpFormat::ClaudeProject),
        (".vscode/mcp.json", AppFolder::Vscode, McpFormat::Vscode),
        (
            ".cursor/mcp.json",
            AppFolder::Cursor,
            McpFormat::CursorProject,
        ),
        (
            "opencode.json",
            AppFolder::Opencode,
            McpFormat::OpencodeProject,
        ),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for ws in &opts.workspaces {
        let chain = dirs_to_git_root(ws);
        let repo = evoflux_core::trust::repository_root(ws);
        let trust = if opts.trusted.contains(&repo) {
            Trust::Trusted
        } else {
            Trust::Untrusted
        };
        let repo_name = repo
            .file_name()
            .map_or_else(|| "repo".to_owned(), |n| n.to_string_lossy().into_owned());
        for dir in &chain {
            let rel = dir
                .strip_prefix(&repo)
                .ok()
                .map(|r| r.to_string_lossy().into_owned())
                .filter(|r| !r.is_empty());
            let base = match &rel {
                Some(r) => format!("{repo_name}/{r}"),
                None => repo_name.clone(),
            };
            let mut push = |sub: &str, folder, shape| {
                let d = dir.join(sub);
                if seen.insert(d.clone()) {
                    roots.push(Root {
                        layer: Layer::Project,
                        owner: app(AppRoot::Project, folder, &d),
                        dir: d,
                        shape,
                        label: format!("{base}/{sub}"),
                        trust,
                    });
                }
            };
            push(".evoflux", AppFolder::Evoflux, RootShape::Full);
            for (sub, folder) in PROJECT_SKILL_ROOTS {
                push(sub, folder, RootShape::Skills);
            }
            // Claude Code subagents are prompts with tools: read only from
            // a repository the user trusts.
            if trust == Trust::Trusted {
                push(CLAUDE_AGENTS, AppFolder::Claude, RootShape::ClaudeAgents);
            }
            for (rel, folder, format) in &project_files {
                let file = dir.join(rel);
                if format.harness().is_some_and(reads) && seen.insert(file.clone()) {
                    roots.push(Root {
                        layer: Layer::Project,
                        owner: app(AppRoot::Project, *folder, &file),
                        dir: file.parent().map_or_else(|| dir.clone(), Path::to_path_buf),
                        shape: RootShape::McpFile {
                            file,
                            scopes: vec![format.clone()],
                        },
                        label: format!("{base}/{rel}"),
                        trust,
                    });
                }
            }
        }
    }
    roots
}

/// Discovery output.
#[derive(Debug, Default)]
pub struct Discovered {
    pub candidates: Vec<Candidate>,
    /// The entries of files that hold several slots (`mcp.json` and other
    /// harnesses' server files), by candidate: discovery has to read them
    /// to know the names, so each file is read and parsed once, and only
    /// a winner's entry is checked.
    pub entries: EntryValues,
}

/// The raw entry of each file-entry candidate.
pub type EntryValues = BTreeMap<SourceId, serde_json::Value>;

struct Sink<'a> {
    out: &'a mut Vec<Candidate>,
    entries: &'a mut EntryValues,
    diags: &'a mut Diagnostics,
}

impl Sink<'_> {
    fn push(&mut self, root: &Root, slot: Slot, logical_path: String, backing: Backing) {
        let source_id = SourceId(format!("{}:{}:{}", root.layer, root.label, logical_path));
        self.push_as(root, slot, logical_path, backing, Form::Direct, source_id);
    }

    /// One server entry of an MCP file as the `connections/<name>`
    /// candidate, its raw value kept for the winner. Another harness's
    /// entry is derived, so evoflux's own file wins in the same layer.
    fn push_entry(
        &mut self,
        root: &Root,
        name: String,
        file: &Path,
        entry: String,
        format: McpFormat,
        value: serde_json::Value,
    ) {
        let logical_path = format!("mcp.json#{name}");
        let source_id = SourceId(format!(
            "{}:{}{}:{logical_path}",
            root.layer,
            root.label,
            format.scope_label()
        ));
        let form = match format.harness() {
            None => Form::Direct,
            Some(_) => Form::Derived,
        };
        self.entries.insert(source_id.clone(), value);
        self.push_as(
            root,
            Slot::new(SlotKind::Connection, name),
            logical_path,
            Backing::FileEntry {
                path: file.to_path_buf(),
                entry,
                format,
            },
            form,
            source_id,
        );
    }

    /// One `[agents.external.<name>]` table of a `config.toml` as the
    /// `remote-agents/<name>` candidate, its table kept for the winner.
    fn push_remote_agent(
        &mut self,
        root: &Root,
        name: String,
        file: &Path,
        value: serde_json::Value,
    ) {
        let logical_path = format!("{REMOTE_AGENT_PREFIX}{name}");
        let source_id = SourceId(format!("{}:{}:{logical_path}", root.layer, root.label));
        self.entries.insert(source_id.clone(), value);
        self.push_as(
            root,
            Slot::new(SlotKind::RemoteAgent, name.clone()),
            logical_path,
            Backing::FileEntry {
                path: file.to_path_buf(),
                entry: name,
                format: McpFormat::Evoflux,
            },
            Form::Direct,
            source_id,
        );
    }

    fn push_as(
        &mut self,
        root: &Root,
        slot: Slot,
        logical_path: String,
        backing: Backing,
        form: Form,
        source_id: SourceId,
    ) {
        let order = u32::try_from(self.out.len()).unwrap_or(u32::MAX);
        self.out.push(Candidate {
            source_id,
            slot,
            logical_path,
            layer: root.layer,
            form,
            owner: root.owner.clone(),
            backing,
            order,
            trust: root.trust,
        });
    }
}

/// Turns the framework registries and the roots into candidates.
pub fn discover(
    registries: &[BuiltinRegistry],
    roots: &[Root],
    diags: &mut Diagnostics,
) -> Discovered {
    let mut out = Vec::new();
    let mut entries = EntryValues::new();
    for registry in registries {
        for module in &registry.modules {
            let Some(slot) = slot_of_logical_path(&module.logical_path) else {
                diags.push(Diagnostic::error(
                    "discover/builtin-path-invalid",
                    format!(
                        "framework module `{}` of `{}` does not name a slot",
                        module.logical_path, registry.id
                    ),
                ));
                continue;
            };
            let order = u32::try_from(out.len()).unwrap_or(u32::MAX);
            out.push(Candidate {
                slot,
                logical_path: module.logical_path.clone(),
                layer: Layer::Framework,
                form: Form::Direct,
                owner: Owner::Framework {
                    feature: module.feature.to_owned(),
                },
                source_id: SourceId(format!("{}:{}", registry.id, module.logical_path)),
                backing: Backing::Builtin {
                    registry: registry.id.clone(),
                    module: module.logical_path.clone(),
                },
                order,
                trust: Trust::Trusted,
            });
        }
    }
    let mut sink = Sink {
        out: &mut out,
        entries: &mut entries,
        diags,
    };
    for root in roots {
        if !root.dir.is_dir() {
            continue;
        }
        match &root.shape {
            RootShape::Full => discover_full(root, &mut sink),
            RootShape::Skills => discover_skill_root(root, &root.dir, "skills", &mut sink),
            RootShape::Listed(skills) => discover_listed(root, skills, "skills", &mut sink),
            RootShape::McpFile { file, scopes } => discover_mcp_file(root, file, scopes, &mut sink),
            RootShape::ClaudeAgents => discover_claude_agents(root, &mut sink),
        }
    }
    Discovered {
        candidates: out,
        entries,
    }
}

/// The logical path of a remote agent's table before its name: the entry
/// `agents.external.<name>` of `config.toml`.
const REMOTE_AGENT_PREFIX: &str = "config.toml#agents.external.";

/// The canonical slot of a logical path, including `mcp.json#<entry>` and
/// `config.toml#agents.external.<name>`.
pub fn slot_of_logical_path(logical_path: &str) -> Option<Slot> {
    if let Some(name) = logical_path.strip_prefix("mcp.json#") {
        return slot::is_valid_connection_name(name).then(|| Slot::new(SlotKind::Connection, name));
    }
    if let Some(name) = logical_path.strip_prefix(REMOTE_AGENT_PREFIX) {
        return evoflux_core::external_agent::is_agent_name(name)
            .then(|| Slot::new(SlotKind::RemoteAgent, name));
    }
    match slot::classify(logical_path) {
        PathClass::Slot { slot, .. } => Some(slot),
        PathClass::McpServers
        | PathClass::SkillResource
        | PathClass::EvalResource
        | PathClass::RunArtifact
        | PathClass::InvalidName { .. }
        | PathClass::Unsupported => None,
    }
}

fn sorted_entries(dir: &Path, sink: &mut Sink<'_>) -> Vec<(String, PathBuf, bool)> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            sink.diags.push(
                Diagnostic::warning(
                    "discover/root-unreadable",
                    format!("cannot list directory: {e}"),
                )
                .with_file(dir),
            );
            return Vec::new();
        }
    };
    let mut entries: Vec<(String, PathBuf, bool)> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_str()?.to_owned();
            // Hidden files (editor swap files, .DS_Store) are not definitions.
            if name.starts_with('.') {
                return None;
            }
            let path = e.path();
            let file_type = e.file_type().ok()?;
            // Follows symlinks (linked bundles and files are readable);
            // only they cost an extra stat.
            let is_dir = if file_type.is_symlink() {
                std::fs::metadata(&path).map(|m| m.is_dir()).ok()?
            } else {
                file_type.is_dir()
            };
            Some((name, path, is_dir))
        })
        .collect();
    entries.sort();
    entries
}

fn discover_full(root: &Root, sink: &mut Sink<'_>) {
    let mut files = Vec::new();
    let mut truncated = false;
    walk(root, &root.dir, "", 0, &mut files, &mut truncated, sink);
    if truncated {
        sink.diags.push(
            Diagnostic::warning(
                "discover/walk-limit",
                format!(
                    "stopped after {MAX_FILES_PER_ROOT} files or {MAX_DEPTH} levels; move unrelated \
                     files out of this root"
                ),
            )
            .with_file(&root.dir),
        );
    }
    // (directory, slot) -> first file, to catch two formats of one stem.
    let mut seen: BTreeMap<(String, Slot), PathBuf> = BTreeMap::new();
    for (rel, path) in files {
        match slot::classify(&rel) {
            PathClass::Slot { slot, format } => {
                let dir = rel.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
                if let Some(first) = seen.get(&(dir.clone(), slot.clone())) {
                    sink.diags.push(
                        Diagnostic::error(
                            "discover/slot-collision",
                            format!(
                                "`{}` and `{}` both define `{slot}`; keep one",
                                first.display(),
                                path.display()
                            ),
                        )
                        .with_file(&path)
                        .with_slot(slot.clone()),
                    );
                    continue;
                }
                seen.insert((dir, slot.clone()), path.clone());
                let remote_agents = slot.kind == SlotKind::Config;
                sink.push(
                    root,
                    slot,
                    rel,
                    Backing::File {
                        path: path.clone(),
                        format,
                    },
                );
                if remote_agents {
                    discover_remote_agents(root, &path, sink);
                }
            }
            PathClass::McpServers => discover_mcp(root, &path, sink),
            PathClass::SkillResource | PathClass::EvalResource | PathClass::RunArtifact => {}
            PathClass::InvalidName { code, message } => {
                sink.diags
                    .push(Diagnostic::error(code, message).with_file(&path));
            }
            PathClass::Unsupported => sink.diags.push(
                Diagnostic::warning(
                    "discover/unsupported-file",
                    format!("`{rel}` fits no slot and is ignored"),
                )
                .with_file(&path),
            ),
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn walk(
    root: &Root,
    dir: &Path,
    prefix: &str,
    depth: usize,
    files: &mut Vec<(String, PathBuf)>,
    truncated: &mut bool,
    sink: &mut Sink<'_>,
) {
    if depth > MAX_DEPTH {
        *truncated = true;
        return;
    }
    for (name, path, is_dir) in sorted_entries(dir, sink) {
        if files.len() >= MAX_FILES_PER_ROOT {
            *truncated = true;
            return;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if is_dir {
            if rel == "skills" {
                // Bundles are discovered as units; their resources are not
                // walked.
                discover_skill_root(root, &path, "skills", sink);
            } else {
                walk(root, &path, &rel, depth + 1, files, truncated, sink);
            }
        } else {
            files.push((rel, path));
        }
    }
}

/// Each immediate `<name>.md` of a Claude agents folder as the Coding
/// agent slot `agents/coding/<name>.md` (other files are Claude's own and
/// are left alone); the slot's rules (name, format) are the graph's.
fn discover_claude_agents(root: &Root, sink: &mut Sink<'_>) {
    for (name, path, is_dir) in sorted_entries(&root.dir, sink) {
        if is_dir || !name.ends_with(".md") {
            continue;
        }
        let rel = format!("agents/coding/{name}");
        match slot::classify(&rel) {
            PathClass::Slot { slot, format } => {
                let source_id = SourceId(format!("{}:{}:{rel}", root.layer, root.label));
                sink.push_as(
                    root,
                    slot,
                    rel,
                    Backing::File { path, format },
                    Form::Derived,
                    source_id,
                );
            }
            PathClass::InvalidName { code, message } => {
                sink.diags
                    .push(Diagnostic::error(code, message).with_file(&path));
            }
            PathClass::McpServers
            | PathClass::SkillResource
            | PathClass::EvalResource
            | PathClass::RunArtifact
            | PathClass::Unsupported => {}
        }
    }
}

fn discover_skill_root(root: &Root, dir: &Path, prefix: &str, sink: &mut Sink<'_>) {
    let scan = crate::skill_root::scan_root(dir, crate::skill_root::WalkLimits::default());
    sink.diags.extend(scan.diagnostics);
    for bundle in scan.bundles {
        let name = bundle.segments.join("/");
        let rel = format!("{prefix}/{name}/SKILL.md");
        sink.push(
            root,
            Slot::new(SlotKind::Skill, name),
            rel,
            Backing::File {
                path: bundle.dir.join(crate::skill_root::SKILL_FILE),
                format: FileFormat::Markdown,
            },
        );
    }
}

fn discover_listed(root: &Root, skills: &[ListedSkill], prefix: &str, sink: &mut Sink<'_>) {
    for skill in skills {
        sink.push(
            root,
            Slot::new(SlotKind::Skill, skill.name.clone()),
            format!("{prefix}/{}/SKILL.md", skill.name),
            Backing::File {
                path: skill.dir.join(crate::skill_root::SKILL_FILE),
                format: FileFormat::Markdown,
            },
        );
    }
}

fn discover_mcp(root: &Root, path: &Path, sink: &mut Sink<'_>) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            sink.diags.push(
                Diagnostic::error(
                    "discover/mcp-json-invalid",
                    format!("cannot read mcp.json: {e}"),
                )
                .with_file(path),
            );
            return;
        }
    };
    let entries = match connection::entries(path, &text) {
        Ok(e) => e,
        Err(d) => {
            sink.diags.push(d);
            return;
        }
    };
    for (name, value) in entries {
        if !slot::is_valid_connection_name(&name) {
            sink.diags.push(
                Diagnostic::error(
                    "discover/connection-name-invalid",
                    format!(
                        "server name `{name}` must start with a lowercase letter and use only \
                         lowercase letters, digits and `-` (at most 64 characters)"
                    ),
                )
                .with_file(path)
                .with_field(format!("mcpServers.{name}")),
            );
            continue;
        }
        sink.push_entry(root, name.clone(), path, name, McpFormat::Evoflux, value);
    }
}

/// Each `[agents.external.<name>]` table of the `config.toml` at `path`
/// as the candidate `remote-agents/<name>`. A file that cannot be read or
/// is not TOML yields none: the config slot reports it, once.
fn discover_remote_agents(root: &Root, path: &Path, sink: &mut Sink<'_>) {
    let Ok(bytes) = evoflux_core::source::read_source(path) else {
        return;
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return;
    };
    let Some(entries) = evoflux_core::external_agent::entries(&text) else {
        return;
    };
    for (name, value) in entries {
        if !evoflux_core::external_agent::is_agent_name(&name) {
            sink.diags
                .push(evoflux_core::external_agent::name_diagnostic(path, &name));
            continue;
        }
        sink.push_remote_agent(root, name, path, value);
    }
}

/// The entries of another harness's MCP server file that `scopes` name,
/// as derived candidates: evoflux's own `mcp.json` in the same layer wins
/// over them. A missing file is nothing to report; a broken one is a
/// warning (it belongs to another tool), and so is a name evoflux cannot
/// use. A name evoflux writes differently (`brave_search`) takes
/// evoflux's form, and says so.
fn discover_mcp_file(root: &Root, file: &Path, scopes: &[McpFormat], sink: &mut Sink<'_>) {
    let Some(first) = scopes.first() else { return };
    let text = match evoflux_core::source::read_source_up_to(file, first.max_bytes()) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(_) => {
                sink.diags.push(
                    Diagnostic::warning(
                        "discover/foreign-mcp-invalid",
                        "this MCP server file of another tool is not read: it is not UTF-8",
                    )
                    .with_file(file),
                );
                return;
            }
        },
        Err(evoflux_core::source::SourceReadError::Io(e))
            if e.kind() == std::io::ErrorKind::NotFound =>
        {
            return;
        }
        Err(e) => {
            sink.diags.push(
                Diagnostic::warning(
                    "discover/foreign-mcp-invalid",
                    format!("this MCP server file of another tool is not read: {e}"),
                )
                .with_file(file),
            );
            return;
        }
    };
    let entries = match mcp_format::file_entries(first, file, &text) {
        Ok(entries) => entries,
        Err(d) => {
            sink.diags.push(d);
            return;
        }
    };
    for entry in entries.into_iter().filter(|e| scopes.contains(&e.format)) {
        let field = entry.format.field(&entry.name);
        let name = if slot::is_valid_connection_name(&entry.name) {
            entry.name.clone()
        } else if let Some(name) = mcp_format::connection_name(&entry.name) {
            sink.diags.push(
                Diagnostic::info(
                    "discover/foreign-name-renamed",
                    format!(
                        "server `{}` is `{name}` in evoflux, whose server names are lowercase \
                         with `-`",
                        entry.name
                    ),
                )
                .with_file(file)
                .with_field(field),
            );
            name
        } else {
            sink.diags.push(
                Diagnostic::warning(
                    "discover/foreign-name-invalid",
                    format!(
                        "server `{}` is not read: evoflux's server names start with a letter \
                         and use lowercase letters, digits and `-`; define it in evoflux's \
                         mcp.json under such a name",
                        entry.name
                    ),
                )
                .with_file(file)
                .with_field(field),
            );
            continue;
        };
        sink.push_entry(root, name, file, entry.name, entry.format, entry.value);
    }
}
