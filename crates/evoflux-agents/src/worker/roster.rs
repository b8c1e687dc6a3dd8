//! The compact worker roster placed in a lead's system prompt.
//!
//! Byte-stable for a given set of specs (sorted, no timestamps, no map
//! iteration order), so the prompt prefix does not churn between turns and
//! provider prompt caches keep hitting.

use super::recipe::Audience;
use super::spec::AgentSpec;

pub const FLEET_DELEGATION_RULE: &str = "Delegate when the work splits into two or more \
independent, file-scoped subtasks or needs broad exploration; keep synthesis and validation \
yourself, and do a single narrow change locally.";

pub const FLEET_HANDOFF_RULE: &str = "A file you hand to a worker is off-limits to you while \
the dispatch is pending and after it succeeds; say so if you already edited it.";

pub const FLEET_ANTI_CHURN_RULE: &str = "The same target files with the same goal is a repeat, \
however it is worded: read the previous receipt or run the check yourself instead of \
dispatching again.";

pub const FLEET_REFUSAL_DISCLOSURE: &str = "When admission refuses a dispatch, tell the user \
the refusal and its reason; never quietly substitute another worker.";

pub const FLEET_WORKERS_LINE: &str = "Workers are reached by dispatch, by id. The capability \
class is what a worker may do: a read-only worker cannot edit.";

pub const FLEET_SPECIALIST_ROUTING: &str = "Route receipts, diffs and telemetry to provenance \
work, documentation questions to research, broad reconnaissance to a scout, tests to a tester, \
and gates or reviews to a verifier.";

/// The one-line purpose of a worker: its description up to the first
/// sentence end, at most 64 characters (cut at a word, `...` appended).
pub fn purpose(description: &str) -> String {
    let collapsed = description.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut s = match collapsed.find(". ") {
        Some(i) => collapsed[..i].to_owned(),
        None => collapsed.strip_suffix('.').unwrap_or(&collapsed).to_owned(),
    };
    if s.chars().count() > 64 {
        let cut: String = s.chars().take(64).collect();
        let at = cut.rfind(' ').unwrap_or(cut.len());
        s = format!("{}...", cut[..at].trim_end_matches([',', ';', ':']));
    }
    s
}

fn line(s: &AgentSpec) -> String {
    format!(
        "- {} ({}, {} calls): {}",
        s.id,
        s.capability_class,
        s.budget.tool_calls,
        purpose(&s.description)
    )
}

/// Renders the roster. Operator-facing workers are `base` and `custom`;
/// `shadow` workers are listed as dispatch-only specialists; `internal`
/// workers are never listed. Empty when nothing is listed.
pub fn render_roster(specs: &[AgentSpec]) -> String {
    let mut sorted: Vec<&AgentSpec> = specs.iter().collect();
    sorted.sort_by(|a, b| {
        a.category
            .as_str()
            .cmp(b.category.as_str())
            .then_with(|| a.id.cmp(&b.id))
    });
    let public: Vec<String> = sorted
        .iter()
        .filter(|s| s.audience.is_user_visible())
        .map(|s| line(s))
        .collect();
    let shadow: Vec<String> = sorted
        .iter()
        .filter(|s| match s.audience {
            Audience::Shadow => true,
            Audience::Base | Audience::Custom | Audience::Internal => false,
        })
        .map(|s| line(s))
        .collect();
    if public.is_empty() && shadow.is_empty() {
        return String::new();
    }
    let mut out = vec![
        "# Fleet".to_owned(),
        FLEET_DELEGATION_RULE.to_owned(),
        FLEET_HANDOFF_RULE.to_owned(),
        FLEET_ANTI_CHURN_RULE.to_owned(),
        FLEET_REFUSAL_DISCLOSURE.to_owned(),
        FLEET_WORKERS_LINE.to_owned(),
        FLEET_SPECIALIST_ROUTING.to_owned(),
    ];
    if !public.is_empty() {
        out.push(String::new());
        out.push("Operator-facing:".to_owned());
        out.extend(public);
    }
    if !shadow.is_empty() {
        out.push(String::new());
        out.push("Internal specialists, dispatch-only:".to_owned());
        out.extend(shadow);
    }
    out.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn purpose_cuts_at_sentence_and_length() {
        assert_eq!(purpose("Does a thing. And more."), "Does a thing");
        assert_eq!(purpose("Does  a\nthing."), "Does a thing");
        let long = "Use for any broad repository reconnaissance, codebase orientation, \
                    structure mapping";
        let p = purpose(long);
        assert!(p.ends_with("...") && p.chars().count() <= 67, "{p}");
        assert!(!p.contains("  "));
    }
}
