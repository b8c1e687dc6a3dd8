//! `result_contract_shape`: the one place each kind's wire example is
//! written. Repair rounds quote it verbatim, and recipe prompts and fleet
//! directives cite it, so a prompt can never drift from its validator.

use super::kind::{ResultContract, ResultContractKind};

/// The exact shape a model must emit for `contract`.
pub fn result_contract_shape(contract: &ResultContract) -> String {
    match contract.kind {
        ResultContractKind::ArchitectPlan => format!(
            "a plan artifact written to {}, then optionally \
             {{\"commitMessage\":\"...\",\"summary\":\"...\"}} describing it",
            contract.path.as_deref().unwrap_or("the plan path")
        ),
        ResultContractKind::ScoutReport => concat!(
            r#"{"findings":[{"claim":"what you observed","path":"src/file.rs","line":12}],"needsSplit":false,"proposedSubtasks":[]}"#,
            " or, when the task must be split, ",
            r#"{"findings":[],"needsSplit":true,"proposedSubtasks":[{"id":"inspect","task":"Inspect the boundary","dependencies":[],"expectedResultContract":"scout-report","requestedAuthority":"read-only"}]}"#,
            " or, only when you cannot cite a line you read, ",
            r#"{"findings":[{"claim":"what you observed"}]}"#,
            " (accepted as an ungrounded lead rather than losing the run)"
        )
        .to_owned(),
        ResultContractKind::VerifierReport => concat!(
            r#"{"verdict":"pass","checks":[{"name":"cargo test","passed":true,"evidence":"exit 0"}]}"#,
            " or ",
            r#"{"verdict":"fail","checks":[{"name":"cargo test","passed":false,"evidence":"exit 101"}]}"#,
            "; verdict is pass or fail and must be pass exactly when every check passed"
        )
        .to_owned(),
        ResultContractKind::DebuggerReport => {
            r#"{"diagnosis":"...","reproduction":"reproduced","evidence":["..."]} with reproduction one of reproduced, not-reproduced, unknown"#
                .to_owned()
        }
        ResultContractKind::ResearchReport => {
            r#"{"source":"local","findings":[{"claim":"...","evidence":"..."}]} with source local or external"#
                .to_owned()
        }
        ResultContractKind::MutationReport => {
            r#"{"mutatedPaths":["src/file.rs"],"validations":[{"name":"cargo test","passed":true,"evidence":"exit 0"}],"commitMessage":"optional: ...","summary":"optional: one line"}"#
                .to_owned()
        }
        ResultContractKind::ProvenanceReport => {
            r#"{"confirmedFacts":["..."],"missingEvidence":["..."],"nextInspections":["..."]}"#
                .to_owned()
        }
        ResultContractKind::ExternalDelegation => "any final text".to_owned(),
        ResultContractKind::ArtifactReport => {
            "any final text; the artifact you wrote at the location the task named is the result"
                .to_owned()
        }
        ResultContractKind::ContextHandbook => {
            r#"{"projectName":"...","identity":"what the project is","conventions":["..."],"invariants":["..."],"sections":[{"title":"...","body":"..."}]}"#
                .to_owned()
        }
        ResultContractKind::CodeReport => {
            r#"{"passed":false,"exitCode":1,"checks":[{"name":"test","passed":false,"evidence":"exit 1"}],"artifactPaths":["/path/command.log"],"outputExcerpt":"..."}"#
                .to_owned()
        }
        ResultContractKind::CouncilReport => {
            r#"{"members":[{"label":"a","runId":"...","round":1,"answer":"..."}],"synthesis":{"kind":"vote","verdict":"yes","tally":{"yes":1}}}"#
                .to_owned()
        }
        ResultContractKind::DelegationPlan => {
            r#"{"tasks":[{"id":"build","agent":"coder","description":"Implement the change","depends_on":[],"writes":["src"],"mode":"parallel"}]}"#
                .to_owned()
        }
        ResultContractKind::OracleReport => {
            r#"{"verdict":"...","challenge":"the strongest objection","changesMyMind":"what evidence would change the verdict","citedDecisions":["..."]}"#
                .to_owned()
        }
        ResultContractKind::CouncilBallot => {
            r#"{"verdict":"yes","text":"the answer and the evidence behind it"}"#.to_owned()
        }
        ResultContractKind::WorldKnowledgeReport => {
            r#"{"answer":"...","findings":[{"claim":"...","evidence":"where it comes from"}]}"#
                .to_owned()
        }
    }
}
