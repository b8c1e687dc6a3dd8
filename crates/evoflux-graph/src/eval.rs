//! Evals: `evals/<name>.yaml` (or `.yml`, `.json`, `.toml`), a task and
//! what its outcome must show. The harness's eval runner runs them
//! (`evoflux eval`); this module only checks the file, strictly, with a
//! `eval/*` diagnostic naming the file and field of every mistake.
//!
//! ```yaml
//! prompt: Add a CHANGELOG entry for the fix
//! mode: coding                 # default work (coding with `worker`)
//! lead: evoflux                # optional: the mode's default lead
//! worker: scout                # or: this worker recipe alone, not a team
//! model: scripted:fix.yaml     # optional; relative to this file; --model wins
//! output_schema: {type: object, required: [summary]}   # optional
//! expect:
//!   tools_called: [edit]
//!   tools_not_called: [shell]
//!   kinds_not_called: [network]      # tool action classes
//!   files_changed: ["CHANGELOG.md"]  # each glob matches a changed file
//!   files_unchanged: ["src/**"]      # no changed file matches
//!   text_contains: [CHANGELOG]
//!   text_not_contains: [TODO]
//!   contract: met                    # dispatched workers met their contracts
//!   max_model_calls: 8
//!   max_tokens: 20000
//! ```

use std::path::Path;

use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::tool::ActionClass;

/// A checked eval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalDefinition {
    pub prompt: String,
    #[serde(default)]
    pub mode: EvalMode,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<String>,
    /// A worker recipe run alone in place of a team (never with `lead`):
    /// a recipe is tested as a fleet's agent step runs it, held to its
    /// result contract, not only through a lead that may or may not
    /// dispatch it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<String>,
    /// `provider:model`; a `scripted:` path is relative to the eval's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The JSON Schema the turn's `final_output` must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub expect: EvalExpect,
}

/// What an eval runs, read from `lead` and `worker` (which [`parse`]
/// never lets an eval give both of).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalTarget<'a> {
    /// The mode's team under this lead (`None`: the mode's default lead).
    Lead(Option<&'a str>),
    /// This worker recipe alone (Coding mode, where recipes run).
    Worker(&'a str),
}

impl EvalDefinition {
    pub fn target(&self) -> EvalTarget<'_> {
        match (&self.worker, &self.lead) {
            (Some(worker), _) => EvalTarget::Worker(worker),
            (None, lead) => EvalTarget::Lead(lead.as_deref()),
        }
    }
}

/// The mode an eval runs in (the written form of [`AppMode`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EvalMode {
    #[default]
    Work,
    Coding,
}

impl From<EvalMode> for AppMode {
    fn from(m: EvalMode) -> AppMode {
        match m {
            EvalMode::Work => AppMode::Work,
            EvalMode::Coding => AppMode::Coding,
        }
    }
}

/// What a run's outcome must show. Every assertion given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalExpect {
    /// Tools (by model-visible name) called at least once, by any session
    /// of the run's team.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_called: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools_not_called: Vec<String>,
    /// Tools called by their action class (`read`, `write`, `execute`, …).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds_called: Vec<ActionClass>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds_not_called: Vec<ActionClass>,
    /// Globs over workspace-relative paths: each matches a changed file.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_changed: Vec<String>,
    /// Globs no changed file may match.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_unchanged: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_contains: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub text_not_contains: Vec<String>,
    /// Whether the workers the run dispatched met their result contracts;
    /// for a `worker` eval, whether that worker met its own (unset: it
    /// must).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<ContractExpect>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_calls: Option<u64>,
    /// Input plus output tokens over the whole run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u64>,
}

/// The result-contract outcome an eval expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContractExpect {
    /// Every dispatched worker's result met its contract.
    Met,
    /// At least one still missed it after the repair rounds.
    Unmet,
}

const FIELDS: [&str; 7] = [
    "prompt",
    "mode",
    "lead",
    "worker",
    "model",
    "output_schema",
    "expect",
];
const EXPECT_FIELDS: [&str; 11] = [
    "tools_called",
    "tools_not_called",
    "kinds_called",
    "kinds_not_called",
    "files_changed",
    "files_unchanged",
    "text_contains",
    "text_not_contains",
    "contract",
    "max_model_calls",
    "max_tokens",
];

/// Checks one eval file's value.
pub fn parse(path: &Path, value: Value, diags: &mut Diagnostics) -> Option<EvalDefinition> {
    let err = |code: &'static str, field: &str, message: String| {
        Diagnostic::error(code, message)
            .with_file(path)
            .with_field(field)
    };
    let Value::Object(map) = &value else {
        diags.push(
            Diagnostic::error(
                "eval/not-a-table",
                "an eval is a table of fields (prompt, mode, model, expect, …)",
            )
            .with_file(path),
        );
        return None;
    };
    let mut shape_ok = true;
    for key in map.keys().filter(|k| !FIELDS.contains(&k.as_str())) {
        shape_ok = false;
        diags.push(err(
            "eval/unknown-field",
            key,
            format!("unknown field `{key}`; an eval has {}", FIELDS.join(", ")),
        ));
    }
    if let Some(Value::Object(expect)) = map.get("expect") {
        for key in expect
            .keys()
            .filter(|k| !EXPECT_FIELDS.contains(&k.as_str()))
        {
            shape_ok = false;
            diags.push(err(
                "eval/unknown-field",
                &format!("expect.{key}"),
                format!(
                    "unknown field `expect.{key}`; `expect` has {}",
                    EXPECT_FIELDS.join(", ")
                ),
            ));
        }
    }
    if !map.contains_key("prompt") {
        shape_ok = false;
        diags.push(err(
            "eval/field-missing",
            "prompt",
            "an eval needs `prompt`: the task it gives".into(),
        ));
    }
    if !shape_ok {
        return None;
    }
    // A worker runs where recipes run: Coding mode, unless it says
    // otherwise (and is refused below).
    let mode_given = map.contains_key("mode");
    let mut def: EvalDefinition = match serde_json::from_value(value) {
        Ok(d) => d,
        Err(e) => {
            diags.push(
                Diagnostic::error("eval/field-invalid", format!("eval: {e}")).with_file(path),
            );
            return None;
        }
    };
    let before = diags.count(evoflux_core::Severity::Error);
    if def.worker.is_some() && !mode_given {
        def.mode = EvalMode::Coding;
    }
    check_target(&def, &err, diags);
    if def.prompt.trim().is_empty() {
        diags.push(err(
            "eval/prompt-empty",
            "prompt",
            "`prompt` is the task the eval gives; it must not be empty".into(),
        ));
    }
    for (field, globs) in [
        ("expect.files_changed", &def.expect.files_changed),
        ("expect.files_unchanged", &def.expect.files_unchanged),
    ] {
        for g in globs {
            if let Err(e) = globset::Glob::new(g) {
                diags.push(err(
                    "eval/glob-invalid",
                    field,
                    format!("`{g}` is not a valid glob: {e}"),
                ));
            }
        }
    }
    if let Some(schema) = &def.output_schema
        && let Err(e) = jsonschema::meta::validate(schema)
    {
        diags.push(err(
            "eval/schema-invalid",
            "output_schema",
            format!("`output_schema` is not a valid JSON Schema: {e}"),
        ));
    }
    (diags.count(evoflux_core::Severity::Error) == before).then_some(def)
}

/// `worker` runs one recipe alone: not with a lead, not with an
/// `output_schema` (a recipe's answer is held to its result contract),
/// and only in Coding mode.
fn check_target(
    def: &EvalDefinition,
    err: &dyn Fn(&'static str, &str, String) -> Diagnostic,
    diags: &mut Diagnostics,
) {
    let Some(worker) = &def.worker else {
        return;
    };
    if worker.trim().is_empty() {
        diags.push(err(
            "eval/field-invalid",
            "worker",
            "`worker` names a worker recipe (see `evoflux workers list`); it must not be empty"
                .into(),
        ));
    }
    if let Some(lead) = &def.lead {
        diags.push(err(
            "eval/field-conflict",
            "worker",
            format!(
                "`worker: {worker}` runs that recipe alone and `lead: {lead}` runs a team; keep one"
            ),
        ));
    }
    if def.output_schema.is_some() {
        diags.push(err(
            "eval/field-conflict",
            "output_schema",
            format!(
                "`worker: {worker}` answers in its recipe's result contract, which `expect.contract` \
                 checks; `output_schema` is for a lead's turn: remove it"
            ),
        ));
    }
    match def.mode {
        EvalMode::Coding => {}
        EvalMode::Work => diags.push(err(
            "eval/field-conflict",
            "mode",
            format!(
                "worker recipes run in Coding mode and `worker: {worker}` is given with \
                 `mode: work`; remove `mode` or write `mode: coding`"
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> (Option<EvalDefinition>, Vec<String>) {
        let mut d = Diagnostics::new();
        let def = parse(Path::new("evals/x.yaml"), v, &mut d);
        (def, d.codes().into_iter().map(str::to_owned).collect())
    }

    #[test]
    fn a_full_eval_parses() {
        let (def, codes) = check(json!({
            "prompt": "do it",
            "mode": "coding",
            "expect": {"tools_called": ["read"], "kinds_not_called": ["network"],
                       "files_changed": ["src/**/*.rs"], "contract": "met", "max_tokens": 10}
        }));
        assert!(codes.is_empty(), "{codes:?}");
        let def = def.unwrap();
        assert_eq!(def.mode, EvalMode::Coding);
        assert_eq!(def.expect.kinds_not_called, [ActionClass::Network]);
    }

    #[test]
    fn mistakes_are_named() {
        assert_eq!(
            check(json!({"prompt": "x", "colour": 1})).1,
            ["eval/unknown-field"]
        );
        assert_eq!(check(json!({"mode": "work"})).1, ["eval/field-missing"]);
        assert_eq!(check(json!({"prompt": " "})).1, ["eval/prompt-empty"]);
        assert_eq!(
            check(json!({"prompt": "x", "expect": {"files_changed": ["a[b"]}})).1,
            ["eval/glob-invalid"]
        );
        assert_eq!(
            check(json!({"prompt": "x", "expect": {"kinds_called": ["teleport"]}})).1,
            ["eval/field-invalid"]
        );
        assert_eq!(
            check(json!({"prompt": "x", "output_schema": {"type": 5}})).1,
            ["eval/schema-invalid"]
        );
    }

    #[test]
    fn a_worker_eval_runs_the_recipe_alone_in_coding_mode() {
        let (def, codes) = check(json!({"prompt": "look", "worker": "scout"}));
        assert!(codes.is_empty(), "{codes:?}");
        let def = def.unwrap();
        assert_eq!(def.mode, EvalMode::Coding);
        assert_eq!(def.target(), EvalTarget::Worker("scout"));
        let (def, _) = check(json!({"prompt": "look", "lead": "evoflux"}));
        assert_eq!(def.unwrap().target(), EvalTarget::Lead(Some("evoflux")));
        let (def, _) = check(json!({"prompt": "look"}));
        assert_eq!(def.unwrap().target(), EvalTarget::Lead(None));
    }

    #[test]
    fn a_worker_with_a_lead_a_schema_or_work_mode_is_refused() {
        let fields = |v: Value| {
            let mut d = Diagnostics::new();
            let def = parse(Path::new("evals/x.yaml"), v, &mut d);
            assert!(def.is_none());
            d.iter()
                .map(|d| {
                    (
                        d.code.to_string(),
                        d.locator.field.clone().unwrap_or_default(),
                    )
                })
                .collect::<Vec<_>>()
        };
        let conflict = |field: &str| ("eval/field-conflict".to_owned(), field.to_owned());
        assert_eq!(
            fields(json!({"prompt": "x", "worker": "scout", "lead": "evoflux"})),
            [conflict("worker")]
        );
        assert_eq!(
            fields(json!({"prompt": "x", "worker": "scout", "output_schema": {"type": "object"}})),
            [conflict("output_schema")]
        );
        assert_eq!(
            fields(json!({"prompt": "x", "worker": "scout", "mode": "work"})),
            [conflict("mode")]
        );
        assert_eq!(
            fields(json!({"prompt": "x", "worker": " "})),
            [("eval/field-invalid".to_owned(), "worker".to_owned())]
        );
    }
}
