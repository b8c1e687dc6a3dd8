//! `mutation-report`: shape, authorship fields and grounding against the
//! run's observed effects.
//!
//! A report that names a path the run never wrote (small models echo the
//! example path) must not be sealed as fact. With effects recorded, each
//! reported path is verified (written), refused (its only write was
//! refused: fail), unverified (not written but present: allowed, quality
//! cannot be `pass`) or invented (neither: fail).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::evidence::{ValidationContext, resolve};
use super::extract::extract_json_object;
use super::kind::ResultContract;
use super::validate::{Checked, Quality, RESULT_COMMIT_MESSAGE_MAX_BYTES, only_keys, typed_check};

const SHAPE: &str = "Mutation result must carry mutatedPaths and validations";

const EMPTY_VALIDATIONS: &str = "Mutation result must carry typed validation results: \
validations was empty. Emit one entry per check this run actually made, each shaped like \
{\"name\":\"npm test\",\"passed\":true,\"evidence\":\"exit 0\"}. A run that only read files \
still names the read and cites what it saw.";

const MALFORMED_VALIDATIONS: &str = "Mutation result must carry typed validation results: every \
validations entry is shaped like {\"name\":\"npm test\",\"passed\":true,\"evidence\":\"exit \
0\"}, with a string name, a boolean passed, a string evidence, and no other keys.";

/// Checks an optional authored field; `Ok(None)` when not authored.
fn authored(m: &Map<String, Value>, field: &str) -> Result<Option<String>, String> {
    match m.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            if s.len() > RESULT_COMMIT_MESSAGE_MAX_BYTES {
                return Err(format!(
                    "{field} must be at most {RESULT_COMMIT_MESSAGE_MAX_BYTES} bytes"
                ));
            }
            if s.chars()
                .any(|c| (c.is_control() && !matches!(c, '\t' | '\n' | '\r')) || c == '\u{7f}')
            {
                return Err(format!("{field} must not contain control characters"));
            }
            let t = s.replace("\r\n", "\n").replace('\r', "\n");
            let t = t.trim();
            Ok((!t.is_empty()).then(|| t.to_owned()))
        }
        Some(_) => Err(format!("{field} must be a string when present")),
    }
}

fn write_set(cwd: &Path, written: &[PathBuf]) -> String {
    if written.is_empty() {
        return "this run wrote nothing".to_owned();
    }
    let base = resolve(cwd, Path::new("."));
    let mut rel: Vec<String> = written
        .iter()
        .map(|p| {
            let abs = resolve(cwd, p);
            abs.strip_prefix(&base)
                .map_or_else(|_| abs.display().to_string(), |r| r.display().to_string())
        })
        .collect();
    rel.sort();
    rel.dedup();
    let more = rel.len().saturating_sub(8);
    rel.truncate(8);
    if more > 0 {
        format!("this run wrote {} (+{more} more)", rel.join(", "))
    } else {
        format!("this run wrote {}", rel.join(", "))
    }
}

pub(crate) fn validate_mutation(output: Option<&str>, ctx: &ValidationContext<'_>) -> Checked {
    let m = match extract_json_object(output) {
        Ok(m) => m,
        Err(e) => return Checked::fail(Quality::Unmeasured, e.to_string()),
    };
    if !only_keys(
        &m,
        &["mutatedPaths", "validations", "commitMessage", "summary"],
    ) {
        return Checked::fail(Quality::Unmeasured, SHAPE);
    }
    let paths: Option<Vec<String>> = match m.get("mutatedPaths") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .filter(|s| !s.trim().is_empty())
                    .map(str::to_owned)
            })
            .collect(),
        _ => None,
    };
    let Some(paths) = paths else {
        return Checked::fail(Quality::Unmeasured, SHAPE);
    };
    for field in ["commitMessage", "summary"] {
        if let Err(reason) = authored(&m, field) {
            return Checked::fail(Quality::Unmeasured, reason);
        }
    }
    let checks = match m.get("validations") {
        Some(Value::Array(v)) if v.is_empty() => {
            return Checked::fail(Quality::Unmeasured, EMPTY_VALIDATIONS);
        }
        Some(Value::Array(v)) => v.iter().map(typed_check).collect::<Option<Vec<_>>>(),
        _ => None,
    };
    let Some(checks) = checks else {
        return Checked::fail(Quality::Unmeasured, MALFORMED_VALIDATIONS);
    };
    let self_failed = checks.iter().any(|c| !c.1);
    let value = Value::Object(m.clone());
    let Some(effects) = &ctx.evidence.effects else {
        return Checked::pass(
            if self_failed {
                Quality::Fail
            } else {
                Quality::Pass
            },
            value,
        );
    };
    let written: Vec<PathBuf> = effects
        .written_paths
        .iter()
        .map(|p| resolve(ctx.cwd, p))
        .collect();
    let refused: Vec<PathBuf> = effects
        .refused_paths
        .iter()
        .map(|p| resolve(ctx.cwd, p))
        .collect();
    let mut unverified = false;
    for p in &paths {
        let abs = resolve(ctx.cwd, Path::new(p));
        if written.contains(&abs) {
            continue;
        }
        if refused.contains(&abs) {
            return Checked::fail(
                Quality::Unmeasured,
                format!(
                    "Mutation result names a path whose only write this run attempted was \
                     refused: {p} ({})",
                    write_set(ctx.cwd, &effects.written_paths)
                ),
            );
        }
        if ctx.filesystem.path_exists(&abs) {
            unverified = true;
        } else {
            return Checked::fail(
                Quality::Unmeasured,
                format!(
                    "Mutation result names a path this run never wrote and that does not exist: \
                     {p} ({})",
                    write_set(ctx.cwd, &effects.written_paths)
                ),
            );
        }
    }
    let quality = if self_failed {
        Quality::Fail
    } else if !unverified && !effects.validation_commands.is_empty() {
        Quality::Pass
    } else {
        Quality::Unmeasured
    };
    Checked::pass(quality, value)
}

/// The commit message and summary a result authored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultAuthorship {
    pub commit_message: Option<String>,
    pub summary: Option<String>,
}

/// Reads `{commitMessage, summary}` (line endings normalized, trimmed,
/// blank as absent) from a `mutation-report` or `architect-plan` output;
/// `None` for other kinds or when either field is invalid.
pub fn result_contract_authorship(
    contract: &ResultContract,
    output: &str,
) -> Option<ResultAuthorship> {
    if !contract.kind.traits().authors_commit {
        return None;
    }
    let m = extract_json_object(Some(output)).ok()?;
    Some(ResultAuthorship {
        commit_message: authored(&m, "commitMessage").ok()?,
        summary: authored(&m, "summary").ok()?,
    })
}
