//! Grounding of claimed checks: which `passed: true` claims of a verifier
//! report or a mutation report match a command the run actually executed.
//!
//! This labels the receipt; it does not change conformance. A claim of a
//! passing check when the run executed no command at all is unsupported,
//! so it invalidates a `pass` quality label.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::extract::extract_json_object;
use super::kind::ResultContractKind;
use super::validate::typed_check;

/// Why some claims are ungrounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GroundingBasis {
    /// Every claim matched an executed command.
    Grounded,
    /// The run executed no command at all.
    NoCommandExecuted,
    /// Commands ran, but some claims name none of them.
    UnmatchedCommand,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimedValidationGrounding {
    pub claimed: usize,
    pub grounded: usize,
    pub ungrounded: Vec<String>,
    pub basis: GroundingBasis,
    /// Whether the claims cannot support a `pass` quality.
    pub invalidates_quality: bool,
}

impl ClaimedValidationGrounding {
    /// The receipt label, such as
    /// `validations=claimed:1 grounded:0 unverifiable:"npm run typecheck"`.
    pub fn label(&self) -> String {
        let mut s = format!(
            "validations=claimed:{} grounded:{}",
            self.claimed, self.grounded
        );
        if !self.ungrounded.is_empty() {
            let names: Vec<String> = self.ungrounded.iter().map(|n| format!("{n:?}")).collect();
            s.push_str(&format!(" unverifiable:{}", names.join(",")));
        }
        s
    }
}

fn canonical(cmd: &str) -> String {
    cmd.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether a claim names an executed command; decorations after the
/// command (`npm test (12 passing)`) still match.
fn matches(claim: &str, command: &str) -> bool {
    let (claim, command) = (canonical(claim), canonical(command));
    !command.is_empty()
        && (claim == command
            || claim
                .strip_prefix(&command)
                .is_some_and(|rest| rest.starts_with([' ', ':', '(', ','])))
}

/// Grounds the `passed: true` claims of a verifier or mutation report.
/// `None` for other kinds, non-JSON output, malformed checks, or a report
/// that itself records a failure.
pub fn ground_claimed_validations(
    kind: ResultContractKind,
    output: &str,
    executed_commands: &[String],
) -> Option<ClaimedValidationGrounding> {
    let field = kind.traits().claimed_validations?;
    let m = extract_json_object(Some(output)).ok()?;
    let Some(Value::Array(items)) = m.get(field) else {
        return None;
    };
    let checks: Vec<(String, bool, String)> =
        items.iter().map(typed_check).collect::<Option<_>>()?;
    if checks.is_empty() || checks.iter().any(|c| !c.1) {
        return None;
    }
    let ungrounded: Vec<String> = checks
        .iter()
        .filter(|c| !executed_commands.iter().any(|e| matches(&c.0, e)))
        .map(|c| c.0.clone())
        .collect();
    let basis = if executed_commands.is_empty() {
        GroundingBasis::NoCommandExecuted
    } else if ungrounded.is_empty() {
        GroundingBasis::Grounded
    } else {
        GroundingBasis::UnmatchedCommand
    };
    Some(ClaimedValidationGrounding {
        claimed: checks.len(),
        grounded: checks.len() - ungrounded.len(),
        ungrounded,
        basis,
        invalidates_quality: basis == GroundingBasis::NoCommandExecuted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAIM: &str = r#"{"verdict":"pass","checks":[{"name":"npm run typecheck","passed":true,"evidence":"exit 0"}]}"#;

    #[test]
    fn nothing_executed_invalidates_quality() {
        let g = ground_claimed_validations(ResultContractKind::VerifierReport, CLAIM, &[]).unwrap();
        assert_eq!(g.basis, GroundingBasis::NoCommandExecuted);
        assert!(g.invalidates_quality);
        assert_eq!(
            g.label(),
            "validations=claimed:1 grounded:0 unverifiable:\"npm run typecheck\""
        );
    }

    #[test]
    fn decorated_claims_match_executed_commands() {
        let out = r#"{"mutatedPaths":[],"validations":[{"name":"npm test (12 passing)","passed":true,"evidence":"ok"}]}"#;
        let g = ground_claimed_validations(
            ResultContractKind::MutationReport,
            out,
            &["npm  test".to_owned()],
        )
        .unwrap();
        assert_eq!((g.claimed, g.grounded), (1, 1));
        assert_eq!(g.basis, GroundingBasis::Grounded);
        let g = ground_claimed_validations(
            ResultContractKind::VerifierReport,
            CLAIM,
            &["cargo test".to_owned()],
        )
        .unwrap();
        assert_eq!(g.basis, GroundingBasis::UnmatchedCommand);
        assert!(!g.invalidates_quality);
    }

    #[test]
    fn none_for_failures_other_kinds_and_prose() {
        let failed =
            r#"{"verdict":"fail","checks":[{"name":"t","passed":false,"evidence":"exit 1"}]}"#;
        assert!(
            ground_claimed_validations(ResultContractKind::VerifierReport, failed, &[]).is_none()
        );
        assert!(ground_claimed_validations(ResultContractKind::ScoutReport, CLAIM, &[]).is_none());
        assert!(
            ground_claimed_validations(ResultContractKind::VerifierReport, "ok", &[]).is_none()
        );
    }
}
