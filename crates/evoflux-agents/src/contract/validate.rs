//! Validation of a worker's terminal output against its contract.
//!
//! Conformance (did the output satisfy the contract) and quality (what
//! the result says about the work: `pass`, `fail`, or `unmeasured` when
//! nothing was measured) are separate axes; a third conformance value,
//! `not-reached`, records a run that never produced a terminal result
//! (crash, abort, loop guard), which is not the worker's failure.

use std::path::Path;

use evoflux_core::hash::{content_hash, sha256_hex};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::evidence::{ValidationContext, resolve};
use super::extract::extract_json_object;
use super::kind::{ResultContract, ResultContractKind};
use super::mutation::validate_mutation;
use super::scout::{ScoutReport, validate_scout};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Conformance {
    Pass,
    Fail,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Quality {
    Pass,
    Fail,
    Unmeasured,
}

impl Quality {
    pub const fn as_str(self) -> &'static str {
        match self {
            Quality::Pass => "pass",
            Quality::Fail => "fail",
            Quality::Unmeasured => "unmeasured",
        }
    }
}

/// What a per-kind validator decided.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checked {
    pub conformance: Conformance,
    pub quality: Quality,
    pub reason: Option<String>,
    pub value: Option<Value>,
    pub scout: Option<ScoutReport>,
}

impl Checked {
    pub(crate) fn pass(quality: Quality, value: Value) -> Checked {
        Checked {
            conformance: Conformance::Pass,
            quality,
            reason: None,
            value: Some(value),
            scout: None,
        }
    }

    pub(crate) fn fail(quality: Quality, reason: impl Into<String>) -> Checked {
        Checked {
            conformance: Conformance::Fail,
            quality,
            reason: Some(reason.into()),
            value: None,
            scout: None,
        }
    }
}

/// The outcome of validating one output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultContractValidation {
    pub kind: ResultContractKind,
    pub conformance: Conformance,
    pub quality: Quality,
    /// `agent-result-contract:<kind>:<contract digest>`.
    pub source_id: String,
    /// Digest of `{contract, value}` on success, `{contract, reason}` on
    /// failure.
    pub validator_digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The accepted result, normalized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scout: Option<ScoutReport>,
}

/// The digest of a contract: SHA-256 of its canonical JSON.
pub fn result_contract_digest(contract: &ResultContract) -> String {
    digest(&json!(contract))
}

fn digest(v: &Value) -> String {
    content_hash(v).map_or_else(|_| sha256_hex(b"").to_string(), |h| h.to_string())
}

pub fn result_contract_source_id(contract: &ResultContract) -> String {
    format!(
        "agent-result-contract:{}:{}",
        contract.kind,
        result_contract_digest(contract)
    )
}

// ---- shared shape helpers -------------------------------------------------

pub(crate) fn only_keys(map: &Map<String, Value>, allowed: &[&str]) -> bool {
    map.keys().all(|k| allowed.contains(&k.as_str()))
}

pub(crate) fn non_empty_str(v: Option<&Value>) -> Option<&str> {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s),
        _ => None,
    }
}

pub(crate) fn string_array(v: Option<&Value>) -> Option<Vec<String>> {
    match v {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => None,
    }
}

/// A typed check `{name, passed, evidence}` with no other keys.
pub(crate) fn typed_check(v: &Value) -> Option<(String, bool, String)> {
    let m = v.as_object()?;
    if !only_keys(m, &["name", "passed", "evidence"]) || m.len() != 3 {
        return None;
    }
    Some((
        non_empty_str(m.get("name"))?.to_owned(),
        m.get("passed")?.as_bool()?,
        m.get("evidence")?.as_str()?.to_owned(),
    ))
}

pub(crate) fn safe_int(v: Option<&Value>) -> Option<i64> {
    let n = v?.as_i64()?;
    (n.unsigned_abs() < (1u64 << 53)).then_some(n)
}

// ---- per-kind validators --------------------------------------------------

fn architect_plan(contract: &ResultContract, ctx: &ValidationContext<'_>) -> Checked {
    let rel = contract.path.clone().unwrap_or_default();
    let path = resolve(ctx.cwd, Path::new(&rel));
    match ctx.filesystem.read_to_string(&path) {
        Ok(text) if !text.trim().is_empty() => Checked::pass(
            Quality::Unmeasured,
            json!({"path": rel, "artifactDigest": sha256_hex(text.as_bytes()).to_string()}),
        ),
        _ => Checked::fail(
            Quality::Unmeasured,
            format!("required plan artifact is missing or empty: {rel}"),
        ),
    }
}

fn verifier(m: &Map<String, Value>) -> Checked {
    const SHAPE: &str = "Verifier result must carry pass or fail verdict and checks";
    if !only_keys(m, &["verdict", "checks"]) {
        return Checked::fail(Quality::Fail, SHAPE);
    }
    let verdict = match m.get("verdict").and_then(Value::as_str) {
        Some("pass") => true,
        Some("fail") => false,
        _ => return Checked::fail(Quality::Fail, SHAPE),
    };
    let Some(Value::Array(checks)) = m.get("checks") else {
        return Checked::fail(Quality::Fail, SHAPE);
    };
    let typed: Option<Vec<_>> = checks.iter().map(typed_check).collect();
    let Some(typed) = typed.filter(|t| !t.is_empty()) else {
        return Checked::fail(Quality::Fail, SHAPE);
    };
    if typed.iter().all(|c| c.1) != verdict {
        return Checked::fail(
            Quality::Fail,
            "Verifier verdict must agree with every typed check",
        );
    }
    Checked::pass(
        if verdict {
            Quality::Pass
        } else {
            Quality::Fail
        },
        Value::Object(m.clone()),
    )
}

fn debugger(m: &Map<String, Value>) -> Checked {
    let ok = only_keys(m, &["diagnosis", "reproduction", "evidence"])
        && non_empty_str(m.get("diagnosis")).is_some()
        && matches!(
            m.get("reproduction").and_then(Value::as_str),
            Some("reproduced" | "not-reproduced" | "unknown")
        )
        && string_array(m.get("evidence")).is_some();
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Unmeasured,
            "Debugger result must carry diagnosis, reproduction status, and evidence without a \
             verdict",
        )
    }
}

fn research(m: &Map<String, Value>, network_allowed: bool) -> Checked {
    let source = m.get("source").and_then(Value::as_str);
    let (Some(source @ ("local" | "external")), Some(Value::Array(findings)), true) = (
        source,
        m.get("findings"),
        only_keys(m, &["source", "findings"]),
    ) else {
        return Checked::fail(
            Quality::Unmeasured,
            "Research result must distinguish local or external sources and carry findings",
        );
    };
    for f in findings {
        let Some(f) = f.as_object() else {
            return Checked::fail(Quality::Unmeasured, "Research findings must be objects");
        };
        let ok = only_keys(f, &["claim", "evidence"])
            && non_empty_str(f.get("claim")).is_some()
            && non_empty_str(f.get("evidence")).is_some();
        if !ok {
            return Checked::fail(
                Quality::Unmeasured,
                "Research findings must carry claim and evidence",
            );
        }
    }
    if source == "external" && !network_allowed {
        return Checked::fail(
            Quality::Unmeasured,
            "external research requires an allowed network posture",
        );
    }
    Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
}

fn provenance(m: &Map<String, Value>) -> Checked {
    let keys = ["confirmedFacts", "missingEvidence", "nextInspections"];
    let ok = only_keys(m, &keys) && keys.iter().all(|k| string_array(m.get(*k)).is_some());
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Unmeasured,
            "Provenance result must carry confirmedFacts, missingEvidence, and nextInspections",
        )
    }
}

fn handbook(m: &Map<String, Value>) -> Checked {
    let sections_ok = match m.get("sections") {
        Some(Value::Array(s)) => s.iter().all(|sec| {
            sec.as_object().is_some_and(|o| {
                o.len() == 2
                    && non_empty_str(o.get("title")).is_some()
                    && o.get("body").is_some_and(Value::is_string)
            })
        }),
        _ => false,
    };
    let ok = m.len() == 5
        && non_empty_str(m.get("projectName")).is_some()
        && non_empty_str(m.get("identity")).is_some()
        && string_array(m.get("conventions")).is_some()
        && string_array(m.get("invariants")).is_some()
        && sections_ok;
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Fail,
            "context handbook result must carry projectName, identity, conventions[], \
             invariants[], and sections[{title, body}] and nothing else",
        )
    }
}

/// A parsed code report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CodeReport {
    pub passed: bool,
    pub exit_code: i64,
    pub checks: Vec<CodeCheck>,
    pub artifact_paths: Vec<String>,
    pub output_excerpt: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeCheck {
    pub name: String,
    pub passed: bool,
    pub evidence: String,
}

fn code_report_from(m: &Map<String, Value>) -> Result<CodeReport, &'static str> {
    const SHAPE: &str =
        "Code result must carry passed, integer exitCode, checks, artifactPaths, and outputExcerpt";
    if !only_keys(
        m,
        &[
            "passed",
            "exitCode",
            "checks",
            "artifactPaths",
            "outputExcerpt",
        ],
    ) {
        return Err(SHAPE);
    }
    let (Some(passed), Some(exit_code), Some(artifact_paths), Some(output_excerpt)) = (
        m.get("passed").and_then(Value::as_bool),
        safe_int(m.get("exitCode")),
        string_array(m.get("artifactPaths")),
        m.get("outputExcerpt").and_then(Value::as_str),
    ) else {
        return Err(SHAPE);
    };
    let Some(Value::Array(raw)) = m.get("checks") else {
        return Err(SHAPE);
    };
    let checks: Option<Vec<CodeCheck>> = raw
        .iter()
        .map(|c| {
            typed_check(c).map(|(name, passed, evidence)| CodeCheck {
                name,
                passed,
                evidence,
            })
        })
        .collect();
    let Some(checks) = checks.filter(|c| !c.is_empty()) else {
        return Err("Code result must carry typed checks");
    };
    if passed != (exit_code == 0) || passed != checks.iter().all(|c| c.passed) {
        return Err("Code result passed must agree with its exit code and every check");
    }
    Ok(CodeReport {
        passed,
        exit_code,
        checks,
        artifact_paths,
        output_excerpt: output_excerpt.to_owned(),
    })
}

/// Parses a code-step runner's report from text (fenced JSON accepted);
/// `None` unless it validates.
pub fn parse_code_report(output: &str) -> Option<CodeReport> {
    let m = extract_json_object(Some(output)).ok()?;
    code_report_from(&m).ok()
}

fn code(m: &Map<String, Value>) -> Checked {
    match code_report_from(m) {
        // A red suite still conforms: the report is truthful about it.
        Ok(_) => Checked::pass(Quality::Unmeasured, Value::Object(m.clone())),
        Err(reason) => Checked::fail(Quality::Unmeasured, reason),
    }
}

fn council_report(m: &Map<String, Value>) -> Checked {
    let member_ok = |v: &Value| {
        let Some(o) = v.as_object() else { return false };
        only_keys(
            o,
            &["label", "runId", "round", "answer", "verdict", "failed"],
        ) && non_empty_str(o.get("label")).is_some()
            && non_empty_str(o.get("runId")).is_some()
            && safe_int(o.get("round")).is_some_and(|r| r >= 1)
            && o.get("answer").is_some_and(Value::is_string)
            && o.get("verdict").is_none_or(Value::is_string)
            && o.get("failed").is_none_or(|f| {
                f.as_object()
                    .is_some_and(|f| f.len() == 1 && f.get("reason").is_some_and(Value::is_string))
            })
    };
    let synthesis_ok = |v: &Value| {
        let Some(o) = v.as_object() else { return false };
        only_keys(o, &["kind", "text", "verdict", "tally", "judgeRunId"])
            && matches!(
                o.get("kind").and_then(Value::as_str),
                Some("none" | "judge" | "vote")
            )
            && o.get("text").is_none_or(Value::is_string)
            && o.get("verdict").is_none_or(Value::is_string)
            && o.get("judgeRunId").is_none_or(Value::is_string)
            && o.get("tally").is_none_or(|t| {
                t.as_object().is_some_and(|t| {
                    t.values()
                        .all(|n| safe_int(Some(n)).is_some_and(|n| n >= 0))
                })
            })
    };
    let ok = only_keys(m, &["members", "synthesis"])
        && matches!(m.get("members"), Some(Value::Array(a)) if !a.is_empty() && a.iter().all(member_ok))
        && m.get("synthesis").is_some_and(synthesis_ok);
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(Quality::Fail, "council-report is malformed")
    }
}

fn delegation_plan(m: &Map<String, Value>) -> Checked {
    let task_ok = |v: &Value| {
        let Some(o) = v.as_object() else { return false };
        only_keys(
            o,
            &["id", "agent", "description", "depends_on", "writes", "mode"],
        ) && non_empty_str(o.get("id")).is_some()
            && non_empty_str(o.get("agent")).is_some()
            && non_empty_str(o.get("description")).is_some()
            && string_array(o.get("depends_on")).is_some()
            && string_array(o.get("writes")).is_some()
            && o.get("mode")
                .is_none_or(|m| matches!(m.as_str(), Some("sequential" | "parallel")))
    };
    let ok = only_keys(m, &["tasks"])
        && matches!(m.get("tasks"), Some(Value::Array(t)) if !t.is_empty() && t.iter().all(task_ok));
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Fail,
            "delegation-plan must carry tasks with id, agent, description, depends_on, writes, \
             and optional mode",
        )
    }
}

fn oracle(m: &Map<String, Value>) -> Checked {
    let ok = only_keys(
        m,
        &["verdict", "challenge", "changesMyMind", "citedDecisions"],
    ) && non_empty_str(m.get("verdict")).is_some()
        && m.get("challenge").is_some_and(Value::is_string)
        && m.get("changesMyMind").is_some_and(Value::is_string)
        && string_array(m.get("citedDecisions")).is_some();
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Unmeasured,
            "Oracle result must carry verdict, challenge, changesMyMind, and citedDecisions",
        )
    }
}

/// The longest ballot verdict, in UTF-8 bytes.
pub const COUNCIL_BALLOT_VERDICT_MAX_BYTES: usize = 64;

fn ballot(m: &Map<String, Value>) -> Checked {
    let verdict_ok = non_empty_str(m.get("verdict"))
        .is_some_and(|v| !v.contains(['\n', '\r']) && v.len() <= COUNCIL_BALLOT_VERDICT_MAX_BYTES);
    let ok = m.len() == 2 && verdict_ok && non_empty_str(m.get("text")).is_some();
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Unmeasured,
            format!(
                "council-ballot must carry exactly verdict (one line, at most \
                 {COUNCIL_BALLOT_VERDICT_MAX_BYTES} bytes) and text"
            ),
        )
    }
}

fn world_knowledge(m: &Map<String, Value>) -> Checked {
    let findings_ok = match m.get("findings") {
        Some(Value::Array(f)) => f.iter().all(|x| {
            x.as_object().is_some_and(|o| {
                only_keys(o, &["claim", "evidence"])
                    && non_empty_str(o.get("claim")).is_some()
                    && non_empty_str(o.get("evidence")).is_some()
            })
        }),
        _ => false,
    };
    let ok = only_keys(m, &["answer", "findings"])
        && non_empty_str(m.get("answer")).is_some()
        && findings_ok;
    if ok {
        Checked::pass(Quality::Unmeasured, Value::Object(m.clone()))
    } else {
        Checked::fail(
            Quality::Unmeasured,
            "World-knowledge result must carry answer and findings of {claim, evidence}",
        )
    }
}

/// Validates `output` against `contract`.
pub fn validate_result_contract(
    contract: &ResultContract,
    output: Option<&str>,
    ctx: &ValidationContext<'_>,
) -> ResultContractValidation {
    let json_kind = |f: &dyn Fn(&Map<String, Value>) -> Checked, fail_quality: Quality| {
        match extract_json_object(output) {
            Ok(m) => f(&m),
            Err(e) => Checked::fail(fail_quality, e.to_string()),
        }
    };
    let checked = match contract.kind {
        ResultContractKind::ArchitectPlan => architect_plan(contract, ctx),
        ResultContractKind::ScoutReport => validate_scout(output, ctx),
        ResultContractKind::VerifierReport => json_kind(&verifier, Quality::Fail),
        ResultContractKind::DebuggerReport => json_kind(&debugger, Quality::Unmeasured),
        ResultContractKind::ResearchReport => {
            json_kind(&|m| research(m, ctx.network_allowed), Quality::Unmeasured)
        }
        ResultContractKind::MutationReport => validate_mutation(output, ctx),
        ResultContractKind::ProvenanceReport => json_kind(&provenance, Quality::Unmeasured),
        ResultContractKind::ExternalDelegation | ResultContractKind::ArtifactReport => {
            Checked::pass(
                Quality::Unmeasured,
                Value::String(output.unwrap_or_default().to_owned()),
            )
        }
        ResultContractKind::ContextHandbook => json_kind(&handbook, Quality::Fail),
        ResultContractKind::CodeReport => json_kind(&code, Quality::Unmeasured),
        ResultContractKind::CouncilReport => json_kind(&council_report, Quality::Fail),
        ResultContractKind::DelegationPlan => json_kind(&delegation_plan, Quality::Fail),
        ResultContractKind::OracleReport => json_kind(&oracle, Quality::Unmeasured),
        ResultContractKind::CouncilBallot => json_kind(&ballot, Quality::Unmeasured),
        ResultContractKind::WorldKnowledgeReport => {
            json_kind(&world_knowledge, Quality::Unmeasured)
        }
    };
    let contract_json = json!(contract);
    let validator_digest = match (&checked.conformance, &checked.reason) {
        (Conformance::Fail, reason) => {
            digest(&json!({"contract": contract_json, "reason": reason}))
        }
        (Conformance::Pass, _) => {
            let value = checked
                .value
                .clone()
                .or_else(|| checked.scout.as_ref().map(|s| json!(s)))
                .unwrap_or(Value::Null);
            digest(&json!({"contract": contract_json, "value": value}))
        }
    };
    ResultContractValidation {
        kind: contract.kind,
        conformance: checked.conformance,
        quality: checked.quality,
        source_id: result_contract_source_id(contract),
        validator_digest,
        reason: checked.reason,
        value: checked.value,
        scout: checked.scout,
    }
}

/// Conformance of a sealed fact, including runs that never reached a
/// terminal result.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FactConformance {
    Pass,
    Fail,
    NotReached,
}

/// What a receipt seals about a run's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResultContractFact {
    pub conformance: FactConformance,
    pub quality: Quality,
    pub source_id: String,
    pub validator_digest: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecipeResultOutcome {
    /// False when the run never reached its terminal result.
    pub applicable: bool,
    pub fact: ResultContractFact,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation: Option<ResultContractValidation>,
}

/// Validates a recipe run's output. `None` when the run has no contract.
/// A run that never reached its terminal result is `not-reached` with
/// quality `unmeasured`: an infrastructure failure is not a quality
/// failure.
pub fn validate_recipe_result(
    contract: Option<&ResultContract>,
    output: Option<&str>,
    reached_terminal_result: bool,
    ctx: &ValidationContext<'_>,
) -> Option<RecipeResultOutcome> {
    let contract = contract?;
    if !reached_terminal_result {
        return Some(RecipeResultOutcome {
            applicable: false,
            fact: ResultContractFact {
                conformance: FactConformance::NotReached,
                quality: Quality::Unmeasured,
                source_id: result_contract_source_id(contract),
                validator_digest: digest(&json!({"contract": contract, "reached": false})),
            },
            validation: None,
        });
    }
    let v = validate_result_contract(contract, output, ctx);
    Some(RecipeResultOutcome {
        applicable: true,
        fact: ResultContractFact {
            conformance: match v.conformance {
                Conformance::Pass => FactConformance::Pass,
                Conformance::Fail => FactConformance::Fail,
            },
            quality: v.quality,
            source_id: v.source_id.clone(),
            validator_digest: v.validator_digest.clone(),
        },
        validation: Some(v),
    })
}

/// The longest commit message or summary a result may author.
pub const RESULT_COMMIT_MESSAGE_MAX_BYTES: usize = 1000;

/// Room for the rest of a mutation report (paths and validations).
pub const MUTATION_REPORT_HEADROOM_BYTES: usize = 16 * 1024;

/// The sealed-output bound of a contract in bytes: for a mutation report
/// the summary and commit message at their maximum plus headroom; `None`
/// for kinds with no bound of their own.
pub const fn result_contract_output_bytes(contract: &ResultContract) -> Option<usize> {
    contract.kind.traits().output_bytes
}
