//! The executor of the `skill` tool: `list`, `load`, `read_resource`.
//!
//! `list` returns the bounded Tier-1 catalog (implicit-eligible skills
//! only). `load` resolves the exact name against the whole record set — so
//! a manual-only skill loads when the model knows its name — answers a
//! skill that is already visibly loaded with a receipt instead of its body
//! again, and otherwise activates it with its whole runtime contract.
//! `read_resource` reads one declared task resource of a loaded skill
//! (never `agents/` or `evals/`). A batch (the calls of one assistant
//! message) may hold at most [`MAX_SKILL_CALLS_PER_BATCH`] skill calls and
//! an identical call repeated in one batch is answered once.

use evoflux_core::hash::canonical_json;
use evoflux_model::ToolCall;
use evoflux_skills::catalog::{CatalogRequest, build_catalog};
use evoflux_skills::resources::{ResourceError, read_resource};
use serde_json::Value;

use super::{ActivationSource, SkillLoadError, SkillRuntime};
use crate::events::ToolResult;

/// Most skill calls handled in one batch.
pub const MAX_SKILL_CALLS_PER_BATCH: usize = 5;
/// Most close matches suggested for an unknown name.
const MAX_SUGGESTIONS: usize = 3;
/// A suggested name must be more similar than this.
const SUGGESTION_CUTOFF: f64 = 0.5;

/// Why a `skill` call failed; each has a stable code.
#[derive(Debug, thiserror::Error)]
pub enum SkillToolError {
    #[error("{0}")]
    Arguments(String),
    #[error("Skill '{name}' not found.{}", suggest(.close))]
    NotFound { name: String, close: Vec<String> },
    #[error("Skill '{name}' is not available in {mode} mode. Available modes: {available}.")]
    NotInMode {
        name: String,
        mode: evoflux_core::AppMode,
        available: String,
    },
    #[error(transparent)]
    Load(#[from] SkillLoadError),
    #[error("Skill '{name}' is not loaded; load it before reading its resources.")]
    NotLoaded { name: String },
    #[error(transparent)]
    Resource(#[from] ResourceError),
    #[error(
        "At most {MAX_SKILL_CALLS_PER_BATCH} skill calls are handled per batch; this call was skipped. Load fewer skills at once."
    )]
    BatchLimit,
}

fn suggest(close: &[String]) -> String {
    if close.is_empty() {
        String::new()
    } else {
        format!(" Did you mean: {}?", close.join(", "))
    }
}

impl SkillToolError {
    pub fn code(&self) -> &'static str {
        match self {
            SkillToolError::Arguments(_) => "skill/arguments-invalid",
            SkillToolError::NotFound { .. } => "skill/not-found",
            SkillToolError::NotInMode { .. } => "skill/not-in-mode",
            SkillToolError::Load(e) => e.code(),
            SkillToolError::NotLoaded { .. } => "skill/not-loaded",
            SkillToolError::Resource(e) => e.code(),
            SkillToolError::BatchLimit => "skill/batch-limit",
        }
    }

    fn into_result(self) -> ToolResult {
        ToolResult::error(format!("{self} [{}]", self.code()))
    }
}

/// The calls of the batch a skill call belongs to.
#[derive(Clone, Copy)]
pub struct Batch<'a> {
    /// Every call of the assistant message, in order.
    pub calls: &'a [ToolCall],
    /// Whether a call (by its model-visible name) goes to the
    /// skill-presented tool.
    pub is_skill_call: &'a dyn Fn(&ToolCall) -> bool,
}

impl std::fmt::Debug for Batch<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Batch")
            .field("calls", &self.calls.len())
            .finish_non_exhaustive()
    }
}

enum Action<'a> {
    List,
    Load(&'a str),
    ReadResource(&'a str, &'a str),
}

fn action(arguments: &Value) -> Result<Action<'_>, SkillToolError> {
    let name = arguments.get("skill_name").and_then(Value::as_str);
    let path = arguments.get("resource_path").and_then(Value::as_str);
    let need_name = |what: &str| {
        SkillToolError::Arguments(format!("`skill_name` is required for action `{what}`."))
    };
    match arguments.get("action").and_then(Value::as_str) {
        Some("list") => Ok(Action::List),
        Some("load") => name.map(Action::Load).ok_or_else(|| need_name("load")),
        Some("read_resource") => match (name, path) {
            (Some(n), Some(p)) => Ok(Action::ReadResource(n, p)),
            (None, _) => Err(need_name("read_resource")),
            (Some(_), None) => Err(SkillToolError::Arguments(
                "`resource_path` is required for action `read_resource`.".into(),
            )),
        },
        None => Ok(name.map_or(Action::List, Action::Load)),
        Some(other) => Err(SkillToolError::Arguments(format!(
            "unknown action `{other}`; use list, load or read_resource."
        ))),
    }
}

impl SkillRuntime {
    /// Runs one `skill` call of `batch`.
    pub fn execute_tool(&self, call: &ToolCall, batch: Batch<'_>) -> ToolResult {
        if let Some(earlier) = batch_guard(call, batch) {
            return match earlier {
                Guard::Limit => SkillToolError::BatchLimit.into_result(),
                Guard::Duplicate(id) => ToolResult::ok(format!(
                    "Same call as `{id}` in this batch; see its result."
                )),
            };
        }
        match self.run(&call.id, &call.arguments) {
            Ok(r) => r,
            Err(e) => e.into_result(),
        }
    }

    fn run(&self, call_id: &str, arguments: &Value) -> Result<ToolResult, SkillToolError> {
        match action(arguments)? {
            Action::List => {
                let records = self.records();
                let assigned = self.assigned();
                let catalog = build_catalog(
                    &records,
                    &CatalogRequest {
                        mode: self.mode(),
                        context_window_tokens: None,
                        latest_request: None,
                        assigned: &assigned,
                    },
                );
                Ok(ToolResult::ok(if catalog.text.is_empty() {
                    "No skills are available for automatic use in this mode.".to_owned()
                } else {
                    catalog.text
                }))
            }
            Action::Load(name) => {
                let record = self.lookup(name)?;
                if self.is_loaded(&record.name) {
                    return Ok(ToolResult::ok(format!(
                        "Skill '{}' is already loaded; reuse its visible instructions.",
                        record.name
                    )));
                }
                let activation = self.prepare(record)?;
                let text = activation.render();
                let durable = self.commit(
                    call_id,
                    record,
                    &activation,
                    ActivationSource::Tool,
                    text.len(),
                );
                Ok(ToolResult {
                    content: text,
                    is_error: false,
                    metadata: Some(durable.to_metadata()),
                    media: Vec::new(),
                })
            }
            Action::ReadResource(name, path) => {
                let record = self.lookup(name)?;
                if !self.is_loaded(&record.name) {
                    return Err(SkillToolError::NotLoaded {
                        name: record.name.clone(),
                    });
                }
                let resource = read_resource(&record.bundle_dir, path)?;
                Ok(ToolResult::ok(resource.render(&record.name)))
            }
        }
    }

    /// The runtime record named `name`, or the precise reason there is none.
    fn lookup(&self, name: &str) -> Result<&evoflux_skills::SkillRecord, SkillToolError> {
        if let Some(r) = self.record(name) {
            return Ok(r);
        }
        let mut named = self.candidates_named(name).peekable();
        if named.peek().is_none() {
            return Err(SkillToolError::NotFound {
                name: name.to_owned(),
                close: close_matches(name, self.all_names()),
            });
        }
        let named: Vec<_> = named.collect();
        if let Some(valid) = named.iter().find(|r| r.valid) {
            return Err(SkillToolError::NotInMode {
                name: name.to_owned(),
                mode: self.mode(),
                available: valid.modes().to_string(),
            });
        }
        // Only invalid candidates: activation reports their errors.
        let first = named[0];
        Err(match self.prepare(first) {
            Err(e) => e.into(),
            Ok(_) => SkillToolError::NotFound {
                name: name.to_owned(),
                close: Vec::new(),
            },
        })
    }
}

enum Guard {
    Limit,
    Duplicate(String),
}

fn batch_guard(call: &ToolCall, batch: Batch<'_>) -> Option<Guard> {
    let position = batch.calls.iter().position(|c| c.id == call.id)?;
    let earlier: Vec<&ToolCall> = batch.calls[..position]
        .iter()
        .filter(|c| (batch.is_skill_call)(c))
        .collect();
    let key = canonical_json(&call.arguments).ok();
    if let Some(dup) = earlier
        .iter()
        .find(|c| key.is_some() && canonical_json(&c.arguments).ok() == key)
    {
        return Some(Guard::Duplicate(dup.id.clone()));
    }
    // Distinct skill calls before this one; duplicates do not count.
    let mut distinct: Vec<String> = Vec::new();
    for c in &earlier {
        if let Ok(k) = canonical_json(&c.arguments)
            && !distinct.contains(&k)
        {
            distinct.push(k);
        }
    }
    (distinct.len() >= MAX_SKILL_CALLS_PER_BATCH).then_some(Guard::Limit)
}

/// Names similar to `name` (normalized edit distance), best first.
fn close_matches<'a>(name: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut scored: Vec<(f64, &str)> = names
        .into_iter()
        .map(|n| (similarity(name, n), n))
        .filter(|(s, _)| *s > SUGGESTION_CUTOFF)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, n)| n.to_owned())
        .collect()
}

fn similarity(a: &str, b: &str) -> f64 {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let longest = a.len().max(b.len());
    if longest == 0 {
        return 1.0;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    1.0 - prev[b.len()] as f64 / longest as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(id: &str, args: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "skill".into(),
            arguments: args,
        }
    }

    #[test]
    fn batch_guard_dedupes_and_caps_distinct_calls() {
        let mut calls: Vec<ToolCall> = (0..6)
            .map(|i| call(&format!("c{i}"), json!({"skill_name": format!("s{i}")})))
            .collect();
        calls.insert(1, call("dup", json!({"skill_name": "s0"})));
        let all = |_: &ToolCall| true;
        let batch = Batch {
            calls: &calls,
            is_skill_call: &all,
        };
        assert!(batch_guard(&calls[0], batch).is_none());
        assert!(matches!(batch_guard(&calls[1], batch), Some(Guard::Duplicate(id)) if id == "c0"));
        assert!(
            batch_guard(&calls[5], batch).is_none(),
            "the fifth distinct call runs"
        );
        assert!(matches!(batch_guard(&calls[6], batch), Some(Guard::Limit)));
    }

    #[test]
    fn actions_and_suggestions() {
        assert!(matches!(action(&json!({})), Ok(Action::List)));
        assert!(matches!(
            action(&json!({"skill_name": "a"})),
            Ok(Action::Load("a"))
        ));
        assert_eq!(
            action(&json!({"action": "read_resource", "skill_name": "a"}))
                .err()
                .map(|e| e.code()),
            Some("skill/arguments-invalid")
        );
        assert_eq!(
            close_matches("debuging", ["debugging", "testing", "writing"]),
            ["debugging"]
        );
    }
}
