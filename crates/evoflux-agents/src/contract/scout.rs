//! `scout-report`: strict parsing, degraded acceptance and citation
//! grounding.
//!
//! A strict scout result is cited findings `{claim, path, line}` or a split
//! into typed subtasks. Small models miss the strict shape often, and
//! losing a whole reconnaissance run over it is worse than keeping its
//! claims as leads: when the object parses but a strict rule fails, every
//! finding with a claim is salvaged, cited ones are grounded, the rest
//! become ungrounded leads, and the result conforms with quality
//! `unmeasured`. A citation is grounded when the path stays inside the
//! workspace, the file is readable, the line exists and, when the run's
//! reads were recorded, the run actually read that line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use evoflux_core::hash::sha256_hex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::evidence::{ValidationContext, inside, resolve};
use super::extract::extract_json_object;
use super::kind::ResultContractKind;
use super::validate::{Checked, Conformance, Quality, non_empty_str, only_keys, safe_int};

/// Most subtasks a split may propose.
pub const SCOUT_MAX_SUBTASKS: usize = 4;
/// Longest subtask text, in UTF-8 bytes.
pub const SCOUT_SUBTASK_TASK_MAX_BYTES: usize = 4096;
/// Authorities a subtask may request.
pub const AGENT_AUTOMATION_AUTHORITIES: [&str; 4] = [
    "read-only",
    "verification",
    "artifact-write",
    "workspace-edit",
];

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoutFinding {
    pub claim: String,
    pub path: String,
    pub line: u32,
    /// SHA-256 of the cited file (or `directory:<rel>` for a directory),
    /// set once grounded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoutSubtask {
    pub id: String,
    pub task: String,
    pub dependencies: Vec<String>,
    pub expected_result_contract: ResultContractKind,
    pub requested_authority: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScoutReport {
    pub findings: Vec<ScoutFinding>,
    pub needs_split: bool,
    pub proposed_subtasks: Vec<ScoutSubtask>,
    /// Claims kept as leads without a grounded citation (degraded only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ungrounded_claims: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_reason: Option<String>,
}

const SHAPE_REASON: &str = "Scout result must carry findings as {claim, path, line} objects, \
needsSplit, and 0..4 typed proposed subtasks";

fn finding(v: &Value) -> Option<ScoutFinding> {
    let o = v.as_object()?;
    if o.len() != 3 {
        return None;
    }
    let line = safe_int(o.get("line")).filter(|l| *l >= 1)?;
    Some(ScoutFinding {
        claim: non_empty_str(o.get("claim"))?.to_owned(),
        path: non_empty_str(o.get("path"))?.to_owned(),
        line: u32::try_from(line).ok()?,
        content_digest: None,
    })
}

fn is_subtask_id(id: &str) -> bool {
    crate::name::is_valid_agent_name(id)
}

fn subtask(v: &Value) -> Option<ScoutSubtask> {
    let o = v.as_object()?;
    let keys = [
        "id",
        "task",
        "dependencies",
        "expectedResultContract",
        "requestedAuthority",
    ];
    if o.len() != keys.len() || !only_keys(o, &keys) {
        return None;
    }
    let id = non_empty_str(o.get("id")).filter(|i| is_subtask_id(i))?;
    let task = non_empty_str(o.get("task")).filter(|t| t.len() <= SCOUT_SUBTASK_TASK_MAX_BYTES)?;
    let deps = o.get("dependencies")?.as_array()?;
    if deps.len() > SCOUT_MAX_SUBTASKS {
        return None;
    }
    let mut dependencies = Vec::new();
    for d in deps {
        let d = non_empty_str(Some(d))?.to_owned();
        if dependencies.contains(&d) {
            return None;
        }
        dependencies.push(d);
    }
    let kind = o
        .get("expectedResultContract")?
        .as_str()
        .and_then(ResultContractKind::parse)
        .filter(|k| k.subtask_requestable())?;
    let authority = o
        .get("requestedAuthority")?
        .as_str()
        .filter(|a| AGENT_AUTOMATION_AUTHORITIES.contains(a))?;
    Some(ScoutSubtask {
        id: id.to_owned(),
        task: task.to_owned(),
        dependencies,
        expected_result_contract: kind,
        requested_authority: authority.to_owned(),
    })
}

/// Unique ids, dependencies naming other subtasks, no cycle (Kahn).
fn subtask_graph_ok(subtasks: &[ScoutSubtask]) -> bool {
    let ids: BTreeSet<&str> = subtasks.iter().map(|s| s.id.as_str()).collect();
    if ids.len() != subtasks.len() {
        return false;
    }
    if subtasks.iter().any(|s| {
        s.dependencies
            .iter()
            .any(|d| d == &s.id || !ids.contains(d.as_str()))
    }) {
        return false;
    }
    let mut indegree: BTreeMap<&str, usize> = subtasks
        .iter()
        .map(|s| (s.id.as_str(), s.dependencies.len()))
        .collect();
    let mut ready: Vec<&str> = indegree
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    let mut done = 0;
    while let Some(id) = ready.pop() {
        done += 1;
        for s in subtasks
            .iter()
            .filter(|s| s.dependencies.iter().any(|d| d == id))
        {
            if let Some(n) = indegree.get_mut(s.id.as_str()) {
                *n -= 1;
                if *n == 0 {
                    ready.push(&s.id);
                }
            }
        }
    }
    done == subtasks.len()
}

/// The strict parse, without grounding.
fn strict(m: &Map<String, Value>) -> Result<ScoutReport, &'static str> {
    if !only_keys(m, &["findings", "needsSplit", "proposedSubtasks"]) {
        return Err("Scout result has unknown fields");
    }
    let Some(Value::Array(raw_findings)) = m.get("findings") else {
        return Err(SHAPE_REASON);
    };
    let findings: Option<Vec<ScoutFinding>> = raw_findings.iter().map(finding).collect();
    let findings = findings.ok_or(SHAPE_REASON)?;
    let subtasks = match m.get("proposedSubtasks") {
        None => Vec::new(),
        Some(Value::Array(raw)) if raw.len() <= SCOUT_MAX_SUBTASKS => {
            let s: Option<Vec<ScoutSubtask>> = raw.iter().map(subtask).collect();
            let s = s.ok_or(SHAPE_REASON)?;
            if !subtask_graph_ok(&s) {
                return Err(SHAPE_REASON);
            }
            s
        }
        Some(_) => return Err(SHAPE_REASON),
    };
    let needs_split = match m.get("needsSplit") {
        None => !subtasks.is_empty(),
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err(SHAPE_REASON),
    };
    if needs_split == subtasks.is_empty() {
        return Err("Scout needsSplit must agree with proposedSubtasks");
    }
    if findings.is_empty() && !needs_split {
        return Err("Scout result must carry at least one cited finding, or set needsSplit");
    }
    if needs_split && !findings.is_empty() {
        return Err("Scout split recommendations carry typed subtasks instead of findings");
    }
    Ok(ScoutReport {
        findings,
        needs_split,
        proposed_subtasks: subtasks,
        ungrounded_claims: Vec::new(),
        degraded_reason: None,
    })
}

/// Salvages claims from an object that failed the strict parse.
fn salvage(m: &Map<String, Value>) -> Option<(Vec<ScoutFinding>, Vec<String>)> {
    let Some(Value::Array(raw)) = m.get("findings") else {
        return None;
    };
    let mut cited = Vec::new();
    let mut leads = Vec::new();
    for v in raw {
        let Some(o) = v.as_object() else { continue };
        let Some(claim) = non_empty_str(o.get("claim")) else {
            continue;
        };
        let path = non_empty_str(o.get("path"));
        let line = safe_int(o.get("line"))
            .filter(|l| *l >= 1)
            .and_then(|l| u32::try_from(l).ok());
        match (path, line) {
            (Some(path), Some(line)) => cited.push(ScoutFinding {
                claim: claim.to_owned(),
                path: path.to_owned(),
                line,
                content_digest: None,
            }),
            _ => leads.push(claim.to_owned()),
        }
    }
    (!cited.is_empty() || !leads.is_empty()).then_some((cited, leads))
}

fn render_spans(spans: &[(u32, u32)]) -> String {
    spans
        .iter()
        .map(|(a, b)| format!("{a}-{b}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Number of lines as a JS split on `\r\n|\r|\n` counts them.
fn line_count(text: &str) -> usize {
    text.replace("\r\n", "\n").split(['\n', '\r']).count()
}

/// Grounds one citation; `Ok(digest)` or the reason it fails.
pub fn ground_citation(f: &ScoutFinding, ctx: &ValidationContext<'_>) -> Result<String, String> {
    let p = &f.path;
    let abs = resolve(ctx.cwd, Path::new(p));
    if !inside(ctx.cwd, &abs) {
        return Err(format!("Scout citation path escapes the workspace: {p}"));
    }
    if ctx.filesystem.is_directory(&abs) {
        let rel = abs
            .strip_prefix(resolve(ctx.cwd, Path::new(".")))
            .map_or_else(|_| p.clone(), |r| r.to_string_lossy().into_owned());
        let rel = if rel.is_empty() { ".".to_owned() } else { rel };
        return Ok(sha256_hex(format!("directory:{rel}").as_bytes()).to_string());
    }
    let text = ctx
        .filesystem
        .read_to_string(&abs)
        .map_err(|_| format!("Scout citation cannot be read: {p}"))?;
    let line = f.line as usize;
    if line > line_count(&text) {
        return Err(format!(
            "Scout citation is past end of file: {p}:{}",
            f.line
        ));
    }
    if let Some(read) = &ctx.evidence.read_spans {
        let spans: Vec<(u32, u32)> = read
            .iter()
            .filter(|(k, _)| resolve(ctx.cwd, k) == abs)
            .flat_map(|(_, v)| v.iter().copied())
            .collect();
        if spans.is_empty() {
            return Err(format!(
                "Scout citation is not grounded in a live read: {p}:{} (this run never read that \
                 file)",
                f.line
            ));
        }
        if !spans.iter().any(|(a, b)| *a <= f.line && f.line <= *b) {
            return Err(format!(
                "Scout citation is not grounded in a live read: {p}:{} (this run read only {})",
                f.line,
                render_spans(&spans)
            ));
        }
    }
    Ok(sha256_hex(text.as_bytes()).to_string())
}

pub(crate) fn validate_scout(output: Option<&str>, ctx: &ValidationContext<'_>) -> Checked {
    let m = match extract_json_object(output) {
        Ok(m) => m,
        Err(e) => return Checked::fail(Quality::Fail, e.to_string()),
    };
    match strict(&m) {
        Ok(mut report) => {
            for f in &mut report.findings {
                match ground_citation(f, ctx) {
                    Ok(d) => f.content_digest = Some(d),
                    Err(reason) => return Checked::fail(Quality::Fail, reason),
                }
            }
            Checked {
                conformance: Conformance::Pass,
                quality: Quality::Pass,
                reason: None,
                value: None,
                scout: Some(report),
            }
        }
        Err(strict_reason) => {
            let Some((cited, mut leads)) = salvage(&m) else {
                return Checked::fail(Quality::Fail, strict_reason);
            };
            let mut findings = Vec::new();
            for mut f in cited {
                match ground_citation(&f, ctx) {
                    Ok(d) => {
                        f.content_digest = Some(d);
                        findings.push(f);
                    }
                    Err(_) => leads.push(f.claim),
                }
            }
            let reason = format!(
                "{strict_reason} (accepted as a degraded reconnaissance result; findings are \
                 leads, not validation evidence)"
            );
            Checked {
                conformance: Conformance::Pass,
                quality: Quality::Unmeasured,
                reason: Some(reason.clone()),
                value: None,
                scout: Some(ScoutReport {
                    findings,
                    needs_split: false,
                    proposed_subtasks: Vec::new(),
                    ungrounded_claims: leads,
                    degraded_reason: Some(reason),
                }),
            }
        }
    }
}

/// A strict, non-degraded scout result (what a `from_scout` continuation
/// may consume); `None` for prose, degraded or malformed results.
pub fn parse_scout_result(output: &str) -> Option<ScoutReport> {
    let m = extract_json_object(Some(output)).ok()?;
    strict(&m).ok()
}
