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
//! what runs are the same bytes' identity.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use evoflux_core::config::ConfigOrigin;
use evoflux_core::hash::{content_hash, sha256_hex};
use evoflux_core::trust::{CHANGED_SINCE_TRUST, Grant, GrantStatus, Trust, grant_status};
use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::Serialize;

use crate::candidate::{Backing, Candidate, SourceId};
use crate::channel::RouteAction;
use crate::compose::{CompositionEntry, Definition};
use crate::connection::ConnectionDefinition;
use crate::discover::EntryValues;
use crate::graph::CompiledGraph;
use crate::layer::Layer;
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
}

/// The slot and repository-relative source of a candidate of `repository`
/// whose meaning trust changes; `None` for any other candidate.
fn grant_key(c: &Candidate, repository: &Path) -> Option<(String, String)> {
    if c.layer != Layer::Project || !c.slot.kind.granted_by_trust() {
        return None;
    }
    let (path, entry) = match &c.backing {
        Backing::Builtin { .. } => return None,
        Backing::File { path, .. } => (path, None),
        Backing::FileEntry { path, entry, .. } => (path, Some(entry)),
    };
    let relative = path.strip_prefix(repository).ok()?;
    let mut source = relative
        .components()
        .map(|part| part.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    if let Some(entry) = entry {
        source.push('#');
        source.push_str(entry);
    }
    Some((c.slot.to_string(), source))
}

/// The content hash the composer binds for `c`: the file's SHA-256, or
/// the entry's content hash; `None` when it cannot be read.
fn content_sha(c: &Candidate, entries: &EntryValues) -> Option<String> {
    match &c.backing {
        Backing::Builtin { .. } => None,
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
            && let Some(sha256) = content_sha(c, entries)
        {
            out.reviewed.push(GrantedSource {
                source_id: c.source_id.clone(),
                file: file.clone(),
                grant: Grant {
                    slot,
                    source,
                    sha256,
                },
            });
        }
        let Some((repo, granted)) = trust.enforced_for(&file) else {
            continue;
        };
        let Some((slot, source)) = grant_key(c, repo) else {
            continue;
        };
        let status = match content_sha(c, entries) {
            Some(sha256) => grant_status(
                granted,
                &Grant {
                    slot,
                    source: source.clone(),
                    sha256,
                },
            ),
            // Unreadable now: nothing says it is what was granted.
            None => GrantStatus::Changed,
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
        diags.push(
            Diagnostic::warning(
                CHANGED_SINCE_TRUST,
                format!(
                    "`{}` ({source}) {what} since you trusted {}: {waits} until you trust the \
                     repository again (evoflux trust), which lists what it runs",
                    c.slot,
                    repo.display()
                ),
            )
            .with_slot(c.slot.to_string())
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
        #[serde(skip_serializing_if = "Option::is_none")]
        url: Option<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        env: Vec<String>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        headers: Vec<String>,
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
            runs: runs(graph, &g.source_id),
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
                url: None,
                env: env.keys().cloned().collect(),
                headers: Vec::new(),
            },
            ConnectionDefinition::StreamableHttp { url, headers } => Runs::McpServer {
                transport: "streamable-http",
                command: Vec::new(),
                url: Some(url.clone()),
                env: Vec::new(),
                headers: headers.keys().cloned().collect(),
            },
            ConnectionDefinition::Sse { url, headers } => Runs::McpServer {
                transport: "sse",
                command: Vec::new(),
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
            .filter_map(|d| d.locator.slot.clone())
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
        assert_eq!(errors[0].locator.slot.as_deref(), Some("tools/leak"));
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
