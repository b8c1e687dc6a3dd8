//! What trusting a repository grants, shown before it is granted: every
//! source of the repository whose meaning trust changes (command tools with
//! their argv, MCP servers with their command or URL, channels, schedules,
//! check commands, evals, the providers of its config, its sandbox), read
//! from a compile of the source graph that treats the repository as
//! trusted, with what each source's grant records. `evoflux trust` lists a
//! review and asks; [`AppContext::grant`] records exactly what was listed.
//! A front end that asks later than it lists (the web UI) holds the
//! review's [`TrustReview::identity`] and grants through
//! [`AppContext::grant_reviewed`], which refuses a repository that changed
//! in between. [`describe`] is the one wording of what a source does, for
//! every front end.

use std::path::{Path, PathBuf};

use evoflux_core::trust::{Grant, TrustedRepository};
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::grants::TrustGrants;
use serde::Serialize;

use crate::{AppContext, SessionError};

/// One source of a [`TrustReview`], and what it runs once trusted.
pub use evoflux_graph::grants::{ReviewItem, Runs};

/// A repository as trusting it would let it act.
#[derive(Debug, Clone, Serialize)]
pub struct TrustReview {
    /// The repository root (canonical).
    pub repository: PathBuf,
    /// Its `origin` remote, recorded with the trust.
    pub remote: Option<String>,
    /// Every source trust grants, in discovery order.
    pub items: Vec<ReviewItem>,
    /// What is wrong with those sources: each one with errors does not
    /// run, and an MCP server that refers to a key variable is never
    /// started (`mcp/project-secret-expansion`).
    pub diagnostics: Diagnostics,
    /// Whether the repository is trusted now (its items' `status` is then
    /// against what it was granted).
    pub trusted: bool,
    /// What recording this review grants.
    #[serde(skip)]
    pub grants: Vec<Grant>,
}

impl TrustReview {
    /// Whether trusting it grants anything that was not granted before.
    pub fn grants_anything_new(&self) -> bool {
        self.items
            .iter()
            .any(|i| i.status != evoflux_core::trust::GrantStatus::Granted)
    }

    /// What this review would grant, as one hash: the repository, its
    /// remote and every grant (slot, file, content hash). A front end that
    /// shows a review and grants it later (the web UI) sends this back;
    /// [`AppContext::grant_reviewed`] refuses when the repository no longer
    /// reviews to the same identity, so what is granted is what was shown.
    pub fn identity(&self) -> String {
        let mut grants: Vec<&Grant> = self.grants.iter().collect();
        grants.sort();
        // Each part length-prefixed, so no two reviews share a text.
        let mut text = String::new();
        let mut part = |s: &str| {
            text.push_str(&s.len().to_string());
            text.push(':');
            text.push_str(s);
        };
        part(&self.repository.to_string_lossy());
        part(self.remote.as_deref().unwrap_or(""));
        for g in grants {
            part(&g.slot);
            part(&g.source);
            part(&g.sha256);
        }
        evoflux_core::hash::sha256_hex(text.as_bytes()).to_string()
    }

    /// Its items grouped by what they do (command tools, MCP servers,
    /// channels, …), each with the line `evoflux trust` shows for it;
    /// items keep their discovery order within a group.
    pub fn groups(&self) -> Vec<ShownGroup> {
        let mut groups: Vec<ShownGroup> = Vec::new();
        for item in &self.items {
            let group = ReviewGroup::of(&item.runs);
            let shown = ShownItem {
                text: describe(item),
                item: item.clone(),
            };
            match groups.iter_mut().find(|g| g.group == group) {
                Some(g) => g.items.push(shown),
                None => groups.push(ShownGroup {
                    group,
                    heading: group.heading(),
                    items: vec![shown],
                }),
            }
        }
        groups.sort_by_key(|g| g.group);
        groups
    }
}

/// What a reviewed source does, for listing a review by kind. Closed:
/// every [`Runs`] is in one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewGroup {
    CommandTools,
    McpServers,
    RemoteAgents,
    Channels,
    Schedules,
    CheckCommands,
    Evals,
    Config,
    Sandbox,
    Disables,
    NotUsed,
    WithErrors,
}

impl ReviewGroup {
    pub const fn of(runs: &Runs) -> ReviewGroup {
        match runs {
            Runs::CommandTool { .. } => ReviewGroup::CommandTools,
            Runs::McpServer { .. } => ReviewGroup::McpServers,
            Runs::RemoteAgent { .. } => ReviewGroup::RemoteAgents,
            Runs::Channel { .. } => ReviewGroup::Channels,
            Runs::Schedule { .. } => ReviewGroup::Schedules,
            Runs::CheckCommands { .. } => ReviewGroup::CheckCommands,
            Runs::Eval { .. } => ReviewGroup::Evals,
            Runs::Config { .. } => ReviewGroup::Config,
            Runs::Sandbox { .. } => ReviewGroup::Sandbox,
            Runs::Disables => ReviewGroup::Disables,
            Runs::Shadowed { .. } | Runs::Layered { .. } => ReviewGroup::NotUsed,
            Runs::Invalid => ReviewGroup::WithErrors,
        }
    }

    pub const fn heading(self) -> &'static str {
        match self {
            ReviewGroup::CommandTools => "Command tools",
            ReviewGroup::McpServers => "MCP servers",
            ReviewGroup::RemoteAgents => "Remote agents",
            ReviewGroup::Channels => "Channels",
            ReviewGroup::Schedules => "Schedules",
            ReviewGroup::CheckCommands => "Check commands",
            ReviewGroup::Evals => "Evals",
            ReviewGroup::Config => "Config and providers",
            ReviewGroup::Sandbox => "Sandbox",
            ReviewGroup::Disables => "Turned off",
            ReviewGroup::NotUsed => "Not used on their own",
            ReviewGroup::WithErrors => "With errors (they do not run)",
        }
    }
}

/// One group of a review as a front end lists it.
#[derive(Debug, Clone, Serialize)]
pub struct ShownGroup {
    pub group: ReviewGroup,
    pub heading: &'static str,
    pub items: Vec<ShownItem>,
}

/// One reviewed source with the line `evoflux trust` shows for it.
#[derive(Debug, Clone, Serialize)]
pub struct ShownItem {
    /// What it lets the repository do (`run the command tool `deploy`: …`).
    pub text: String,
    #[serde(flatten)]
    pub item: ReviewItem,
}

/// The line `evoflux trust` shows for one reviewed source: what trusting
/// it lets the repository do.
pub fn describe(item: &ReviewItem) -> String {
    let name = item
        .slot
        .split_once('/')
        .map_or(item.slot.as_str(), |(_, n)| n);
    match &item.runs {
        Runs::CommandTool { argv, env } => format!(
            "run the command tool `{name}`: {}{}",
            argv.join(" "),
            names(" (given ", env, ")")
        ),
        Runs::McpServer {
            transport,
            command,
            files,
            url,
            env,
            headers,
        } => {
            let what = url.clone().unwrap_or_else(|| command.join(" "));
            format!(
                "start the MCP server `{name}` ({transport}): {what}{}{}{}",
                names(" (env ", env, ")"),
                names(" (headers ", headers, ")"),
                names(
                    " (outside the sandbox; its files as they are now: ",
                    files,
                    ")"
                )
            )
        }
        Runs::RemoteAgent { command, env, cwd } => format!(
            "start the remote agent `{name}` over ACP (in a {cwd} folder): {}{}",
            command.join(" "),
            names(" (env ", env, ")")
        ),
        Runs::Channel { routes } => {
            format!(
                "answer HTTP requests (channel `{name}`): {}",
                routes.join(", ")
            )
        }
        Runs::Schedule {
            trigger,
            mode,
            prompt,
        } => format!(
            "start {mode} sessions on a schedule (`{name}`, {trigger}): {}",
            first_line(prompt)
        ),
        Runs::CheckCommands { commands } => format!(
            "run check commands (verify): {}",
            if commands.is_empty() {
                "none".to_owned()
            } else {
                commands.join("; ")
            }
        ),
        Runs::Eval { prompt } => format!(
            "run the eval `{name}` with a model and tools: {}",
            first_line(prompt)
        ),
        Runs::Config { providers } if providers.is_empty() => {
            "set its config (no providers)".to_owned()
        }
        Runs::Config { providers } => format!(
            "define providers: {}",
            providers
                .iter()
                .map(|p| format!(
                    "{} ({}{})",
                    p.name,
                    p.kind.as_str(),
                    p.base_url
                        .as_deref()
                        .map(|u| format!(", {u}"))
                        .unwrap_or_default()
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Runs::Sandbox { writable_roots } if writable_roots.is_empty() => {
            "set its sandbox (tighten only)".to_owned()
        }
        Runs::Sandbox { writable_roots } => format!(
            "let commands write, besides the workspace: {}",
            writable_roots
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Runs::Disables => format!("turn off `{}`", item.slot),
        Runs::Shadowed { by } => format!("`{}`: not used, {by} wins its slot", item.slot),
        Runs::Layered { .. } => format!("add to its `{}` (layered)", item.slot),
        Runs::Invalid => format!(
            "`{}`: has errors (listed above) and does not run",
            item.slot
        ),
    }
}

fn names(before: &str, names: &[String], after: &str) -> String {
    if names.is_empty() {
        String::new()
    } else {
        format!("{before}{}{after}", names.join(", "))
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(100) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_owned(),
    }
}

impl AppContext {
    /// What trusting the repository that holds `dir` (a canonical
    /// directory) would let it do now: its sources a session in `dir` reads
    /// (from `dir` up to the repository root).
    pub fn trust_review(&self, dir: &Path) -> Result<TrustReview, SessionError> {
        let repository = &evoflux_core::trust::repository_root(dir);
        let mut opts = self.root_options(&[dir.to_path_buf()])?;
        if !opts.trusted.iter().any(|r| r == repository) {
            opts.trusted.push(repository.to_path_buf());
        }
        // Every other trusted repository stays held to its grants; this one
        // is compiled as it is, to be reviewed.
        let others: Vec<PathBuf> = opts
            .trusted
            .iter()
            .filter(|r| *r != repository)
            .cloned()
            .collect();
        let mut trust = self.trust_grants(&others)?;
        trust.review(repository.to_path_buf());
        let (graph, reviewed) = compile(&opts, &trust)?;
        let list = self.trust_list()?;
        let previous = list.granted(repository);
        let mut items = evoflux_graph::grants::review(&graph, &reviewed, previous);
        fill_check_commands(&graph, &mut items);
        let in_repository = |d: &Diagnostic| {
            d.locator
                .file
                .as_deref()
                .is_some_and(|f| f.starts_with(repository))
        };
        let mut diagnostics: Diagnostics = graph
            .diagnostics
            .iter()
            .filter(|d| d.severity != evoflux_core::Severity::Info && in_repository(d))
            .cloned()
            .collect();
        diagnostics.extend(
            evoflux_mcp::definitions_from_graph(&graph)
                .iter()
                .flat_map(evoflux_mcp::definition_diagnostics)
                .filter(in_repository),
        );
        Ok(TrustReview {
            repository: repository.to_path_buf(),
            remote: evoflux_core::trust::git_remote(repository),
            items,
            diagnostics,
            trusted: previous.is_some(),
            grants: reviewed.into_iter().map(|g| g.grant).collect(),
        })
    }

    /// Grants the review of the repository holding `dir` whose
    /// [`TrustReview::identity`] a front end showed: refused with
    /// [`TrustRefusal::Stale`] when the repository reviews differently now
    /// (a source changed, was added or went away since it was shown).
    pub fn grant_reviewed(
        &self,
        dir: &Path,
        shown: &str,
    ) -> Result<Result<TrustedRepository, TrustRefusal>, SessionError> {
        let review = self.trust_review(dir)?;
        if review.identity() != shown {
            return Ok(Err(TrustRefusal::Stale {
                repository: review.repository,
            }));
        }
        self.grant(&review).map(Ok)
    }

    /// Records the user's trust in the reviewed repository, granting
    /// exactly what the review listed. What it granted before, from files
    /// the review did not read (another directory's `.evoflux/`), stays
    /// granted as it was.
    pub fn grant(&self, review: &TrustReview) -> Result<TrustedRepository, SessionError> {
        let mut list = self.trust_list()?;
        let mut granted = review.grants.clone();
        if let Some(before) = list.granted(&review.repository) {
            let kept: Vec<Grant> = before
                .iter()
                .filter(|g| {
                    !review
                        .grants
                        .iter()
                        .any(|n| n.slot == g.slot && n.source == g.source)
                })
                .cloned()
                .collect();
            granted.extend(kept);
        }
        list.trust(&review.repository, granted)
            .cloned()
            .map_err(SessionError::Trust)
    }
}

/// Why a front end's grant was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TrustRefusal {
    #[error(
        "{} changed since its review was shown: nothing was trusted; review it again and \
         trust what it lists now",
        repository.display()
    )]
    Stale { repository: PathBuf },
}

impl TrustRefusal {
    pub const fn code(&self) -> &'static str {
        match self {
            TrustRefusal::Stale { .. } => "trust/review-stale",
        }
    }
}

fn compile(
    opts: &evoflux_graph::RootOptions,
    trust: &TrustGrants,
) -> Result<
    (
        evoflux_graph::CompiledGraph,
        Vec<evoflux_graph::grants::GrantedSource>,
    ),
    SessionError,
> {
    evoflux_graph::compile_with_grants(
        &AppContext::registries(),
        &evoflux_graph::discover::standard_roots(opts),
        trust,
    )
    .map_err(|e| SessionError::Compile(Box::new(e)))
}

/// The check commands of the registry the graph selected, each as its
/// argv, for the item of its file.
fn fill_check_commands(graph: &evoflux_graph::CompiledGraph, items: &mut [ReviewItem]) {
    let evoflux_fleet::RegistryState::Loaded(registry) =
        evoflux_fleet::catalog::command_registry(graph)
    else {
        return;
    };
    for item in items.iter_mut().filter(|i| i.file == registry.path) {
        if let Runs::CheckCommands { commands } = &mut item.runs {
            *commands = registry
                .iter()
                .map(|c| format!("{}: {}", c.id, c.display()))
                .collect();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use evoflux_core::trust::Trust;

    fn tool(app: &AppContext, name: &str, argv: &str) {
        let dir = app.cwd.join(".evoflux/tools");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("{name}.toml")),
            format!(
                "description = \"{name}\"\nargv = [\"{argv}\"]\ninput_schema = {{ type = \"object\" }}\n"
            ),
        )
        .unwrap();
    }

    #[test]
    fn a_review_is_granted_by_its_identity_and_a_changed_repository_is_refused() {
        let (_tmp, app) = crate::testing::setup();
        tool(&app, "deploy", "./deploy.sh");
        let dir = app.cwd.canonicalize().unwrap();
        let shown = app.trust_review(&dir).unwrap();
        // The same repository reviews to the same identity.
        assert_eq!(shown.identity(), app.trust_review(&dir).unwrap().identity());
        let groups = shown.groups();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].group, ReviewGroup::CommandTools);
        assert_eq!(
            groups[0].items[0].text,
            "run the command tool `deploy`: ./deploy.sh"
        );

        // Changed after it was shown: refused, nothing recorded.
        tool(&app, "deploy", "./deploy-elsewhere.sh");
        let refused = app.grant_reviewed(&dir, &shown.identity()).unwrap();
        assert_eq!(
            refused.map(|_| ()).map_err(|r| r.code()),
            Err("trust/review-stale")
        );
        let repo = evoflux_core::trust::repository_root(&dir);
        assert_eq!(
            app.trust_list().unwrap().state(&repo).trust(),
            Trust::Untrusted
        );

        // What is shown now is granted, and revoked.
        let now = app.trust_review(&dir).unwrap();
        assert_ne!(now.identity(), shown.identity());
        app.grant_reviewed(&dir, &now.identity()).unwrap().unwrap();
        assert_eq!(
            app.trust_list().unwrap().state(&repo).trust(),
            Trust::Trusted
        );
        assert!(!app.trust_review(&dir).unwrap().grants_anything_new());
        assert!(app.revoke_trust(&dir).unwrap());
        assert!(!app.revoke_trust(&dir).unwrap());
        assert_eq!(
            app.trust_list().unwrap().state(&repo).trust(),
            Trust::Untrusted
        );
    }
}
