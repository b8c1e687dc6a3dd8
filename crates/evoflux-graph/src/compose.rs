//! The one composer.
//!
//! Per slot: order the candidates by precedence (layer, then direct over
//! derived, then discovery order), apply the kind's duplicate policy, pick
//! the winner without reading any candidate, then load only the winner. A
//! winning disable sentinel removes the slot if it shadows something. Every
//! loser is recorded once in the composition report with its full
//! descriptor; the winner's ownership lives only in its binding.
//!
//! The config and sandbox slots are layered instead: every layer's file is
//! read and folded by the slot's own merge rule (a repository's file may
//! only tighten, and while untrusted may not name providers). Sources of an
//! untrusted repository that would act for the user are withheld before
//! composition and listed as awaiting trust, so the layers below them win.
//!
//! The config slot composes first (phase one), because harness settings
//! derive from the selected config; [`ConfigPhase`] cannot produce a graph
//! until it has selected one. Slots that templates derive candidates for
//! ([`crate::derive`]) compose last, once the sources they derive from
//! have been selected.

use std::collections::BTreeMap;
use std::path::Path;

use evoflux_core::config::{ConfigScope, HarnessConfig, LoadedConfig};
use evoflux_core::hash::sha256_hex;
use evoflux_core::secret_name::KeyVariables;
use evoflux_core::trust::Trust;
use evoflux_core::{Diagnostic, Diagnostics, Severity};
use serde::{Deserialize, Serialize};

use crate::candidate::{Backing, Candidate, Owner, SourceDescriptor, SourceId};
use crate::channel::{self, ChannelDefinition};
use crate::connection::{self, ConnectionDefinition};
use crate::declarative::{is_disable_sentinel, parse_value};
use crate::discover::{Discovered, EntryValues};
use crate::grants::{GrantedSource, TrustGrants};
use crate::layer::{Form, Layer};
use crate::policy::CompositionPolicy;
use crate::registry::BuiltinRegistry;
use crate::sandbox::{self, SandboxPolicy};
use crate::schedule::{self, ScheduleDefinition};
use crate::slot::{FileFormat, Slot, SlotKind};
use crate::tool::{self, ToolDefinition};

/// A normalized winner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "kebab-case")]
pub enum Definition {
    /// The layered configuration, with where each part came from.
    Config(LoadedConfig),
    Sandbox(SandboxPolicy),
    Tool(ToolDefinition),
    Channel(ChannelDefinition),
    Connection(ConnectionDefinition),
    Schedule(ScheduleDefinition),
    Eval(crate::eval::EvalDefinition),
    /// An `[agents.external.<name>]` table: how to start the agent.
    RemoteAgent(evoflux_core::external_agent::ExternalAgentConfig),
    /// A selected Markdown or YAML source (skill, agent, worker, fleet,
    /// schedule, fleet commands) whose domain crate normalizes it.
    Document {
        format: FileFormat,
    },
}

/// How a winner is loaded. Exactly one per selected source.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Binding {
    Builtin {
        registry: String,
        module: String,
        revision: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        semantic_revision: Option<String>,
        /// For a derived slot, `module` is its template and this is what
        /// it was derived from (the template, anchor and dependencies).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        derivation: Option<crate::derive::Derivation>,
    },
    File {
        path: std::path::PathBuf,
        sha256: String,
        /// The entry inside the file, for files that hold several slots.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        entry: Option<String>,
    },
}

/// A binding with the provenance of the source it binds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoundSource {
    pub binding: Binding,
    pub logical_path: String,
    pub layer: crate::layer::Layer,
    pub owner: Owner,
}

/// One selected, normalized slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Node {
    pub slot: Slot,
    pub source_id: SourceId,
    pub definition: Definition,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum CompositionEntry {
    /// A candidate that lost its slot to `winner_source_id`.
    Shadowed {
        source: SourceDescriptor,
        winner_source_id: SourceId,
    },
    /// A winning disable sentinel that removed its slot.
    Disabled { source: SourceDescriptor },
    /// A lower layer's file folded into a layered slot (config, sandbox)
    /// whose node is `into`.
    Layered {
        source: SourceDescriptor,
        into: SourceId,
    },
    /// A source of an untrusted repository that would act for the user
    /// (a command tool, an MCP server, a remote agent, a channel, a
    /// schedule, fleet commands): listed, never loaded, until the
    /// repository is trusted.
    AwaitingTrust { source: SourceDescriptor },
}

/// The kind of a composition entry, for the identity hash and `info`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EntryKind {
    Shadowed,
    Disabled,
    Layered,
    AwaitingTrust,
}

impl EntryKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            EntryKind::Shadowed => "shadowed",
            EntryKind::Disabled => "disabled",
            EntryKind::Layered => "layered",
            EntryKind::AwaitingTrust => "awaiting-trust",
        }
    }
}

impl CompositionEntry {
    /// The entry's kind name (`shadowed` or `disabled`), its source and,
    /// for a shadowed entry, the winner: the one projection that both the
    /// graph's identity hash and `evoflux info` read, so the two cannot
    /// disagree on what an entry is.
    pub fn parts(&self) -> (EntryKind, &SourceDescriptor, Option<&SourceId>) {
        match self {
            CompositionEntry::Shadowed {
                source,
                winner_source_id,
            } => (EntryKind::Shadowed, source, Some(winner_source_id)),
            CompositionEntry::Disabled { source } => (EntryKind::Disabled, source, None),
            CompositionEntry::Layered { source, into } => (EntryKind::Layered, source, Some(into)),
            CompositionEntry::AwaitingTrust { source } => (EntryKind::AwaitingTrust, source, None),
        }
    }
}

/// Only shadowed, disabled, layered and withheld entries; active ownership
/// is in bindings.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CompositionReport {
    pub entries: Vec<CompositionEntry>,
}

/// The result of composition, before route planning.
#[derive(Debug, Default)]
pub struct Composed {
    pub nodes: Vec<Node>,
    pub bindings: BTreeMap<SourceId, BoundSource>,
    pub report: CompositionReport,
}

enum Loaded {
    Definition(Box<(Definition, Binding)>),
    /// A disable sentinel; it gets no binding.
    Disable,
    Invalid,
}

/// Phase one: only the config slot can be composed.
#[derive(Debug)]
pub struct ConfigPhase<'a> {
    registries: &'a [BuiltinRegistry],
    entries: EntryValues,
    groups: BTreeMap<Slot, Vec<Candidate>>,
    composed: Composed,
    reviewed: Vec<GrantedSource>,
}

/// Phase two: the config is selected; everything else composes.
#[derive(Debug)]
pub struct RestPhase<'a> {
    registries: &'a [BuiltinRegistry],
    entries: EntryValues,
    groups: BTreeMap<Slot, Vec<Candidate>>,
    composed: Composed,
    config: HarnessConfig,
}

impl<'a> ConfigPhase<'a> {
    /// Groups candidates by slot, rejecting repeated source ids. `trust`
    /// says which trusted repositories are held to what the user granted
    /// them (a source changed since is untrusted again) and which one's
    /// grants to collect ([`ConfigPhase::take_reviewed`]).
    pub fn new(
        registries: &'a [BuiltinRegistry],
        discovered: Discovered,
        trust: &TrustGrants,
        diags: &mut Diagnostics,
    ) -> Self {
        let Discovered {
            mut candidates,
            entries,
        } = discovered;
        let checked = crate::grants::check(trust, &mut candidates, &entries, diags);
        let mut groups: BTreeMap<Slot, Vec<Candidate>> = BTreeMap::new();
        let mut ids = std::collections::HashSet::new();
        let mut withheld = Vec::new();
        for c in candidates {
            if !ids.insert(c.source_id.clone()) {
                diags.push(
                    Diagnostic::error(
                        "compile/source-id-duplicate",
                        format!("two candidates share the source id `{}`", c.source_id),
                    )
                    .with_source_id(c.source_id.as_str()),
                );
                continue;
            }
            if c.trust == Trust::Untrusted && c.slot.kind.acts_for_user() {
                withheld.push(c);
                continue;
            }
            groups.entry(c.slot.clone()).or_default().push(c);
        }
        let mut composed = Composed::default();
        // Sources that changed since their repository was trusted have
        // their own warnings.
        let untrusted: Vec<&Candidate> = withheld
            .iter()
            .filter(|c| !checked.changed.contains(&c.source_id))
            .collect();
        if let Some(first) = untrusted.first() {
            diags.push(
                Diagnostic::warning(
                    "trust/withheld",
                    format!(
                        "this repository is not trusted, so {} of its sources that would run \
                         commands or servers for you (command tools, MCP servers, remote \
                         agents, channels, schedules) are not loaded: `evoflux info` lists them; trust the \
                         repository (evoflux trust) to use them",
                        untrusted.len()
                    ),
                )
                .with_source_id(first.source_id.as_str()),
            );
        }
        composed
            .report
            .entries
            .extend(withheld.iter().map(|c| CompositionEntry::AwaitingTrust {
                source: SourceDescriptor::from(c),
            }));
        ConfigPhase {
            registries,
            entries,
            groups,
            composed,
            reviewed: checked.reviewed,
        }
    }

    /// The grants of the reviewed repository's sources, in discovery order
    /// (empty unless the compile reviews one).
    pub fn take_reviewed(&mut self) -> Vec<GrantedSource> {
        std::mem::take(&mut self.reviewed)
    }

    /// Composes and loads the config slot. A failed config is reported and
    /// the embedded defaults stand in so the rest can still be checked; the
    /// errors make the compilation fail regardless.
    pub fn select_config(mut self, diags: &mut Diagnostics) -> RestPhase<'a> {
        let group = self.groups.remove(&Slot::config()).unwrap_or_default();
        let mut config = None;
        compose_slot(
            self.registries,
            &self.entries,
            &Slot::config(),
            group,
            &KeyVariables::default(),
            &mut self.composed,
            diags,
        );
        if let Some(Node {
            definition: Definition::Config(c),
            ..
        }) = self.composed.nodes.last()
        {
            config = Some(c.config.clone());
        }
        RestPhase {
            registries: self.registries,
            entries: self.entries,
            groups: self.groups,
            composed: self.composed,
            config: config.unwrap_or_else(HarnessConfig::embedded),
        }
    }
}

impl RestPhase<'_> {
    pub fn config(&self) -> &HarnessConfig {
        &self.config
    }

    /// Composes every remaining slot, in lexical slot order, except that
    /// a slot with derived candidates ([`crate::derive`]) composes after
    /// every other, once their dependencies have been selected: a derived
    /// candidate whose dependency was not is removed first. Nodes keep
    /// lexical slot order.
    pub fn compose(mut self, diags: &mut Diagnostics) -> Composed {
        let mut groups = std::mem::take(&mut self.groups);
        let next_order = groups
            .values()
            .flatten()
            .map(|c| c.order.saturating_add(1))
            .max()
            .unwrap_or(0);
        for c in crate::derive::instantiate(self.registries, &groups, next_order) {
            // What an untrusted repository's sources derive waits for
            // trust like a file of that kind would: its team cannot bring
            // back a tool the user's own layer disabled.
            if c.trust == Trust::Untrusted && c.slot.kind.acts_for_user() {
                self.composed
                    .report
                    .entries
                    .push(CompositionEntry::AwaitingTrust {
                        source: SourceDescriptor::from(&c),
                    });
                continue;
            }
            groups.entry(c.slot.clone()).or_default().push(c);
        }
        let (derived, direct): (Vec<_>, Vec<_>) = groups.into_iter().partition(|(_, g)| {
            g.iter()
                .any(|c| matches!(c.backing, Backing::Derived { .. }))
        });
        let keys = KeyVariables::of_config(&self.config);
        for (slot, group) in direct {
            compose_slot(
                self.registries,
                &self.entries,
                &slot,
                group,
                &keys,
                &mut self.composed,
                diags,
            );
        }
        for (slot, mut group) in derived {
            let bindings = &self.composed.bindings;
            crate::derive::drop_lost(&mut group, |id| bindings.contains_key(id), diags);
            compose_slot(
                self.registries,
                &self.entries,
                &slot,
                group,
                &keys,
                &mut self.composed,
                diags,
            );
        }
        // The config node stays first: its kind sorts first.
        self.composed.nodes.sort_by(|a, b| a.slot.cmp(&b.slot));
        self.composed
    }
}

fn precedence(a: &Candidate, b: &Candidate) -> std::cmp::Ordering {
    b.layer
        .cmp(&a.layer)
        .then(b.form.cmp(&a.form))
        .then(a.order.cmp(&b.order))
}

fn locate(d: Diagnostic, c: &Candidate) -> Diagnostic {
    let d = d
        .with_slot(c.slot.clone())
        .with_source_id(c.source_id.as_str());
    match c.file() {
        Some(f) if d.locator.file.is_none() => d.with_file(f),
        _ => d,
    }
}

/// `keys` are the variables that hold keys, which a repository's command
/// tool may not be passed.
fn compose_slot(
    registries: &[BuiltinRegistry],
    entries: &EntryValues,
    slot: &Slot,
    mut group: Vec<Candidate>,
    keys: &KeyVariables,
    composed: &mut Composed,
    diags: &mut Diagnostics,
) {
    if group.is_empty() {
        return;
    }
    group.sort_by(precedence);
    let policy = CompositionPolicy::of(slot.kind);
    for pair in group.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if a.layer != b.layer || a.form != b.form {
            continue;
        }
        let where_ = |c: &Candidate| {
            c.file()
                .map_or_else(|| c.source_id.to_string(), |f| f.display().to_string())
        };
        if a.form == Form::Derived {
            // Other harnesses' files often repeat one server (a setup
            // copied from Claude Code to Cursor): the first in discovery
            // order is used, and nothing fails.
            diags.push(locate(
                Diagnostic::info(
                    "compile/derived-duplicate",
                    format!(
                        "`{slot}` is in `{}` and in `{}`; the first is used",
                        where_(a),
                        where_(b)
                    ),
                ),
                b,
            ));
        } else if policy.duplicates_are_errors() {
            diags.push(locate(
                Diagnostic::error(
                    "compile/duplicate-candidate",
                    format!(
                        "`{slot}` is defined twice in the {} layer: `{}` and `{}`; remove one",
                        a.layer,
                        where_(a),
                        where_(b)
                    ),
                ),
                b,
            ));
        } else {
            diags.push(locate(
                Diagnostic::warning(
                    "compile/skill-collision",
                    format!(
                        "`{slot}` is defined twice in the {} layer; `{}` comes first in discovery \
                         order and wins over `{}`",
                        a.layer,
                        where_(a),
                        where_(b)
                    ),
                ),
                b,
            ));
        }
    }
    if policy.duplicates_are_errors()
        && group.windows(2).any(|p| {
            p[0].layer == p[1].layer && p[0].form == p[1].form && p[0].form == Form::Direct
        })
    {
        // Nothing is loaded for a slot whose winner is ambiguous.
        return;
    }
    if policy == CompositionPolicy::Layered {
        compose_layered(registries, entries, slot, group, composed, diags);
        return;
    }
    let mut losers = group.split_off(1);
    let Some(winner) = group.pop() else { return };
    let mut local = Diagnostics::new();
    let loaded = load(registries, entries, &winner, &mut local);
    if let Loaded::Definition(loaded) = &loaded
        && winner.layer == Layer::Project
    {
        repository_key_env(&loaded.0, &winner, keys, &mut local);
    }
    let local_errors = local.has_errors();
    apply_policy(policy, &winner, local, diags);
    let winner_id = winner.source_id.clone();
    let shadow = |losers: &mut Vec<Candidate>, report: &mut CompositionReport| {
        for l in losers.drain(..) {
            report.entries.push(CompositionEntry::Shadowed {
                source: SourceDescriptor::from(&l),
                winner_source_id: winner_id.clone(),
            });
        }
    };
    match loaded {
        Loaded::Definition(loaded) if !local_errors => {
            let (definition, binding) = *loaded;
            composed.bindings.insert(
                winner.source_id.clone(),
                BoundSource {
                    binding,
                    logical_path: winner.logical_path.clone(),
                    layer: winner.layer,
                    owner: winner.owner.clone(),
                },
            );
            composed.nodes.push(Node {
                slot: slot.clone(),
                source_id: winner.source_id.clone(),
                definition,
            });
            shadow(&mut losers, &mut composed.report);
        }
        Loaded::Disable if losers.is_empty() => diags.push(locate(
            Diagnostic::error(
                "compile/disable-without-target",
                format!(
                    "this file disables `{slot}`, but nothing of lower precedence defines it: \
                     check the name, or delete the file"
                ),
            ),
            &winner,
        )),
        Loaded::Disable => {
            composed.report.entries.push(CompositionEntry::Disabled {
                source: SourceDescriptor::from(&winner),
            });
            shadow(&mut losers, &mut composed.report);
        }
        // An invalid winner never falls back to a loser.
        Loaded::Definition(_) | Loaded::Invalid => shadow(&mut losers, &mut composed.report),
    }
}

/// A layered slot (config, sandbox): every layer's file is read, lowest
/// precedence first, and folded over the framework default by the slot's
/// own merge rule, which knows what a repository's file may say. The node
/// is bound to the highest contributor; the others are `layered` entries.
/// Any invalid file fails the slot (never a silent fallback).
fn compose_layered(
    registries: &[BuiltinRegistry],
    entries: &EntryValues,
    slot: &Slot,
    mut group: Vec<Candidate>,
    composed: &mut Composed,
    diags: &mut Diagnostics,
) {
    group.reverse();
    let mut merged: Option<(Definition, Binding)> = None;
    let mut contributors: Vec<(&Candidate, Binding)> = Vec::new();
    let mut ok = true;
    for c in &group {
        let mut local = Diagnostics::new();
        let loaded = load_layer(
            registries,
            entries,
            c,
            merged.as_mut().map(|m| &mut m.0),
            &mut local,
        );
        ok &= !local.has_errors();
        diags.extend(local.into_iter().map(|d| locate(d, c)));
        match loaded {
            Some(LayerLoad::Base(base)) => {
                let (def, binding) = *base;
                merged = Some((def, binding.clone()));
                contributors.push((c, binding));
            }
            Some(LayerLoad::Applied(binding)) => contributors.push((c, binding)),
            None => {}
        }
    }
    let Some((mut definition, _)) = merged else {
        return;
    };
    if let Definition::Config(loaded) = &mut definition {
        let mut local = Diagnostics::new();
        ok &= loaded.check(&mut local);
        if let Some((c, _)) = contributors.last() {
            diags.extend(local.into_iter().map(|d| locate(d, c)));
        }
    }
    let Some((top, top_binding)) = contributors.pop() else {
        return;
    };
    for (c, _) in &contributors {
        composed.report.entries.push(CompositionEntry::Layered {
            source: SourceDescriptor::from(*c),
            into: top.source_id.clone(),
        });
    }
    if !ok {
        return;
    }
    composed.bindings.insert(
        top.source_id.clone(),
        BoundSource {
            binding: top_binding,
            logical_path: top.logical_path.clone(),
            layer: top.layer,
            owner: top.owner.clone(),
        },
    );
    composed.nodes.push(Node {
        slot: slot.clone(),
        source_id: top.source_id.clone(),
        definition,
    });
}

enum LayerLoad {
    /// The framework default the layers fold over.
    Base(Box<(Definition, Binding)>),
    /// A file folded into the definition so far.
    Applied(Binding),
}

fn load_layer(
    registries: &[BuiltinRegistry],
    entries: &EntryValues,
    c: &Candidate,
    so_far: Option<&mut Definition>,
    diags: &mut Diagnostics,
) -> Option<LayerLoad> {
    let (path, format) = match &c.backing {
        Backing::Builtin { .. } => {
            return match load(registries, entries, c, diags) {
                Loaded::Definition(b) => Some(LayerLoad::Base(b)),
                Loaded::Disable | Loaded::Invalid => None,
            };
        }
        Backing::File { path, format } => (path, *format),
        Backing::FileEntry { .. } | Backing::Derived { .. } => {
            diags.push(Diagnostic::error(
                "compile/file-unreadable",
                "a layered slot is one file, not an entry or a derived source",
            ));
            return None;
        }
    };
    let Some(so_far) = so_far else {
        diags.push(Diagnostic::error(
            "compile/registry-missing",
            format!("no framework default for `{}`", c.slot),
        ));
        return None;
    };
    let (text, sha256) = read(path, diags)?;
    let binding = Binding::File {
        path: path.clone(),
        sha256,
        entry: None,
    };
    let repository = match c.layer {
        Layer::Project => Some(c.trust),
        Layer::Framework | Layer::BundledPlugin | Layer::Plugin | Layer::Admin | Layer::User => {
            None
        }
    };
    match so_far {
        Definition::Config(loaded) => {
            let scope = match (repository, c.layer) {
                (Some(trust), _) => ConfigScope::Project(trust),
                (None, Layer::Admin) => ConfigScope::Admin,
                (None, _) => ConfigScope::User,
            };
            let (layer, _) = evoflux_core::config::read_layer(path, &text, scope, diags)?;
            loaded.apply(layer);
        }
        Definition::Sandbox(policy) => {
            let v = match parse_value(path, format, &text) {
                Ok(v) => v,
                Err(d) => {
                    diags.push(d);
                    return None;
                }
            };
            policy.apply(sandbox::parse(path, v, repository, diags)?);
        }
        Definition::Tool(_)
        | Definition::Channel(_)
        | Definition::Connection(_)
        | Definition::Schedule(_)
        | Definition::Eval(_)
        | Definition::RemoteAgent(_)
        | Definition::Document { .. } => {
            diags.push(Diagnostic::error(
                "compile/registry-missing",
                format!("`{}` is not a layered slot", c.slot),
            ));
            return None;
        }
    }
    Some(LayerLoad::Applied(binding))
}

/// Moves a winner's load diagnostics into the sink as its kind's policy
/// says.
fn apply_policy(
    policy: CompositionPolicy,
    winner: &Candidate,
    local: Diagnostics,
    diags: &mut Diagnostics,
) {
    let errors = local.has_errors();
    let located = local.into_iter().map(|d| locate(d, winner));
    if winner.form == Form::Derived {
        // Derived from another harness's file (or by a template from
        // selected sources): a problem there is not in the user's own
        // file, so it is a warning and the slot is left out.
        diags.extend(located.map(|mut d| {
            d.severity = d.severity.min(Severity::Warning);
            d
        }));
        return;
    }
    match policy {
        CompositionPolicy::Strict
        | CompositionPolicy::Layered
        | CompositionPolicy::TeamAgents
        | CompositionPolicy::Fleets => {
            diags.extend(located);
        }
        CompositionPolicy::Skills => {
            // The skills projection serves the next valid candidate; an
            // invalid winner is a warning, visible in Settings for repair.
            diags.extend(located.map(|mut d| {
                d.severity = d.severity.min(Severity::Warning);
                d
            }));
        }
        CompositionPolicy::Workers => match &winner.owner {
            Owner::Framework { .. } => diags.extend(located),
            Owner::Plugin { .. } | Owner::Application { .. } => {
                diags.extend(located.map(|mut d| {
                    d.severity = d.severity.min(Severity::Warning);
                    d
                }));
                if errors {
                    diags.push(locate(
                        Diagnostic::warning(
                            "compile/worker-quarantined",
                            "this worker recipe is invalid and is quarantined; fix it to use it",
                        ),
                        winner,
                    ));
                }
            }
        },
    }
}

fn load(
    registries: &[BuiltinRegistry],
    entries: &EntryValues,
    c: &Candidate,
    diags: &mut Diagnostics,
) -> Loaded {
    match &c.backing {
        Backing::Builtin { registry, module } => {
            let Some(reg) = registries.iter().find(|r| &r.id == registry) else {
                diags.push(Diagnostic::error(
                    "compile/registry-missing",
                    format!("no builtin registry `{registry}`"),
                ));
                return Loaded::Invalid;
            };
            let Some(m) = reg.module(module) else {
                diags.push(Diagnostic::error(
                    "compile/registry-missing",
                    format!("registry `{registry}` has no module `{module}`"),
                ));
                return Loaded::Invalid;
            };
            let binding = Binding::Builtin {
                registry: reg.id.clone(),
                module: m.logical_path.clone(),
                revision: reg.revision.clone(),
                semantic_revision: m.semantic_revision.map(str::to_owned),
                derivation: None,
            };
            match (m.construct)(&m.logical_path) {
                Some(def) => Loaded::Definition(Box::new((def, binding))),
                None => {
                    diags.push(Diagnostic::error(
                        "compile/registry-missing",
                        format!("module `{module}` of `{registry}` built nothing"),
                    ));
                    Loaded::Invalid
                }
            }
        }
        Backing::Derived {
            registry,
            derivation,
        } => {
            let template = derivation.template;
            let Some(reg) = registries
                .iter()
                .find(|r| &r.id == registry && r.registers(template))
            else {
                diags.push(Diagnostic::error(
                    "compile/registry-missing",
                    format!(
                        "no builtin registry `{registry}` registers the template `{}`",
                        template.as_str()
                    ),
                ));
                return Loaded::Invalid;
            };
            let binding = Binding::Builtin {
                registry: reg.id.clone(),
                module: template.module(),
                revision: reg.revision.clone(),
                semantic_revision: None,
                derivation: Some(derivation.clone()),
            };
            match template.construct() {
                Some(def) => Loaded::Definition(Box::new((def, binding))),
                None => {
                    diags.push(Diagnostic::error(
                        "compile/registry-missing",
                        format!("template `{}` built nothing", template.as_str()),
                    ));
                    Loaded::Invalid
                }
            }
        }
        Backing::File { path, format } => {
            let Some((text, sha256)) = read(path, diags) else {
                return Loaded::Invalid;
            };
            let binding = Binding::File {
                path: path.clone(),
                sha256,
                entry: None,
            };
            match load_file(c, path, *format, &text, diags) {
                Some(Some(def)) => Loaded::Definition(Box::new((def, binding))),
                Some(None) => Loaded::Disable,
                None => Loaded::Invalid,
            }
        }
        Backing::FileEntry {
            path,
            entry,
            format,
        } => {
            // Read once, at discovery, which had to know the entry names.
            let Some(value) = entries.get(&c.source_id).cloned() else {
                diags.push(Diagnostic::error(
                    "compile/file-unreadable",
                    format!("entry `{entry}` was not read from the file"),
                ));
                return Loaded::Invalid;
            };
            // Identity of one entry: its own content, not the whole file's.
            let sha256 = evoflux_core::hash::content_hash(&value)
                .map(|h| h.to_string())
                .unwrap_or_default();
            let binding = Binding::File {
                path: path.clone(),
                sha256,
                entry: Some(entry.clone()),
            };
            if *format == crate::mcp_format::McpFormat::Evoflux && is_disable_sentinel(&value) {
                return Loaded::Disable;
            }
            let definition = match c.slot.kind {
                SlotKind::Connection => {
                    let value = crate::mcp_format::adapt(format, path, entry, value, diags);
                    connection::parse(path, entry, value, diags).map(Definition::Connection)
                }
                SlotKind::RemoteAgent => {
                    evoflux_core::external_agent::parse_entry(path, entry, value, diags)
                        .map(Definition::RemoteAgent)
                }
                SlotKind::Config
                | SlotKind::Sandbox
                | SlotKind::Tool
                | SlotKind::Channel
                | SlotKind::Schedule
                | SlotKind::Skill
                | SlotKind::WorkAgent
                | SlotKind::CodingAgent
                | SlotKind::Worker
                | SlotKind::Fleet
                | SlotKind::FleetCommands
                | SlotKind::Eval => {
                    diags.push(Diagnostic::error(
                        "compile/file-unreadable",
                        format!("`{}` is a file of its own, not an entry of one", c.slot),
                    ));
                    None
                }
            };
            match definition {
                Some(def) => Loaded::Definition(Box::new((def, binding))),
                None => Loaded::Invalid,
            }
        }
    }
}

/// A repository's command tool or remote agent is never passed a variable
/// that holds a key (a provider's `api_key_env`, `*_KEY`, `*_TOKEN`, …)
/// from the user's environment, trusted or not: each one named is an
/// error, and the source is not loaded.
fn repository_key_env(
    definition: &Definition,
    c: &Candidate,
    keys: &KeyVariables,
    diags: &mut Diagnostics,
) {
    let (env, code, what, field, own) = match definition {
        Definition::Tool(ToolDefinition {
            executor: Some(tool::ToolExecutor::Command(command)),
            ..
        }) => (
            &command.env,
            "tool/project-secret-env",
            "tool",
            "env".to_owned(),
            "define the tool in your own config dir",
        ),
        Definition::RemoteAgent(agent) => (
            &agent.env,
            "config/project-external-agent-key",
            "remote agent",
            format!("agents.external.{}.env", c.slot.name),
            "declare the agent in your own config.toml",
        ),
        Definition::Config(_)
        | Definition::Sandbox(_)
        | Definition::Tool(_)
        | Definition::Channel(_)
        | Definition::Connection(_)
        | Definition::Schedule(_)
        | Definition::Eval(_)
        | Definition::Document { .. } => return,
    };
    for var in env.iter().filter(|v| keys.contains(v)) {
        let mut d = Diagnostic::error(
            code,
            format!(
                "the repository's {what} `{}` asks for `{var}` from your environment, which \
                 holds a key: a repository's {what} is never given a key variable; {own} to \
                 pass it",
                c.slot.name
            ),
        )
        .with_field(field.clone());
        if let Some(file) = c.file() {
            d = d.with_file(file);
        }
        diags.push(d);
    }
}

fn read(path: &Path, diags: &mut Diagnostics) -> Option<(String, String)> {
    match evoflux_core::source::read_source(path) {
        Ok(bytes) => {
            let sha = sha256_hex(&bytes).to_string();
            match String::from_utf8(bytes) {
                Ok(text) => Some((text, sha)),
                Err(_) => {
                    diags.push(
                        Diagnostic::error("compile/file-unreadable", "file is not valid UTF-8")
                            .with_file(path),
                    );
                    None
                }
            }
        }
        Err(e) => {
            let code = match e {
                evoflux_core::source::SourceReadError::TooLarge { .. } => "compile/file-too-large",
                evoflux_core::source::SourceReadError::Io(_) => "compile/file-unreadable",
            };
            diags.push(Diagnostic::error(code, e.to_string()).with_file(path));
            None
        }
    }
}

/// `Some(Some(def))` for a definition, `Some(None)` for a disable sentinel,
/// `None` when invalid (diagnostics pushed).
fn load_file(
    c: &Candidate,
    path: &Path,
    format: FileFormat,
    text: &str,
    diags: &mut Diagnostics,
) -> Option<Option<Definition>> {
    let declarative = |diags: &mut Diagnostics| match parse_value(path, format, text) {
        Ok(v) => Some(v),
        Err(d) => {
            diags.push(d);
            None
        }
    };
    match c.slot.kind {
        SlotKind::Config | SlotKind::Sandbox => {
            diags.push(Diagnostic::error(
                "compile/file-unreadable",
                "layered slots are composed by the layered composer",
            ));
            None
        }
        SlotKind::Tool => {
            let v = declarative(diags)?;
            if is_disable_sentinel(&v) {
                return Some(None);
            }
            tool::parse_file(path, &c.slot.name, v, diags).map(|t| Some(Definition::Tool(t)))
        }
        SlotKind::Channel => {
            let v = declarative(diags)?;
            if is_disable_sentinel(&v) {
                return Some(None);
            }
            channel::parse(path, v, diags).map(|ch| Some(Definition::Channel(ch)))
        }
        SlotKind::Schedule => {
            let v = declarative(diags)?;
            if is_disable_sentinel(&v) {
                return Some(None);
            }
            // A repository's schedule works in the directory its
            // `.evoflux` belongs to; the user's names its own.
            let home = match &c.owner {
                Owner::Application {
                    root: crate::candidate::AppRoot::Project,
                    path,
                    ..
                } => path.parent(),
                Owner::Application { .. } | Owner::Framework { .. } | Owner::Plugin { .. } => None,
            };
            schedule::parse(path, home, v, diags).map(|s| Some(Definition::Schedule(s)))
        }
        SlotKind::Eval => {
            let v = declarative(diags)?;
            if is_disable_sentinel(&v) {
                return Some(None);
            }
            crate::eval::parse(path, v, diags).map(|e| Some(Definition::Eval(e)))
        }
        SlotKind::FleetCommands => {
            let v = declarative(diags)?;
            if is_disable_sentinel(&v) {
                return Some(None);
            }
            Some(Some(Definition::Document { format }))
        }
        SlotKind::Connection => {
            diags.push(Diagnostic::error(
                "compile/file-unreadable",
                "connections are entries of mcp.json, not files",
            ));
            None
        }
        SlotKind::RemoteAgent => {
            diags.push(Diagnostic::error(
                "compile/file-unreadable",
                "remote agents are [agents.external] tables of config.toml, not files",
            ));
            None
        }
        SlotKind::Skill
        | SlotKind::WorkAgent
        | SlotKind::CodingAgent
        | SlotKind::Worker
        | SlotKind::Fleet => {
            // The skills crate reads and validates every skill candidate
            // itself; here only a possible disable sentinel matters, so a
            // skill's YAML is parsed only when it could be one.
            if c.slot.kind == SlotKind::Skill {
                let could_disable = evoflux_core::frontmatter::split(text)
                    .is_ok_and(|s| s.yaml.is_some_and(|y| y.contains("disable")));
                if !could_disable {
                    return Some(Some(Definition::Document { format }));
                }
            }
            let doc = match evoflux_core::frontmatter::parse_file(path, text) {
                Ok(doc) => doc,
                // A skill with broken front matter stays selected: the
                // skills validator reports it, Settings shows it for
                // repair, and the runtime serves the next valid variant.
                Err(_) if c.slot.kind == SlotKind::Skill => {
                    return Some(Some(Definition::Document { format }));
                }
                Err(d) => {
                    diags.push(d);
                    return None;
                }
            };
            let sentinel = doc.mapping.len() == 1
                && doc.mapping.get("disable") == Some(&yaml_serde::Value::Bool(true));
            if sentinel {
                return Some(None);
            }
            Some(Some(Definition::Document { format }))
        }
    }
}
