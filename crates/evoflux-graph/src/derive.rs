//! Derived slots: a framework-registered template turns selected sources
//! into an ordinary candidate for another slot.
//!
//! A team of agent files is more than its members: it is also the `agent`
//! delegation tool that reaches them. Rather than a special case beside the
//! composer, the tool is a *derived* candidate of the `tools/agent` slot,
//! instantiated by the [`Template::TeamDelegation`] template in each layer
//! that defines team agents or worker recipes, and then composed like any
//! other candidate: a direct candidate of the same layer wins over it
//! (so a `tools/agent.toml` disable sentinel beside the team removes it),
//! normal cross-layer precedence applies, and its binding names the
//! template, its anchor and every dependency.
//!
//! A derived candidate needs every one of its dependencies to stay
//! selected: one that loses its slot or is disabled removes the derived
//! candidate before its slot composes, with
//! [`DERIVED_DEPENDENCY_LOST`]. Templates are a closed enum, listed by the
//! registry that provides them ([`BuiltinRegistry::templates`]): a
//! candidate can only name a template its registry registered, and a
//! template never builds anything on its own — only a derived candidate
//! that won its slot is constructed.

use std::collections::BTreeMap;

use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};

use crate::candidate::{Backing, Candidate, SourceId};
use crate::compose::Definition;
use crate::layer::{Form, Layer};
use crate::registry::BuiltinRegistry;
use crate::slot::{Slot, SlotKind};

/// The code of a derived candidate removed because a dependency is no
/// longer selected.
pub const DERIVED_DEPENDENCY_LOST: &str = "compile/derived-dependency-lost";

/// Every template the framework can register. Closed: a new derivation is
/// a new variant, matched exhaustively below.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Template {
    /// The `agent` delegation tool (`tools/agent`), derived in each layer
    /// from that layer's team agents and worker recipes.
    TeamDelegation,
}

impl Template {
    pub const ALL: [Template; 1] = [Template::TeamDelegation];

    pub const fn as_str(self) -> &'static str {
        match self {
            Template::TeamDelegation => "team-delegation",
        }
    }

    /// The template's module path in its registry, which its bindings name.
    pub fn module(self) -> String {
        format!("templates/{}", self.as_str())
    }

    /// The logical path of the slot it derives.
    pub const fn target_path(self) -> &'static str {
        match self {
            Template::TeamDelegation => "tools/agent.toml",
        }
    }

    /// The slot it derives.
    pub fn target(self) -> Slot {
        match self {
            Template::TeamDelegation => Slot::tool("agent"),
        }
    }

    /// Whether a candidate of `kind` is one of the template's dependencies.
    pub const fn depends_on(self, kind: SlotKind) -> bool {
        match self {
            Template::TeamDelegation => match kind {
                SlotKind::WorkAgent | SlotKind::CodingAgent | SlotKind::Worker => true,
                SlotKind::Config
                | SlotKind::Sandbox
                | SlotKind::Tool
                | SlotKind::Channel
                | SlotKind::Connection
                | SlotKind::Schedule
                | SlotKind::Skill
                | SlotKind::Fleet
                | SlotKind::FleetCommands
                | SlotKind::Eval
                | SlotKind::RemoteAgent => false,
            },
        }
    }

    /// Builds the derived definition. Called only for a derived candidate
    /// that won its slot.
    pub(crate) fn construct(self) -> Option<Definition> {
        match self {
            Template::TeamDelegation => {
                Some(Definition::Tool(crate::tool::builtin::agent::definition()))
            }
        }
    }
}

/// The provenance of a derived candidate: the template that made it, the
/// source it is anchored on (whose layer and owner it inherits) and every
/// source it depends on, by alias (the dependency's slot). Carried by the
/// candidate's backing and by the winner's binding, so the graph's
/// identity changes with any of them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Derivation {
    pub template: Template,
    pub anchor: SourceId,
    pub dependencies: BTreeMap<String, SourceId>,
}

/// Instantiates every registered template over the candidates of the
/// graph (grouped by slot), before any of them is composed: one derived
/// candidate per template and layer with dependencies. `next_order` is
/// the discovery order the first one takes.
pub(crate) fn instantiate(
    registries: &[BuiltinRegistry],
    groups: &BTreeMap<Slot, Vec<Candidate>>,
    next_order: u32,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    for registry in registries {
        for &template in &registry.templates {
            let mut by_layer: BTreeMap<Layer, Vec<&Candidate>> = BTreeMap::new();
            for c in groups.values().flatten() {
                // A file of another harness (a Claude subagent) is itself
                // derived; only direct sources anchor a derivation, and a
                // slot's second candidate in one layer is a duplicate
                // whose slot fails on its own.
                let usable = template.depends_on(c.slot.kind) && c.form == Form::Direct;
                let list = by_layer.entry(c.layer).or_default();
                if usable && !list.iter().any(|seen| seen.slot == c.slot) {
                    list.push(c);
                }
            }
            for deps in by_layer.into_values() {
                // Slot order: the anchor is the first dependency.
                let Some(anchor) = deps.first() else { continue };
                let derivation = Derivation {
                    template,
                    anchor: anchor.source_id.clone(),
                    dependencies: deps
                        .iter()
                        .map(|d| (d.slot.to_string(), d.source_id.clone()))
                        .collect(),
                };
                let order = next_order.saturating_add(u32::try_from(out.len()).unwrap_or(u32::MAX));
                out.push(Candidate {
                    slot: template.target(),
                    logical_path: template.target_path().to_owned(),
                    layer: anchor.layer,
                    form: Form::Derived,
                    owner: anchor.owner.clone(),
                    source_id: SourceId(format!(
                        "{}:{}:{}<-{}",
                        registry.id,
                        template.module(),
                        template.target_path(),
                        anchor.source_id
                    )),
                    backing: Backing::Derived {
                        registry: registry.id.clone(),
                        derivation,
                    },
                    order,
                    trust: anchor.trust,
                });
            }
        }
    }
    out
}

/// Removes from `group` each derived candidate with a dependency that is
/// not selected (`selected` says which sources are), with
/// [`DERIVED_DEPENDENCY_LOST`].
pub(crate) fn drop_lost(
    group: &mut Vec<Candidate>,
    selected: impl Fn(&SourceId) -> bool,
    diags: &mut Diagnostics,
) {
    group.retain(|c| {
        let Backing::Derived { derivation, .. } = &c.backing else {
            return true;
        };
        let lost: Vec<&str> = derivation
            .dependencies
            .iter()
            .filter(|(_, id)| !selected(id))
            .map(|(alias, _)| alias.as_str())
            .collect();
        if lost.is_empty() {
            return true;
        }
        diags.push(
            Diagnostic::info(
                DERIVED_DEPENDENCY_LOST,
                format!(
                    "the `{}` slot derived by the `{}` template in the {} layer is left out: \
                     its dependencies {} of that layer are not selected (a higher layer replaced \
                     or disabled them); the winner of `{}` comes from another source",
                    c.slot,
                    derivation.template.as_str(),
                    c.layer,
                    lost.iter()
                        .map(|a| format!("`{a}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    c.slot,
                ),
            )
            .with_slot(c.slot.clone())
            .with_source_id(c.source_id.as_str()),
        );
        false
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::candidate::{AppFolder, AppRoot, Owner};
    use evoflux_core::trust::Trust;

    fn candidate(slot: Slot, layer: Layer, form: Form, id: &str) -> Candidate {
        Candidate {
            logical_path: format!("{slot}.md"),
            slot,
            layer,
            form,
            owner: Owner::Application {
                root: AppRoot::User,
                folder: AppFolder::Evoflux,
                path: "/u".into(),
            },
            source_id: SourceId(id.to_owned()),
            backing: Backing::File {
                path: format!("/u/{id}").into(),
                format: crate::slot::FileFormat::Markdown,
            },
            order: 0,
            trust: Trust::Trusted,
        }
    }

    fn groups(cs: Vec<Candidate>) -> BTreeMap<Slot, Vec<Candidate>> {
        let mut g: BTreeMap<Slot, Vec<Candidate>> = BTreeMap::new();
        for c in cs {
            g.entry(c.slot.clone()).or_default().push(c);
        }
        g
    }

    #[test]
    fn one_derived_candidate_per_layer_anchored_on_its_first_dependency() {
        let g = groups(vec![
            candidate(
                Slot::new(SlotKind::WorkAgent, "writer"),
                Layer::User,
                Form::Direct,
                "u:w",
            ),
            candidate(
                Slot::new(SlotKind::Worker, "audit"),
                Layer::User,
                Form::Direct,
                "u:a",
            ),
            candidate(
                Slot::new(SlotKind::WorkAgent, "writer"),
                Layer::Project,
                Form::Direct,
                "p:w",
            ),
            // Another harness's file and a tool are not dependencies.
            candidate(
                Slot::new(SlotKind::CodingAgent, "x"),
                Layer::Admin,
                Form::Derived,
                "a:x",
            ),
            candidate(Slot::tool("deploy"), Layer::Admin, Form::Direct, "a:t"),
        ]);
        let derived = instantiate(&[BuiltinRegistry::framework()], &g, 7);
        assert_eq!(derived.len(), 2);
        let user = &derived[0];
        assert_eq!(user.layer, Layer::User);
        assert_eq!(user.form, Form::Derived);
        assert_eq!(user.slot, Slot::tool("agent"));
        assert_eq!(user.order, 7);
        let Backing::Derived { derivation, .. } = &user.backing else {
            panic!("not derived: {:?}", user.backing);
        };
        assert_eq!(derivation.template, Template::TeamDelegation);
        // `agents/writer` sorts before `workers/audit`.
        assert_eq!(derivation.anchor.as_str(), "u:w");
        assert_eq!(
            derivation.dependencies.keys().collect::<Vec<_>>(),
            ["agents/writer", "workers/audit"]
        );
        assert_eq!(derived[1].layer, Layer::Project);
    }

    #[test]
    fn a_registry_without_the_template_derives_nothing() {
        let g = groups(vec![candidate(
            Slot::new(SlotKind::WorkAgent, "writer"),
            Layer::User,
            Form::Direct,
            "u:w",
        )]);
        let mut registry = BuiltinRegistry::framework();
        registry.templates.clear();
        assert!(instantiate(&[registry], &g, 0).is_empty());
    }

    #[test]
    fn a_lost_dependency_drops_the_derived_candidate_with_its_code() {
        let g = groups(vec![
            candidate(
                Slot::new(SlotKind::WorkAgent, "a"),
                Layer::User,
                Form::Direct,
                "u:a",
            ),
            candidate(
                Slot::new(SlotKind::WorkAgent, "b"),
                Layer::User,
                Form::Direct,
                "u:b",
            ),
        ]);
        let mut group = instantiate(&[BuiltinRegistry::framework()], &g, 0);
        let mut diags = Diagnostics::new();
        drop_lost(&mut group, |id| id.as_str() == "u:a", &mut diags);
        assert!(group.is_empty());
        assert_eq!(diags.codes(), [DERIVED_DEPENDENCY_LOST]);
        let mut group = instantiate(&[BuiltinRegistry::framework()], &g, 0);
        drop_lost(&mut group, |_| true, &mut diags);
        assert_eq!(group.len(), 1);
    }
}
