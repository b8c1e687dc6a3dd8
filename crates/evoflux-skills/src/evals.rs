//! Activation evals: `evals/trigger-cases.json` and the deterministic
//! ranking run over the bundled catalog.
//!
//! A trigger-cases file lists requests that should load its skill
//! (positives) and near misses that should not (negatives). The fixtures
//! are control-plane artifacts: they never enter model context and are
//! never readable as task resources. Coding workflows may also pin the
//! structural operation, the trajectory and the behaviours that must not
//! follow; malformed metadata is rejected so a stale fixture cannot pass
//! silently.
//!
//! [`run_evals`] asks the same question the Tier-1 catalog asks: given the
//! request, which eligible skill ranks first? It uses the catalog's ranking
//! ([`crate::rank::rank`]) and never a model, so the result is reproducible
//! and cheap enough for CI. A case ranks the bundled skills eligible in any
//! of its skill's modes (the skills a catalog could show beside it): a
//! positive hits when its skill ranks first, a negative when it does not.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use evoflux_core::{Diagnostic, Diagnostics, Severity};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::bundled::BundledSkill;
use crate::modes::ModeSet;
use crate::name::BundleName;
use crate::rank::{RankDoc, rank};
use crate::validate::{ValidationLevel, check_skill_text};

/// Where the cases live inside a bundle.
pub const TRIGGER_CASES_FILE: &str = "evals/trigger-cases.json";
/// Largest trigger-cases file read (256 KiB): fixtures are short requests.
pub const MAX_TRIGGER_CASES_BYTES: u64 = 256 * 1024;

/// The keys a case may carry; anything else is a typo or a stale format.
const CASE_KEYS: [&str; 7] = [
    "query",
    "prompt",
    "should_trigger",
    "near_miss",
    "expected_operation",
    "expected_trajectory",
    "forbidden_behaviors",
];

/// The structural operation a Coding workflow is expected to run next:
/// one of the `code_context` tool's operations (the one list, in
/// evoflux-core).
pub use evoflux_core::code_operation::CodeOperation;

/// One well-formed case.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TriggerCase {
    /// The user request (`query` or `prompt` in the file).
    pub request: String,
    /// Whether the skill should be picked for the request.
    pub should_trigger: bool,
    /// A negative that deliberately resembles a positive.
    pub near_miss: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_operation: Option<CodeOperation>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub expected_trajectory: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub forbidden_behaviors: Vec<String>,
}

/// The result of checking one trigger-cases file: the well-formed cases
/// and a diagnostic for every problem (never fail-fast).
#[derive(Debug, Clone, Default)]
pub struct TriggerCasesCheck {
    pub cases: Vec<TriggerCase>,
    pub diagnostics: Diagnostics,
}

impl TriggerCasesCheck {
    /// Whether the file may be used: no error anywhere. A file with one bad
    /// case is rejected as a whole so a partial run never looks complete.
    pub fn is_valid(&self) -> bool {
        !self.diagnostics.has_errors()
    }

    pub fn positives(&self) -> usize {
        self.cases.iter().filter(|c| c.should_trigger).count()
    }

    pub fn negatives(&self) -> usize {
        self.cases.iter().filter(|c| !c.should_trigger).count()
    }
}

/// Reads and checks a trigger-cases file on disk (an author's bundle),
/// refusing oversize files without reading them whole.
pub fn read_trigger_cases(path: &Path) -> TriggerCasesCheck {
    let mut out = TriggerCasesCheck::default();
    let unreadable = |e: std::io::Error| {
        Diagnostic::error(
            "skill/evals-unreadable",
            format!("cannot read trigger cases: {e}"),
        )
        .with_file(path)
    };
    let mut bytes = Vec::new();
    let read = File::open(path).and_then(|f| {
        f.take(MAX_TRIGGER_CASES_BYTES + 1)
            .read_to_end(&mut bytes)
            .map(|_| ())
    });
    if let Err(e) = read {
        out.diagnostics.push(unreadable(e));
        return out;
    }
    if bytes.len() as u64 > MAX_TRIGGER_CASES_BYTES {
        out.diagnostics.push(
            Diagnostic::error(
                "skill/evals-too-large",
                format!(
                    "trigger cases exceed {} KiB: keep fixtures to short requests",
                    MAX_TRIGGER_CASES_BYTES / 1024
                ),
            )
            .with_file(path),
        );
        return out;
    }
    match String::from_utf8(bytes) {
        Ok(text) => check_trigger_cases(&text, path),
        Err(_) => {
            out.diagnostics.push(
                Diagnostic::error("skill/evals-unreadable", "trigger cases are not UTF-8")
                    .with_file(path),
            );
            out
        }
    }
}

/// Parses and validates the text of a trigger-cases file. `file` only
/// locates diagnostics (embedded files pass their slot path).
///
/// Shape: an array of cases, or `{"cases": [...]}`. A case is
/// `{query|prompt, should_trigger, near_miss?, expected_operation?,
/// expected_trajectory?, forbidden_behaviors?}` with no other key.
pub fn check_trigger_cases(text: &str, file: &Path) -> TriggerCasesCheck {
    let mut out = TriggerCasesCheck::default();
    if let Err(e) = evoflux_core::nesting::check_json(text) {
        out.diagnostics.push(e.to_diagnostic(file));
        return out;
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let line = u32::try_from(e.line()).unwrap_or(u32::MAX);
            out.diagnostics.push(
                Diagnostic::error(
                    "skill/evals-invalid-json",
                    format!("trigger cases are not valid JSON: {e}"),
                )
                .with_file(file)
                .with_line(line),
            );
            return out;
        }
    };
    let (items, prefix) = match &value {
        Value::Array(items) => (items, ""),
        Value::Object(map) => {
            for key in map.keys().filter(|k| k.as_str() != "cases") {
                out.diagnostics.push(
                    Diagnostic::error(
                        "skill/evals-unknown-field",
                        format!("unknown top-level key `{key}`: only `cases` is allowed"),
                    )
                    .with_file(file)
                    .with_field(key.clone()),
                );
            }
            match map.get("cases") {
                Some(Value::Array(items)) => (items, "cases"),
                Some(_) => {
                    out.diagnostics
                        .push(shape_error(file, "`cases` must be an array"));
                    return out;
                }
                None => {
                    out.diagnostics.push(shape_error(
                        file,
                        "an object of trigger cases needs a `cases` array",
                    ));
                    return out;
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            out.diagnostics.push(shape_error(
                file,
                "trigger cases must be an array of cases or an object with a `cases` array",
            ));
            return out;
        }
    };

    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("{prefix}[{i}]");
        let Value::Object(case) = item else {
            out.diagnostics.push(
                Diagnostic::error("skill/evals-case-invalid", "a case must be a JSON object")
                    .with_file(file)
                    .with_field(at),
            );
            continue;
        };
        let before = out.diagnostics.count(Severity::Error);
        let parsed = check_case(case, file, &at, &mut out.diagnostics);
        if let Some(case) = parsed
            && out.diagnostics.count(Severity::Error) == before
        {
            let key = collapse(&case.request).to_lowercase();
            if seen.insert(key) {
                out.cases.push(case);
            } else {
                out.diagnostics.push(
                    Diagnostic::error(
                        "skill/evals-duplicate-request",
                        format!(
                            "the request `{}` appears more than once: keep one case per request",
                            case.request
                        ),
                    )
                    .with_file(file)
                    .with_field(format!("{at}.{}", request_key(item))),
                );
            }
        }
    }

    if !out.diagnostics.has_errors() {
        let missing = match (out.positives() == 0, out.negatives() == 0) {
            (true, true) => Some("no cases"),
            (true, false) => Some("no positive case (`should_trigger: true`)"),
            (false, true) => Some("no negative case (`should_trigger: false`)"),
            (false, false) => None,
        };
        if let Some(what) = missing {
            out.diagnostics.push(
                Diagnostic::error(
                    "skill/evals-unbalanced",
                    format!("trigger cases have {what}: add positives and near-miss negatives"),
                )
                .with_file(file)
                .with_field(if prefix.is_empty() { "[]" } else { prefix }),
            );
        }
    }
    out
}

/// The key a case spelled its request with.
fn request_key(case: &Value) -> &'static str {
    match case.get("prompt") {
        Some(_) => "prompt",
        None => "query",
    }
}

fn shape_error(file: &Path, msg: &str) -> Diagnostic {
    Diagnostic::error("skill/evals-shape-invalid", msg.to_owned()).with_file(file)
}

/// Checks one case object, pushing a diagnostic per problem. Returns the
/// case when its required parts could be read (the caller drops it if any
/// error was pushed).
fn check_case(
    case: &Map<String, Value>,
    file: &Path,
    at: &str,
    diags: &mut Diagnostics,
) -> Option<TriggerCase> {
    let field = |name: &str| format!("{at}.{name}");
    let err = |code: &'static str, name: &str, msg: String| {
        Diagnostic::error(code, msg)
            .with_file(file)
            .with_field(field(name))
    };

    for key in case.keys().filter(|k| !CASE_KEYS.contains(&k.as_str())) {
        diags.push(err(
            "skill/evals-unknown-field",
            key,
            format!(
                "unknown key `{key}` in a case; allowed: {}",
                CASE_KEYS.join(", ")
            ),
        ));
    }

    // The request: exactly one of `query` and `prompt`, a non-empty string.
    let request = match (case.get("query"), case.get("prompt")) {
        (Some(_), Some(_)) => {
            diags.push(err(
                "skill/evals-request-conflict",
                "prompt",
                "a case has both `query` and `prompt`: keep one".to_owned(),
            ));
            None
        }
        (None, None) => {
            diags.push(err(
                "skill/evals-request-missing",
                "query",
                "a case needs the request as `query` (or `prompt`)".to_owned(),
            ));
            None
        }
        (Some(v), None) => request_text(v, "query", &err, diags),
        (None, Some(v)) => request_text(v, "prompt", &err, diags),
    };

    let should_trigger = match case.get("should_trigger") {
        Some(Value::Bool(b)) => Some(*b),
        None => {
            diags.push(err(
                "skill/evals-should-trigger-missing",
                "should_trigger",
                "a case needs `should_trigger: true` or `false`".to_owned(),
            ));
            None
        }
        Some(_) => {
            diags.push(err(
                "skill/evals-field-invalid",
                "should_trigger",
                "`should_trigger` must be true or false".to_owned(),
            ));
            None
        }
    };

    let near_miss = match case.get("near_miss") {
        None => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            diags.push(err(
                "skill/evals-field-invalid",
                "near_miss",
                "`near_miss` must be true or false".to_owned(),
            ));
            false
        }
    };

    let expected_operation = match case.get("expected_operation") {
        None => None,
        Some(Value::String(s)) => match CodeOperation::parse(s) {
            Some(op) => Some(op),
            None => {
                let known: Vec<&str> = CodeOperation::ALL.iter().map(|o| o.as_str()).collect();
                diags.push(err(
                    "skill/evals-operation-unknown",
                    "expected_operation",
                    format!(
                        "unknown operation `{s}`: expected one of {}",
                        known.join(", ")
                    ),
                ));
                None
            }
        },
        Some(_) => {
            diags.push(err(
                "skill/evals-field-invalid",
                "expected_operation",
                "`expected_operation` must be a string".to_owned(),
            ));
            None
        }
    };

    let expected_trajectory = string_list(
        case.get("expected_trajectory"),
        "skill/evals-trajectory-invalid",
        "expected_trajectory",
        false,
        &err,
        diags,
    );
    check_code_context_steps(&expected_trajectory, expected_operation, &err, diags);
    let forbidden_behaviors = string_list(
        case.get("forbidden_behaviors"),
        "skill/evals-forbidden-invalid",
        "forbidden_behaviors",
        true,
        &err,
        diags,
    );

    // Metadata that contradicts the polarity of the case.
    if let Some(should) = should_trigger {
        match should {
            true => {
                if near_miss {
                    diags.push(err(
                        "skill/evals-field-misplaced",
                        "near_miss",
                        "`near_miss` marks a negative case; this case should trigger".to_owned(),
                    ));
                }
            }
            false => {
                for (present, name) in [
                    (
                        case.contains_key("expected_operation"),
                        "expected_operation",
                    ),
                    (
                        case.contains_key("expected_trajectory"),
                        "expected_trajectory",
                    ),
                ] {
                    if present {
                        diags.push(err(
                            "skill/evals-field-misplaced",
                            name,
                            format!(
                                "`{name}` describes the skill's workflow, which a negative case \
                                 never runs"
                            ),
                        ));
                    }
                }
            }
        }
    }

    Some(TriggerCase {
        request: request?,
        should_trigger: should_trigger?,
        near_miss,
        expected_operation,
        expected_trajectory,
        forbidden_behaviors,
    })
}

/// A trajectory step that runs `code_context` says so as
/// `code_context <operation> <symbol>` (anything before it is free text)
/// and must be a call the tool would
/// take: a known operation and one exact symbol (or, for `outline`, one
/// path) — never a description. The first such step is the case's
/// `expected_operation` when both are given.
fn check_code_context_steps(
    steps: &[String],
    expected: Option<CodeOperation>,
    err: &impl Fn(&'static str, &str, String) -> Diagnostic,
    diags: &mut Diagnostics,
) {
    let mut first: Option<CodeOperation> = None;
    for (i, step) in steps.iter().enumerate() {
        // Wherever a step mentions the tool, what follows is the call.
        let mut words = step.split_whitespace().skip_while(|w| *w != "code_context");
        if words.next().is_none() {
            continue;
        }
        let field = format!("expected_trajectory[{i}]");
        let op = words.next();
        let target: Vec<&str> = words.collect();
        let Some(op) = op.and_then(CodeOperation::parse) else {
            diags.push(err(
                "skill/evals-operation-unknown",
                &field,
                format!(
                    "`{step}`: write `code_context <operation> <symbol>` with one of {}",
                    CodeOperation::ALL.map(CodeOperation::as_str).join(", ")
                ),
            ));
            continue;
        };
        let exact = match target.as_slice() {
            [one] => op.takes_file() || evoflux_core::code_operation::is_symbol(one),
            _ => false,
        };
        if !exact {
            diags.push(err(
                "skill/evals-trajectory-invalid",
                &field,
                format!(
                    "`{step}`: code_context takes one exact {} after the operation, never a description",
                    if op.takes_file() { "path" } else { "symbol" }
                ),
            ));
        }
        first.get_or_insert(op);
    }
    if let (Some(expected), Some(first)) = (expected, first)
        && expected != first
    {
        diags.push(err(
            "skill/evals-operation-mismatch",
            "expected_operation",
            format!(
                "`expected_operation` is `{expected}` but the trajectory's first code_context step runs `{first}`"
            ),
        ));
    }
}

fn request_text(
    v: &Value,
    name: &str,
    err: &impl Fn(&'static str, &str, String) -> Diagnostic,
    diags: &mut Diagnostics,
) -> Option<String> {
    match v {
        Value::String(s) if !s.trim().is_empty() => Some(s.trim().to_owned()),
        Value::String(_) => {
            diags.push(err(
                "skill/evals-request-missing",
                name,
                format!("`{name}` is empty"),
            ));
            None
        }
        _ => {
            diags.push(err(
                "skill/evals-field-invalid",
                name,
                format!("`{name}` must be a string"),
            ));
            None
        }
    }
}

/// An optional list of non-empty, single-line strings. `unique` rejects
/// repeats (a behaviour is forbidden once; a trajectory may revisit a step).
fn string_list(
    v: Option<&Value>,
    code: &'static str,
    name: &str,
    unique: bool,
    err: &impl Fn(&'static str, &str, String) -> Diagnostic,
    diags: &mut Diagnostics,
) -> Vec<String> {
    let items = match v {
        None => return Vec::new(),
        Some(Value::Array(items)) if !items.is_empty() => items,
        Some(Value::Array(_)) => {
            diags.push(err(
                code,
                name,
                format!("`{name}` is empty: omit it or list at least one entry"),
            ));
            return Vec::new();
        }
        Some(_) => {
            diags.push(err(
                code,
                name,
                format!("`{name}` must be an array of strings"),
            ));
            return Vec::new();
        }
    };
    let mut out: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let at = format!("{name}[{i}]");
        match item {
            Value::String(s) if !s.trim().is_empty() && !s.contains(['\n', '\r']) => {
                let s = s.trim().to_owned();
                if unique && out.contains(&s) {
                    diags.push(err(code, &at, format!("`{s}` is listed twice")));
                } else {
                    out.push(s);
                }
            }
            Value::String(_) => diags.push(err(
                code,
                &at,
                "entries must be non-empty single-line text".to_owned(),
            )),
            _ => diags.push(err(code, &at, "entries must be strings".to_owned())),
        }
    }
    out
}

fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Locator of a bundled skill's SKILL.md in diagnostics (its slot path;
/// nothing is read from there).
fn skill_file(skill: &BundledSkill) -> PathBuf {
    Path::new("skills").join(skill.name).join("SKILL.md")
}

/// Locator of a bundled skill's trigger cases in diagnostics.
fn trigger_cases_file(skill: &BundledSkill) -> PathBuf {
    Path::new("skills")
        .join(skill.name)
        .join(TRIGGER_CASES_FILE)
}

/// Hits out of cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    pub hit: usize,
    pub total: usize,
}

impl Tally {
    fn add(&mut self, hit: bool) {
        self.total += 1;
        self.hit += usize::from(hit);
    }
}

/// A case that missed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EvalMiss {
    pub request: String,
    pub should_trigger: bool,
    pub near_miss: bool,
    /// The skill the request ranked first (none when nothing matched).
    pub ranked_first: Option<String>,
}

/// The result for one skill's cases.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SkillEvalReport {
    pub name: String,
    pub modes: ModeSet,
    pub positives: Tally,
    pub negatives: Tally,
    pub misses: Vec<EvalMiss>,
}

/// The result of a whole run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EvalReport {
    pub skills: Vec<SkillEvalReport>,
    /// Problems with the skills or their cases; cases of a skill whose
    /// SKILL.md or trigger cases are invalid are not run.
    pub diagnostics: Diagnostics,
}

impl EvalReport {
    /// Hits over every case that ran.
    pub fn total(&self) -> Tally {
        let mut t = Tally::default();
        for s in &self.skills {
            t.hit += s.positives.hit + s.negatives.hit;
            t.total += s.positives.total + s.negatives.total;
        }
        t
    }

    /// Fraction of cases that hit, 0 when nothing ran.
    pub fn hit_rate(&self) -> f64 {
        let t = self.total();
        if t.total == 0 {
            0.0
        } else {
            t.hit as f64 / t.total as f64
        }
    }
}

/// A skill as ranking sees it.
struct Candidate {
    name: &'static str,
    modes: ModeSet,
    identity: String,
    description: String,
}

/// Runs every skill's trigger cases through the catalog ranking over the
/// skills of `skills` eligible in any of its modes.
///
/// Eligible means what it means for the runtime catalog: the SKILL.md
/// passes strict validation, the skill is available in the mode and
/// implicit invocation is allowed. Duplicate names keep the first entry.
pub fn run_evals(skills: &[BundledSkill]) -> EvalReport {
    let mut report = EvalReport::default();
    let mut candidates: Vec<Candidate> = Vec::new();
    let mut names: BTreeSet<&str> = BTreeSet::new();
    let mut runnable: Vec<(&BundledSkill, Vec<TriggerCase>)> = Vec::new();

    for skill in skills {
        if !names.insert(skill.name) {
            report.diagnostics.push(
                Diagnostic::error(
                    "skill/evals-duplicate-skill",
                    format!(
                        "bundled skill `{}` is listed twice; the first entry is used",
                        skill.name
                    ),
                )
                .with_file(skill_file(skill)),
            );
            continue;
        }
        let Some(bundle) = BundleName::single(skill.name) else {
            continue;
        };
        let check = check_skill_text(
            skill.skill_md,
            &skill_file(skill),
            &bundle,
            ValidationLevel::Strict,
        );
        let valid = check.is_valid();
        let implicit = !check.fields.disable_model_invocation;
        let description = check.fields.description.clone().unwrap_or_default();
        report.diagnostics.extend(check.diagnostics.into_vec());
        if valid && implicit && !description.is_empty() {
            candidates.push(Candidate {
                name: skill.name,
                modes: skill.modes,
                identity: skill.name.replace(['-', '_', '/'], " "),
                description,
            });
        }

        let cases = check_trigger_cases(skill.trigger_cases, &trigger_cases_file(skill));
        let cases_ok = cases.is_valid();
        report.diagnostics.extend(cases.diagnostics.into_vec());
        if valid && cases_ok {
            runnable.push((skill, cases.cases));
        }
    }

    for (skill, cases) in runnable {
        let mut out = SkillEvalReport {
            name: skill.name.to_owned(),
            modes: skill.modes,
            positives: Tally::default(),
            negatives: Tally::default(),
            misses: Vec::new(),
        };
        // The skills a catalog could show next to this one: eligible in
        // at least one of its modes.
        let docs: Vec<RankDoc<'_>> = candidates
            .iter()
            .filter(|c| !c.modes.intersect(skill.modes).is_empty())
            .map(|c| RankDoc {
                name: c.name,
                identity: c.identity.clone(),
                description: &c.description,
            })
            .collect();
        for case in cases {
            let ranked = rank(&case.request, &docs);
            let first = ranked.into_iter().next();
            let hit = (first.as_deref() == Some(skill.name)) == case.should_trigger;
            match case.should_trigger {
                true => out.positives.add(hit),
                false => out.negatives.add(hit),
            }
            if !hit {
                out.misses.push(EvalMiss {
                    request: case.request,
                    should_trigger: case.should_trigger,
                    near_miss: case.near_miss,
                    ranked_first: first,
                });
            }
        }
        report.skills.push(out);
    }
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codes(text: &str) -> Vec<String> {
        check_trigger_cases(text, Path::new("x/evals/trigger-cases.json"))
            .diagnostics
            .codes()
            .into_iter()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn hostile_nesting_is_refused_before_parsing() {
        let text = format!("[\n{}{}]", "[".repeat(100_000), "]".repeat(100_000));
        let check = check_trigger_cases(&text, Path::new("f.json"));
        assert_eq!(check.diagnostics.codes(), ["json/too-deep"]);
        assert_eq!(check.diagnostics.as_slice()[0].locator.line, Some(2));
    }

    #[test]
    fn accepts_both_shapes_and_both_request_keys() {
        let array = r#"[{"query": "fix the crash", "should_trigger": true},
                        {"prompt": "review my PR", "should_trigger": false, "near_miss": true}]"#;
        let check = check_trigger_cases(array, Path::new("f.json"));
        assert!(check.is_valid(), "{:?}", check.diagnostics);
        assert_eq!(check.cases[1].request, "review my PR");
        assert!(check.cases[1].near_miss);
        let object = format!(r#"{{"cases": {array}}}"#);
        assert_eq!(
            check_trigger_cases(&object, Path::new("f.json"))
                .cases
                .len(),
            2
        );
    }

    #[test]
    fn diagnostics_name_the_field_of_the_case() {
        let text = r#"{"cases": [{"query": "a b", "should_trigger": true},
                                 {"query": "c d", "should_trigger": "yes"}]}"#;
        let check = check_trigger_cases(text, Path::new("f.json"));
        let d = check.diagnostics.iter().next().unwrap();
        assert_eq!(d.code, "skill/evals-field-invalid");
        assert_eq!(d.locator.field.as_deref(), Some("cases[1].should_trigger"));
        assert_eq!(d.locator.file.as_deref(), Some(Path::new("f.json")));
    }

    #[test]
    fn operations_parse_exactly() {
        for op in CodeOperation::ALL {
            assert_eq!(CodeOperation::parse(op.as_str()), Some(op));
        }
        assert_eq!(CodeOperation::parse("Callers"), None);
        assert!(codes(r#"[{"query":"q","should_trigger":true,"expected_operation":"callers"},{"query":"r","should_trigger":false}]"#).is_empty());
        // The operations of the old free-text schema are gone.
        assert_eq!(
            codes(
                r#"[{"query":"q","should_trigger":true,"expected_operation":"grep"},{"query":"r","should_trigger":false}]"#
            ),
            ["skill/evals-operation-unknown"]
        );
    }

    fn with_trajectory(op: Option<&str>, steps: &[&str]) -> Vec<String> {
        let mut case = serde_json::json!({
            "query": "q",
            "should_trigger": true,
            "expected_trajectory": steps,
        });
        if let (Some(op), Some(o)) = (op, case.as_object_mut()) {
            o.insert("expected_operation".into(), op.into());
        }
        codes(&serde_json::json!([case, {"query": "r", "should_trigger": false}]).to_string())
    }

    #[test]
    fn code_context_steps_are_calls_the_tool_would_take() {
        assert!(
            with_trajectory(
                Some("definition"),
                &[
                    "code_context definition OrderService.submit",
                    "code_context callers OrderService.submit",
                    "read the returned files"
                ]
            )
            .is_empty()
        );
        assert!(with_trajectory(None, &["code_context outline src/order service.rs"]).len() == 1);
        assert!(with_trajectory(None, &["code_context outline src/orders.rs"]).is_empty());
        assert_eq!(
            with_trajectory(None, &["code_context definition where the order is saved"]),
            ["skill/evals-trajectory-invalid"]
        );
        assert_eq!(
            with_trajectory(None, &["code_context search orders"]),
            ["skill/evals-operation-unknown"]
        );
        assert_eq!(
            with_trajectory(Some("callers"), &["code_context definition submit"]),
            ["skill/evals-operation-mismatch"]
        );
        // Steps that do not run code_context are free text; one that does
        // names the call wherever it says so.
        assert!(with_trajectory(None, &["grep for the literal error message"]).is_empty());
        assert!(
            with_trajectory(None, &["read the file, then code_context callers parse"]).is_empty()
        );
        assert_eq!(
            with_trajectory(None, &["read it, then code_context callers on its name"]),
            ["skill/evals-trajectory-invalid"]
        );
    }
}
