//! The closed union of result-contract kinds and the two front-matter
//! parsers (recipe and worker wire).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every terminal result shape a worker run can be held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ResultContractKind {
    ArchitectPlan,
    ScoutReport,
    VerifierReport,
    DebuggerReport,
    ResearchReport,
    MutationReport,
    ProvenanceReport,
    ExternalDelegation,
    ArtifactReport,
    ContextHandbook,
    CodeReport,
    CouncilReport,
    DelegationPlan,
    OracleReport,
    CouncilBallot,
    WorldKnowledgeReport,
}

/// Who may put a kind on a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContractAuthor {
    /// A recipe may declare it in front matter.
    Recipe,
    /// Only the code-step runner writes it (`code-report`).
    Runner,
    /// Only a coordinator may impose it on a dispatch (`council-ballot`).
    Coordinator,
}

impl ResultContractKind {
    pub const ALL: [ResultContractKind; 16] = [
        ResultContractKind::ArchitectPlan,
        ResultContractKind::ScoutReport,
        ResultContractKind::VerifierReport,
        ResultContractKind::DebuggerReport,
        ResultContractKind::ResearchReport,
        ResultContractKind::MutationReport,
        ResultContractKind::ProvenanceReport,
        ResultContractKind::ExternalDelegation,
        ResultContractKind::ArtifactReport,
        ResultContractKind::ContextHandbook,
        ResultContractKind::CodeReport,
        ResultContractKind::CouncilReport,
        ResultContractKind::DelegationPlan,
        ResultContractKind::OracleReport,
        ResultContractKind::CouncilBallot,
        ResultContractKind::WorldKnowledgeReport,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ResultContractKind::ArchitectPlan => "architect-plan",
            ResultContractKind::ScoutReport => "scout-report",
            ResultContractKind::VerifierReport => "verifier-report",
            ResultContractKind::DebuggerReport => "debugger-report",
            ResultContractKind::ResearchReport => "research-report",
            ResultContractKind::MutationReport => "mutation-report",
            ResultContractKind::ProvenanceReport => "provenance-report",
            ResultContractKind::ExternalDelegation => "external-delegation",
            ResultContractKind::ArtifactReport => "artifact-report",
            ResultContractKind::ContextHandbook => "context-handbook",
            ResultContractKind::CodeReport => "code-report",
            ResultContractKind::CouncilReport => "council-report",
            ResultContractKind::DelegationPlan => "delegation-plan",
            ResultContractKind::OracleReport => "oracle-report",
            ResultContractKind::CouncilBallot => "council-ballot",
            ResultContractKind::WorldKnowledgeReport => "world-knowledge-report",
        }
    }

    pub fn parse(s: &str) -> Option<ResultContractKind> {
        ResultContractKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    pub const fn author(self) -> ContractAuthor {
        match self {
            ResultContractKind::CodeReport => ContractAuthor::Runner,
            ResultContractKind::CouncilBallot => ContractAuthor::Coordinator,
            ResultContractKind::ArchitectPlan
            | ResultContractKind::ScoutReport
            | ResultContractKind::VerifierReport
            | ResultContractKind::DebuggerReport
            | ResultContractKind::ResearchReport
            | ResultContractKind::MutationReport
            | ResultContractKind::ProvenanceReport
            | ResultContractKind::ExternalDelegation
            | ResultContractKind::ArtifactReport
            | ResultContractKind::ContextHandbook
            | ResultContractKind::CouncilReport
            | ResultContractKind::DelegationPlan
            | ResultContractKind::OracleReport
            | ResultContractKind::WorldKnowledgeReport => ContractAuthor::Recipe,
        }
    }

    /// Kinds a scout may ask a proposed subtask to return.
    pub const fn subtask_requestable(self) -> bool {
        match self {
            ResultContractKind::ArchitectPlan
            | ResultContractKind::ScoutReport
            | ResultContractKind::VerifierReport
            | ResultContractKind::DebuggerReport
            | ResultContractKind::ResearchReport
            | ResultContractKind::MutationReport
            | ResultContractKind::ProvenanceReport
            | ResultContractKind::ExternalDelegation
            | ResultContractKind::CouncilReport => true,
            ResultContractKind::ArtifactReport
            | ResultContractKind::ContextHandbook
            | ResultContractKind::CodeReport
            | ResultContractKind::DelegationPlan
            | ResultContractKind::OracleReport
            | ResultContractKind::CouncilBallot
            | ResultContractKind::WorldKnowledgeReport => false,
        }
    }

    /// Kinds whose result is a report about the workspace rather than a
    /// change to it; a read-only worker pinned to a mutating task with one
    /// of these is refused rather than flagged.
    pub const fn is_reporting(self) -> bool {
        match self {
            ResultContractKind::ScoutReport
            | ResultContractKind::VerifierReport
            | ResultContractKind::ResearchReport
            | ResultContractKind::ProvenanceReport
            | ResultContractKind::DebuggerReport
            | ResultContractKind::WorldKnowledgeReport
            | ResultContractKind::OracleReport => true,
            ResultContractKind::ArchitectPlan
            | ResultContractKind::MutationReport
            | ResultContractKind::ExternalDelegation
            | ResultContractKind::ArtifactReport
            | ResultContractKind::ContextHandbook
            | ResultContractKind::CodeReport
            | ResultContractKind::CouncilReport
            | ResultContractKind::DelegationPlan
            | ResultContractKind::CouncilBallot => false,
        }
    }

    /// Kinds whose result is an artifact on disk.
    pub const fn names_artifact(self) -> bool {
        match self {
            ResultContractKind::ArchitectPlan | ResultContractKind::ArtifactReport => true,
            ResultContractKind::ScoutReport
            | ResultContractKind::VerifierReport
            | ResultContractKind::DebuggerReport
            | ResultContractKind::ResearchReport
            | ResultContractKind::MutationReport
            | ResultContractKind::ProvenanceReport
            | ResultContractKind::ExternalDelegation
            | ResultContractKind::ContextHandbook
            | ResultContractKind::CodeReport
            | ResultContractKind::CouncilReport
            | ResultContractKind::DelegationPlan
            | ResultContractKind::OracleReport
            | ResultContractKind::CouncilBallot
            | ResultContractKind::WorldKnowledgeReport => false,
        }
    }
}

impl fmt::Display for ResultContractKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A declared contract: a kind, and for `architect-plan` the
/// workspace-relative path of the plan artifact.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ResultContract {
    pub kind: ResultContractKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

impl ResultContract {
    pub fn new(kind: ResultContractKind) -> ResultContract {
        ResultContract { kind, path: None }
    }

    pub fn architect_plan(path: impl Into<String>) -> ResultContract {
        ResultContract {
            kind: ResultContractKind::ArchitectPlan,
            path: Some(path.into()),
        }
    }
}

/// Which authors a parser admits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admit {
    Recipe,
    Wire,
}

fn parse_with(value: &Value, admit: Admit) -> Result<ResultContract, String> {
    const UNSUPPORTED: &str = "resultContract.kind is unsupported or has unknown keys";
    let Value::Object(map) = value else {
        return Err("resultContract must be an object with a kind".into());
    };
    let kind = map
        .get("kind")
        .and_then(Value::as_str)
        .and_then(ResultContractKind::parse)
        .ok_or_else(|| UNSUPPORTED.to_owned())?;
    let admitted = match (kind.author(), admit) {
        (ContractAuthor::Recipe, _) => true,
        (ContractAuthor::Runner | ContractAuthor::Coordinator, Admit::Wire) => true,
        (ContractAuthor::Runner | ContractAuthor::Coordinator, Admit::Recipe) => false,
    };
    if !admitted {
        return Err(format!(
            "resultContract.kind '{kind}' is authored by the {} and cannot be declared by a recipe",
            match kind.author() {
                ContractAuthor::Runner => "code-step runner",
                ContractAuthor::Coordinator | ContractAuthor::Recipe => "coordinator",
            }
        ));
    }
    match kind {
        ResultContractKind::ArchitectPlan => {
            if map.keys().any(|k| k != "kind" && k != "path") {
                return Err(UNSUPPORTED.into());
            }
            let path = map
                .get("path")
                .and_then(Value::as_str)
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .ok_or_else(|| "architect-plan requires only non-empty path".to_owned())?;
            let escapes = path.starts_with('/')
                || path.starts_with('\\')
                || path.split(['/', '\\']).any(|s| s == "..");
            if escapes {
                return Err("architect-plan path must be workspace-relative".into());
            }
            Ok(ResultContract::architect_plan(path))
        }
        _ => {
            if map.len() != 1 {
                return Err(UNSUPPORTED.into());
            }
            Ok(ResultContract::new(kind))
        }
    }
}

/// The recipe parser: rejects kinds only the runner or a coordinator may
/// author (`code-report`, `council-ballot`).
pub fn parse_result_contract(value: &Value) -> Result<ResultContract, String> {
    parse_with(value, Admit::Recipe)
}

/// The wider worker-wire parser used when a dispatch overrides the seated
/// recipe's postcondition: coordinator and runner kinds are admitted.
pub fn parse_worker_result_contract(value: &Value) -> Result<ResultContract, String> {
    parse_with(value, Admit::Wire)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_round_trips_its_name() {
        for k in ResultContractKind::ALL {
            assert_eq!(ResultContractKind::parse(k.as_str()), Some(k));
            assert_eq!(serde_json::to_value(k).unwrap(), json!(k.as_str()));
        }
    }

    #[test]
    fn recipe_parser_refuses_coordinator_and_runner_kinds() {
        for kind in ["code-report", "council-ballot"] {
            let v = json!({"kind": kind});
            assert!(parse_result_contract(&v).is_err(), "{kind}");
            assert_eq!(
                parse_worker_result_contract(&v).unwrap().kind.as_str(),
                kind
            );
        }
        assert!(parse_result_contract(&json!({"kind": "scout-report"})).is_ok());
    }

    #[test]
    fn architect_plan_path_rules() {
        assert_eq!(
            parse_result_contract(&json!({"kind": "architect-plan", "path": "PLAN.md"})).unwrap(),
            ResultContract::architect_plan("PLAN.md")
        );
        assert_eq!(
            parse_result_contract(&json!({"kind": "architect-plan"})).unwrap_err(),
            "architect-plan requires only non-empty path"
        );
        for bad in ["/etc/x", "../x", "a/../../b"] {
            assert_eq!(
                parse_result_contract(&json!({"kind": "architect-plan", "path": bad})).unwrap_err(),
                "architect-plan path must be workspace-relative"
            );
        }
        assert!(
            parse_result_contract(&json!({"kind": "scout-report", "path": "x"}))
                .unwrap_err()
                .contains("unknown keys")
        );
        assert!(parse_result_contract(&json!({"kind": "nope"})).is_err());
    }
}
