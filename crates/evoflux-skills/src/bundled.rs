//! The bundled skill catalog: skills we write and ship inside the binary.
//!
//! They are framework sources of the `skills/<name>` slots, so the graph
//! composes them like any other candidate (a user or project skill of the
//! same name replaces one) and binds winners to this registry. Their modes
//! are fixed here in code, never by a sidecar, so Work never lists a
//! Coding-only bundled skill and vice versa.

use evoflux_graph::compose::Definition;
use evoflux_graph::registry::{BuiltinModule, BuiltinRegistry, framework_revision};
use evoflux_graph::slot::FileFormat;

use crate::modes::ModeSet;

/// One bundled skill.
#[derive(Debug, Clone, Copy)]
pub struct BundledSkill {
    pub name: &'static str,
    pub modes: ModeSet,
    pub skill_md: &'static str,
    /// `evals/trigger-cases.json`: activation evals for `evoflux skills eval`.
    pub trigger_cases: &'static str,
}

macro_rules! bundled_skill {
    ($name:literal, $modes:expr) => {
        BundledSkill {
            name: $name,
            modes: $modes,
            skill_md: include_str!(concat!("../bundled/", $name, "/SKILL.md")),
            trigger_cases: include_str!(concat!("../bundled/", $name, "/evals/trigger-cases.json")),
        }
    };
}

static BUNDLED: [BundledSkill; 6] = [
    bundled_skill!("code-review", ModeSet::CODING),
    bundled_skill!("debugging", ModeSet::CODING),
    bundled_skill!("research", ModeSet::WORK),
    bundled_skill!("skill-authoring", ModeSet::BOTH),
    bundled_skill!("testing", ModeSet::CODING),
    bundled_skill!("writing", ModeSet::WORK),
];

/// The registry id of the bundled skills.
pub const REGISTRY_ID: &str = "evoflux:skills";

/// Where bundled skills appear to live in paths shown to users; nothing is
/// read from there.
pub const VIRTUAL_ROOT: &str = "(bundled)/skills";

pub fn bundled() -> &'static [BundledSkill] {
    &BUNDLED
}

fn module_path(name: &str) -> String {
    format!("skills/{name}/SKILL.md")
}

/// The bundled skill bound to a registry module path.
pub fn by_module(module: &str) -> Option<&'static BundledSkill> {
    BUNDLED.iter().find(|s| module_path(s.name) == module)
}

/// The builtin registry that makes the bundled skills candidates of the
/// source graph.
pub fn registry() -> BuiltinRegistry {
    BuiltinRegistry {
        id: REGISTRY_ID.to_owned(),
        revision: framework_revision(),
        modules: BUNDLED
            .iter()
            .map(|s| BuiltinModule {
                logical_path: module_path(s.name),
                feature: "bundled-skills",
                semantic_revision: None,
                construct: |_| {
                    Some(Definition::Document {
                        format: FileFormat::Markdown,
                    })
                },
            })
            .collect(),
        templates: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::{ValidationLevel, check_skill_text};

    #[test]
    fn every_bundled_skill_is_strictly_valid_and_named_after_its_folder() {
        for s in bundled() {
            let name = crate::name::BundleName::single(s.name).unwrap();
            let check = check_skill_text(
                s.skill_md,
                std::path::Path::new(&module_path(s.name)),
                &name,
                ValidationLevel::Strict,
            );
            assert!(
                !check.diagnostics.has_errors(),
                "{}: {:?}",
                s.name,
                check.diagnostics.codes()
            );
            assert_eq!(check.fields.name.as_deref(), Some(s.name));
        }
    }

    #[test]
    fn registry_modules_round_trip_to_entries() {
        let r = registry();
        assert_eq!(r.modules.len(), bundled().len());
        for m in &r.modules {
            assert!(by_module(&m.logical_path).is_some(), "{}", m.logical_path);
        }
    }
}
