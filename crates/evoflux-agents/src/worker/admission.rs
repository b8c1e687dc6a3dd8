//! Task classification and the capability-mismatch assessment of dispatch
//! admission.
//!
//! A read-only or verification worker pinned to a task that needs a change
//! on disk cannot land it; if the worker would still hand back a report,
//! the report would read as if the change happened. Admission therefore
//! refuses such a dispatch unless the task also reads as an investigation
//! (then it is flagged: any claim of a change is unsupported) or the worker
//! was chosen automatically (flagged too).

use serde::{Deserialize, Serialize};

use super::recipe::CapabilityClass;
use super::spec::AgentSpec;

/// What a task asks for, from its wording.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    Test,
    Docs,
    CodeReview,
    Debug,
    Refactor,
    Config,
    Research,
    CodeRead,
    CodeWrite,
    Unknown,
}

impl TaskType {
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskType::Test => "test",
            TaskType::Docs => "docs",
            TaskType::CodeReview => "code_review",
            TaskType::Debug => "debug",
            TaskType::Refactor => "refactor",
            TaskType::Config => "config",
            TaskType::Research => "research",
            TaskType::CodeRead => "code_read",
            TaskType::CodeWrite => "code_write",
            TaskType::Unknown => "unknown",
        }
    }

    /// Task types that require a change on disk.
    pub const fn is_mutating(self) -> bool {
        match self {
            TaskType::CodeWrite
            | TaskType::Debug
            | TaskType::Refactor
            | TaskType::Config
            | TaskType::Test
            | TaskType::Docs => true,
            TaskType::CodeReview | TaskType::Research | TaskType::CodeRead | TaskType::Unknown => {
                false
            }
        }
    }

    /// Tags that mark a worker as the specialist for this type's change,
    /// in order of preference.
    const fn specialist_tags(self) -> &'static [&'static str] {
        match self {
            TaskType::Test => &["tests"],
            TaskType::Docs => &["docs"],
            TaskType::Debug => &["repair", "debugging"],
            TaskType::Refactor => &["refactor"],
            TaskType::Config | TaskType::CodeWrite => &["implementation"],
            TaskType::CodeReview | TaskType::Research | TaskType::CodeRead | TaskType::Unknown => {
                &[]
            }
        }
    }
}

/// Trigger words and phrases per type, in classification order; first
/// match wins. Matching is case-insensitive on whole words.
const TRIGGERS: &[(TaskType, &[&str])] = &[
    (
        TaskType::Test,
        &[
            "test",
            "tests",
            "unit test",
            "unit tests",
            "coverage",
            "spec file",
        ],
    ),
    (
        TaskType::Docs,
        &[
            "documentation",
            "docs",
            "readme",
            "changelog",
            "comment",
            "comments",
            "docstring",
            "docstrings",
        ],
    ),
    (
        TaskType::CodeReview,
        &["review", "audit", "critique", "inspect for"],
    ),
    (
        TaskType::Debug,
        &[
            "debug",
            "fix",
            "bug",
            "crash",
            "failure",
            "broken",
            "regression",
        ],
    ),
    (
        TaskType::Refactor,
        &[
            "refactor",
            "clean up",
            "cleanup",
            "restructure",
            "rename",
            "extract",
            "simplify",
        ],
    ),
    (
        TaskType::Config,
        &[
            "config",
            "configuration",
            "settings",
            "setup",
            "install",
            "ci pipeline",
            "workflow file",
        ],
    ),
    (
        TaskType::Research,
        &[
            "research",
            "investigate",
            "explore",
            "survey",
            "compare",
            "find out",
        ],
    ),
    (
        TaskType::CodeRead,
        &[
            "read",
            "explain",
            "understand",
            "summarize",
            "describe",
            "walk through",
            "map",
            "locate",
            "trace",
            "find",
        ],
    ),
    (
        TaskType::CodeWrite,
        &[
            "write",
            "implement",
            "add",
            "create",
            "build",
            "develop",
            "introduce",
        ],
    ),
];

/// Types whose wording marks a task as an investigation.
const READ_SHAPED: [TaskType; 3] = [TaskType::CodeReview, TaskType::Research, TaskType::CodeRead];

/// How big a task looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Complexity {
    Trivial,
    Simple,
    Moderate,
    Complex,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskClassification {
    pub task_type: TaskType,
    /// 0.7 when a trigger matched, 0.3 otherwise.
    pub confidence: f64,
    pub complexity: Complexity,
    /// 1..=4.
    pub estimated_subtasks: u32,
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

fn contains_phrase(words: &[String], phrase: &str) -> bool {
    let p: Vec<&str> = phrase.split(' ').collect();
    words
        .windows(p.len())
        .any(|w| w.iter().zip(&p).all(|(a, b)| a == b))
}

fn matches(words: &[String], t: TaskType) -> bool {
    TRIGGERS
        .iter()
        .filter(|(ty, _)| *ty == t)
        .any(|(_, phrases)| phrases.iter().any(|p| contains_phrase(words, p)))
}

/// Classifies a task by its wording.
pub fn classify_task(text: &str) -> TaskClassification {
    let w = words(text);
    let task_type = TRIGGERS
        .iter()
        .find(|(_, phrases)| phrases.iter().any(|p| contains_phrase(&w, p)))
        .map_or(TaskType::Unknown, |(t, _)| *t);
    let complexity = match w.len() {
        0..=6 => Complexity::Trivial,
        7..=25 => Complexity::Simple,
        26..=80 => Complexity::Moderate,
        _ => Complexity::Complex,
    };
    let enumerated = text
        .lines()
        .filter(|l| {
            let t = l.trim_start();
            t.starts_with("- ")
                || t.starts_with("* ")
                || t.split_once(['.', ')'])
                    .is_some_and(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
        .count();
    let lower = text.to_lowercase();
    let estimated = if enumerated > 1 {
        enumerated
    } else if lower.contains("and then") || lower.contains("and also") || lower.contains("; ") {
        2
    } else {
        1
    };
    TaskClassification {
        task_type,
        confidence: if task_type == TaskType::Unknown {
            0.3
        } else {
            0.7
        },
        complexity,
        estimated_subtasks: u32::try_from(estimated.clamp(1, 4)).unwrap_or(1),
    }
}

/// What admission does with a mismatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchDecision {
    /// The dispatch is refused with `detail`.
    Refuse,
    /// The dispatch runs; `detail` is sealed into the receipt.
    Flag,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CapabilityMismatch {
    pub decision: MismatchDecision,
    pub agent_id: String,
    pub capability_class: CapabilityClass,
    pub task_type: TaskType,
    pub suggested_agent_id: Option<String>,
    pub detail: String,
}

const fn cannot_write(c: CapabilityClass) -> bool {
    match c {
        CapabilityClass::ReadOnly | CapabilityClass::Verification => true,
        CapabilityClass::ArtifactWrite
        | CapabilityClass::WorkspaceEdit
        | CapabilityClass::Orchestration
        | CapabilityClass::Internal => false,
    }
}

/// The installed worker best placed to make the change: one that can
/// write, tagged as the type's specialist (in tag preference, then id
/// order), else one tagged `implementation`.
pub fn suggest_specialist(task_type: TaskType, installed: &[AgentSpec]) -> Option<String> {
    let writers: Vec<&AgentSpec> = {
        let mut v: Vec<&AgentSpec> = installed
            .iter()
            .filter(|s| !cannot_write(s.capability_class))
            .collect();
        v.sort_by(|a, b| a.id.cmp(&b.id));
        v
    };
    let tagged = |tag: &str| {
        writers
            .iter()
            .find(|s| s.tags.iter().any(|t| t == tag))
            .map(|s| s.id.clone())
    };
    task_type
        .specialist_tags()
        .iter()
        .find_map(|t| tagged(t))
        .or_else(|| tagged("implementation"))
}

/// Assesses a pinned (or automatically selected) worker against a task.
/// `None` means no mismatch: the worker can write, or the task does not
/// need a change on disk.
pub fn assess_capability_mismatch(
    spec: &AgentSpec,
    task: &str,
    installed: &[AgentSpec],
    auto_selected: bool,
) -> Option<CapabilityMismatch> {
    if !cannot_write(spec.capability_class) {
        return None;
    }
    let task_type = classify_task(task).task_type;
    if !task_type.is_mutating() {
        return None;
    }
    let w = words(task);
    let read_shaped = READ_SHAPED.iter().any(|t| matches(&w, *t));
    let reporting = spec.result_contract.kind.is_reporting();
    let suggested = suggest_specialist(task_type, installed);
    let id = &spec.id;
    let class = spec.capability_class;
    let (decision, detail) = if !read_shaped && !auto_selected && reporting {
        let remedy = match &suggested {
            Some(s) => format!(
                "Dispatch agent:\"{s}\" for the change itself, then dispatch '{id}' to check it."
            ),
            None => "No installed recipe can change the workspace, so this task cannot be \
                     delegated as written."
                .to_owned(),
        };
        (
            MismatchDecision::Refuse,
            format!(
                "dispatch: agent '{id}' is a {class} recipe and cannot write to the workspace, \
                 but this task classifies as {}, which requires a change on disk. {remedy}",
                task_type.as_str()
            ),
        )
    } else {
        let suggested_part = suggested
            .as_ref()
            .map(|s| format!(" suggested={s}"))
            .unwrap_or_default();
        (
            MismatchDecision::Flag,
            format!(
                "capability_mismatch={id}/{class} task_shape={}{suggested_part}; a read-only \
                 recipe cannot land this change, so treat any claim that it did as unsupported.",
                task_type.as_str()
            ),
        )
    };
    Some(CapabilityMismatch {
        decision,
        agent_id: id.clone(),
        capability_class: class,
        task_type,
        suggested_agent_id: suggested,
        detail,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification_order_first_match_wins() {
        let t = |s| classify_task(s).task_type;
        assert_eq!(t("Add unit tests for src/format.ts"), TaskType::Test);
        assert_eq!(t("Update the README"), TaskType::Docs);
        assert_eq!(t("Review the diff"), TaskType::CodeReview);
        assert_eq!(t("Fix the off-by-one bug"), TaskType::Debug);
        assert_eq!(t("Rename the module"), TaskType::Refactor);
        assert_eq!(t("Explain how the config loader works"), TaskType::Config);
        assert_eq!(t("Investigate the slowdown"), TaskType::Research);
        assert_eq!(t("Walk through the parser"), TaskType::CodeRead);
        assert_eq!(t("Implement retries"), TaskType::CodeWrite);
        assert_eq!(t("hello there"), TaskType::Unknown);
        assert!((classify_task("hello").confidence - 0.3).abs() < f64::EPSILON);
        // Whole words only: "testing" is not "test", "prefix" is not "fix".
        assert_eq!(t("prefix testing"), TaskType::Unknown);
    }

    #[test]
    fn complexity_and_subtasks() {
        let c = classify_task("Fix it");
        assert_eq!(c.complexity, Complexity::Trivial);
        assert_eq!(c.estimated_subtasks, 1);
        let c = classify_task("- a\n- b\n- c\n- d\n- e\n");
        assert_eq!(c.estimated_subtasks, 4);
        assert_eq!(
            classify_task("build it and then test it").estimated_subtasks,
            2
        );
    }
}
