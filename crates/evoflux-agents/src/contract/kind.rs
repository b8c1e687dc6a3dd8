//! The closed union of result-contract kinds and the two front-matter
//! parsers (recipe and worker wire).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::validate::{MUTATION_REPORT_HEADROOM_BYTES, RESULT_COMMIT_MESSAGE_MAX_BYTES};

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

/// The traits of one [`ResultContractKind`] (see
/// [`ResultContractKind::traits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KindTraits {
    /// The wire name, as front matter and the worker wire spell it.
    pub name: &'static str,
    /// Who may put the kind on a run.
    pub author: ContractAuthor,
    /// A scout may ask a proposed subtask to return it.
    pub subtask_requestable: bool,
    /// The result reports on the workspace rather than changing it.
    pub reporting: bool,
    /// The result is an artifact on disk.
    pub names_artifact: bool,
    /// The output may author `{commitMessage, summary}` for the commit
    /// that seals the run.
    pub authors_commit: bool,
    /// The output field whose `passed: true` claims are grounded against
    /// the commands the run executed.
    pub claimed_validations: Option<&'static str>,
    /// The sealed-output bound in bytes, for kinds with one of their own.
    pub output_bytes: Option<usize>,
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

    /// Every property that depends on the kind alone, in one row per
    /// kind: the one exhaustive match of kind traits, so adding a kind
    /// means filling in one row and every reader below (and the
    /// validators, grounding and authorship) follows it.
    pub const fn traits(self) -> KindTraits {
        match self {
            ResultContractKind::ArchitectPlan => KindTraits {
                name: "architect-plan",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: false,
                names_artifact: true,
                authors_commit: true,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::ScoutReport => KindTraits {
                name: "scout-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::VerifierReport => KindTraits {
                name: "verifier-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: Some("checks"),
                output_bytes: None,
            },
            ResultContractKind::DebuggerReport => KindTraits {
                name: "debugger-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::ResearchReport => KindTraits {
                name: "research-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::MutationReport => KindTraits {
                name: "mutation-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: false,
                names_artifact: false,
                authors_commit: true,
                claimed_validations: Some("validations"),
                output_bytes: Some(
                    2 * RESULT_COMMIT_MESSAGE_MAX_BYTES + MUTATION_REPORT_HEADROOM_BYTES,
                ),
            },
            ResultContractKind::ProvenanceReport => KindTraits {
                name: "provenance-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::ExternalDelegation => KindTraits {
                name: "external-delegation",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: false,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::ArtifactReport => KindTraits {
                name: "artifact-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: false,
                reporting: false,
                names_artifact: true,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::ContextHandbook => KindTraits {
                name: "context-handbook",
                author: ContractAuthor::Recipe,
                subtask_requestable: false,
                reporting: false,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::CodeReport => KindTraits {
                name: "code-report",
                author: ContractAuthor::Runner,
                subtask_requestable: false,
                reporting: false,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::CouncilReport => KindTraits {
                name: "council-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: true,
                reporting: false,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::DelegationPlan => KindTraits {
                name: "delegation-plan",
                author: ContractAuthor::Recipe,
                subtask_requestable: false,
                reporting: false,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::OracleReport => KindTraits {
                name: "oracle-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: false,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::CouncilBallot => KindTraits {
                name: "council-ballot",
                author: ContractAuthor::Coordinator,
                subtask_requestable: false,
                reporting: false,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
            ResultContractKind::WorldKnowledgeReport => KindTraits {
                name: "world-knowledge-report",
                author: ContractAuthor::Recipe,
                subtask_requestable: false,
                reporting: true,
                names_artifact: false,
                authors_commit: false,
                claimed_validations: None,
                output_bytes: None,
            },
        }
    }

    pub const fn as_str(self) -> &'static str {
        self.traits().name
    }

    pub fn parse(s: &str) -> Option<ResultContractKind> {
        ResultContractKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
    }

    pub const fn author(self) -> ContractAuthor {
        self.traits().author
    }

    /// Kinds a scout may ask a proposed subtask to return.
    pub const fn subtask_requestable(self) -> bool {
        self.traits().subtask_requestable
    }

    /// Kinds whose result is a report about the workspace rather than a
    /// change to it; a read-only worker pinned to a mutating task with one
    /// of these is refused rather than flagged.
    pub const fn is_reporting(self) -> bool {
        self.traits().reporting
    }

    /// Kinds whose result is an artifact on disk.
    pub const fn names_artifact(self) -> bool {
        self.traits().names_artifact
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

    /// The table reproduces, kind by kind, the classifications that were
    /// separate matches before it existed.
    #[test]
    fn the_traits_table_classifies_every_kind() {
        use ResultContractKind as K;
        let with = |f: fn(KindTraits) -> bool| -> Vec<K> {
            K::ALL.into_iter().filter(|k| f(k.traits())).collect()
        };
        assert_eq!(
            with(|t| t.subtask_requestable),
            [
                K::ArchitectPlan,
                K::ScoutReport,
                K::VerifierReport,
                K::DebuggerReport,
                K::ResearchReport,
                K::MutationReport,
                K::ProvenanceReport,
                K::ExternalDelegation,
                K::CouncilReport,
            ]
        );
        assert_eq!(
            with(|t| t.reporting),
            [
                K::ScoutReport,
                K::VerifierReport,
                K::DebuggerReport,
                K::ResearchReport,
                K::ProvenanceReport,
                K::OracleReport,
                K::WorldKnowledgeReport,
            ]
        );
        assert_eq!(
            with(|t| t.names_artifact),
            [K::ArchitectPlan, K::ArtifactReport]
        );
        assert_eq!(
            with(|t| t.authors_commit),
            [K::ArchitectPlan, K::MutationReport]
        );
        let claimed: Vec<(K, &str)> = K::ALL
            .into_iter()
            .filter_map(|k| Some((k, k.traits().claimed_validations?)))
            .collect();
        assert_eq!(
            claimed,
            [
                (K::VerifierReport, "checks"),
                (K::MutationReport, "validations")
            ]
        );
        let bounded: Vec<(K, usize)> = K::ALL
            .into_iter()
            .filter_map(|k| Some((k, k.traits().output_bytes?)))
            .collect();
        assert_eq!(bounded, [(K::MutationReport, 2 * 1000 + 16 * 1024)]);
        for k in K::ALL {
            let expected = match k {
                K::CodeReport => ContractAuthor::Runner,
                K::CouncilBallot => ContractAuthor::Coordinator,
                _ => ContractAuthor::Recipe,
            };
            assert_eq!(k.author(), expected, "{k}");
        }
        let names: Vec<&str> = K::ALL.into_iter().map(K::as_str).collect();
        assert_eq!(
            names,
            [
                "architect-plan",
                "scout-report",
                "verifier-report",
                "debugger-report",
                "research-report",
                "mutation-report",
                "provenance-report",
                "external-delegation",
                "artifact-report",
                "context-handbook",
                "code-report",
                "council-report",
                "delegation-plan",
                "oracle-report",
                "council-ballot",
                "world-knowledge-report",
            ]
        );
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
