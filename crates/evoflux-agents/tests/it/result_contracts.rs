//! Every result-contract kind: an accepting and a rejecting case, quality
//! labels, grounding with and without evidence, and the repair exchange.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_agents::contract::{
    Conformance, DiskFilesystem, FactConformance, Quality, RESULT_CONTRACT_REPAIR_LIMIT,
    ResultContract, ResultContractKind as K, RunEffects, RunEvidence, ValidationContext,
    parse_scout_result, repair_exchange, result_contract_authorship, result_contract_output_bytes,
    result_contract_shape, validate_recipe_result, validate_result_contract,
};

struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new() -> Ws {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(
            src.join("overlays.ts"),
            "a\nb\nc\nd\ne\nexport const overlay = 1;\ng\n",
        )
        .unwrap();
        std::fs::write(src.join("math.js"), "x\n").unwrap();
        Ws { dir }
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn check(
        &self,
        contract: &ResultContract,
        output: &str,
        evidence: &RunEvidence,
    ) -> (Conformance, Quality, Option<String>) {
        self.check_net(contract, output, evidence, false)
    }

    fn check_net(
        &self,
        contract: &ResultContract,
        output: &str,
        evidence: &RunEvidence,
        network: bool,
    ) -> (Conformance, Quality, Option<String>) {
        let ctx = ValidationContext {
            cwd: self.root(),
            network_allowed: network,
            filesystem: &DiskFilesystem,
            evidence,
        };
        let v = validate_result_contract(contract, Some(output), &ctx);
        (v.conformance, v.quality, v.reason)
    }
}

fn k(kind: K) -> ResultContract {
    ResultContract::new(kind)
}

fn none() -> RunEvidence {
    RunEvidence::default()
}

fn reads(ws: &Ws, file: &str, spans: &[(u32, u32)]) -> RunEvidence {
    let mut m = BTreeMap::new();
    m.insert(ws.root().join(file), spans.to_vec());
    RunEvidence {
        read_spans: Some(m),
        effects: None,
    }
}

use Conformance::{Fail as CF, Pass as CP};
use Quality::{Fail as QF, Pass as QP, Unmeasured as QU};

#[test]
fn architect_plan_needs_its_artifact() {
    let ws = Ws::new();
    let c = ResultContract::architect_plan("PLAN.md");
    let (conf, q, reason) = ws.check(&c, "done", &none());
    assert_eq!((conf, q), (CF, QU));
    assert_eq!(
        reason.unwrap(),
        "required plan artifact is missing or empty: PLAN.md"
    );
    std::fs::write(ws.root().join("PLAN.md"), "# Plan\n1. do it\n").unwrap();
    assert_eq!(ws.check(&c, "done", &none()).0, CP);
    assert_eq!(ws.check(&c, "done", &none()).1, QU);
}

#[test]
fn scout_strict_grounded_and_ungrounded() {
    let ws = Ws::new();
    let c = k(K::ScoutReport);
    let cite = |line: u32| {
        format!(
            r#"{{"findings":[{{"claim":"overlay is exported","path":"src/overlays.ts","line":{line}}}],"needsSplit":false,"proposedSubtasks":[]}}"#
        )
    };
    // Grounded in the grep line it read.
    assert_eq!(
        ws.check(
            &c,
            &cite(6),
            &reads(&ws, "src/overlays.ts", &[(6, 6), (7, 7)])
        ),
        (CP, QP, None)
    );
    // A line the run did not read.
    let (conf, q, reason) = ws.check(
        &c,
        &cite(2),
        &reads(&ws, "src/overlays.ts", &[(6, 6), (7, 7)]),
    );
    assert_eq!((conf, q), (CF, QF));
    assert_eq!(
        reason.unwrap(),
        "Scout citation is not grounded in a live read: src/overlays.ts:2 (this run read only 6-6, 7-7)"
    );
}

#[test]
fn scout_read_map_cases() {
    let ws = Ws::new();
    let c = k(K::ScoutReport);
    let cite = |line: u32| {
        format!(
            r#"{{"findings":[{{"claim":"c","path":"src/overlays.ts","line":{line}}}],"needsSplit":false}}"#
        )
    };
    let r = ws.check(&c, &cite(5), &reads(&ws, "src/overlays.ts", &[(1, 3)]));
    assert!(
        r.2.as_ref()
            .unwrap()
            .contains("not grounded in a live read")
    );
    assert!(r.2.unwrap().contains("this run read only 1-3"));
    assert_eq!(
        ws.check(&c, &cite(2), &reads(&ws, "src/overlays.ts", &[(1, 3)]))
            .0,
        CP
    );
    let empty = RunEvidence {
        read_spans: Some(BTreeMap::new()),
        effects: None,
    };
    assert!(
        ws.check(&c, &cite(5), &empty)
            .2
            .unwrap()
            .contains("this run never read that file")
    );
    // Without a read map only existence is checked.
    assert_eq!(ws.check(&c, &cite(5), &none()), (CP, QP, None));
    let r = ws.check(&c, &cite(99), &none());
    assert_eq!(
        r.2.unwrap(),
        "Scout citation is past end of file: src/overlays.ts:99"
    );
    let escape =
        r#"{"findings":[{"claim":"c","path":"../etc/passwd","line":1}],"needsSplit":false}"#;
    assert!(
        ws.check(&c, escape, &none())
            .2
            .unwrap()
            .contains("escapes the workspace")
    );
    let missing =
        r#"{"findings":[{"claim":"c","path":"src/nope.ts","line":1}],"needsSplit":false}"#;
    assert!(
        ws.check(&c, missing, &none())
            .2
            .unwrap()
            .contains("cannot be read: src/nope.ts")
    );
    // A directory citation is accepted.
    let dir = r#"{"findings":[{"claim":"layout","path":"src","line":1}],"needsSplit":false}"#;
    assert_eq!(ws.check(&c, dir, &none()).0, CP);
}

#[test]
fn scout_split_and_parse_scout_result() {
    let ws = Ws::new();
    let split = r#"{"findings":[],"needsSplit":true,"proposedSubtasks":[{"id":"inspect","task":"Inspect the boundary","dependencies":[],"expectedResultContract":"scout-report","requestedAuthority":"read-only"}]}"#;
    assert_eq!(ws.check(&k(K::ScoutReport), split, &none()), (CP, QP, None));
    let parsed = parse_scout_result(split).unwrap();
    assert!(parsed.needs_split);
    assert!(parse_scout_result("SPLIT RECOMMENDATION: do two things").is_none());
    assert!(
        parse_scout_result(
            r#"{"findings":[],"needsSplit":true,"proposedSubtasks":["inspect it"]}"#
        )
        .is_none()
    );
    let extra = split.replace(
        r#""requestedAuthority":"read-only""#,
        r#""requestedAuthority":"read-only","agent":"scout""#,
    );
    assert!(parse_scout_result(&extra).is_none());
    for (bad, reason) in [
        (
            r#"{"findings":[],"needsSplit":true,"proposedSubtasks":[]}"#,
            "Scout needsSplit must agree with proposedSubtasks",
        ),
        (
            r#"{"findings":[{"claim":"c","path":"src/math.js","line":1}],"needsSplit":true,"proposedSubtasks":[{"id":"a","task":"t","dependencies":[],"expectedResultContract":"scout-report","requestedAuthority":"read-only"}]}"#,
            "Scout split recommendations carry typed subtasks instead of findings",
        ),
        (
            r#"{"findings":[],"needsSplit":false}"#,
            "Scout result must carry at least one cited finding, or set needsSplit",
        ),
        (
            r#"{"findings":[],"other":1}"#,
            "Scout result has unknown fields",
        ),
    ] {
        let r = ws.check(&k(K::ScoutReport), bad, &none());
        assert!(parse_scout_result(bad).is_none(), "{bad}");
        let salvaged = bad.contains(r#""claim""#);
        if salvaged {
            // A cited finding survives as a degraded result.
            assert_eq!((r.0, r.1), (CP, QU), "{bad}");
            assert!(r.2.unwrap().starts_with(reason));
        } else {
            assert_eq!((r.0, r.1), (CF, QF), "{bad}");
            assert_eq!(r.2.unwrap(), reason);
        }
    }
    // Cyclic or self-referencing subtasks are not a valid split.
    let cyclic = r#"{"findings":[],"needsSplit":true,"proposedSubtasks":[{"id":"a","task":"t","dependencies":["b"],"expectedResultContract":"scout-report","requestedAuthority":"read-only"},{"id":"b","task":"t","dependencies":["a"],"expectedResultContract":"scout-report","requestedAuthority":"read-only"}]}"#;
    assert!(parse_scout_result(cyclic).is_none());
}

#[test]
fn scout_degraded_acceptance() {
    let ws = Ws::new();
    let ctx_ev = none();
    let ctx = ValidationContext {
        cwd: ws.root(),
        network_allowed: false,
        filesystem: &DiskFilesystem,
        evidence: &ctx_ev,
    };
    let c = k(K::ScoutReport);
    let v = validate_result_contract(
        &c,
        Some(r#"{"findings":[{"claim":"the cache is keyed by path"}]}"#),
        &ctx,
    );
    assert_eq!((v.conformance, v.quality), (CP, QU));
    let s = v.scout.unwrap();
    assert_eq!(s.ungrounded_claims, ["the cache is keyed by path"]);
    assert!(s.findings.is_empty());
    assert!(
        s.degraded_reason
            .unwrap()
            .contains("accepted as a degraded reconnaissance result")
    );
    // Mixed entries keep grounded and ungrounded apart; a bad citation is
    // demoted, not failed; malformed subtasks are dropped.
    let mixed = r#"{"findings":[{"claim":"real","path":"src/overlays.ts","line":6},{"claim":"lead"},{"claim":"wrong line","path":"src/overlays.ts","line":999}],"needsSplit":true,"proposedSubtasks":["x"]}"#;
    let v = validate_result_contract(&c, Some(mixed), &ctx);
    assert_eq!((v.conformance, v.quality), (CP, QU));
    let s = v.scout.unwrap();
    assert_eq!(s.findings.len(), 1);
    assert_eq!(s.findings[0].line, 6);
    assert_eq!(s.ungrounded_claims, ["lead", "wrong line"]);
    assert!(!s.needs_split && s.proposed_subtasks.is_empty());
    assert!(parse_scout_result(mixed).is_none());
    for nothing in [
        r#"{"findings":[],"needsSplit":false}"#,
        r#"{"findings":[{"path":"a","line":1}]}"#,
        r#"{"findings":[{"claim":"  "}]}"#,
        r#"{"findings":"many"}"#,
        r#"{"summary":"I looked around"}"#,
        "I looked around and found nothing",
    ] {
        let v = validate_result_contract(&c, Some(nothing), &ctx);
        assert_eq!((v.conformance, v.quality), (CF, QF), "{nothing}");
        assert!(v.scout.is_none());
    }
}

#[test]
fn verifier_report() {
    let ws = Ws::new();
    let c = k(K::VerifierReport);
    let pass =
        r#"{"verdict":"pass","checks":[{"name":"cargo test","passed":true,"evidence":"exit 0"}]}"#;
    assert_eq!(ws.check(&c, pass, &none()), (CP, QP, None));
    let fenced = format!("```json\n{pass}\n```");
    assert_eq!(ws.check(&c, &fenced, &none()).1, QP);
    let fail = r#"{"verdict":"fail","checks":[{"name":"cargo test","passed":false,"evidence":"exit 101"}]}"#;
    assert_eq!(ws.check(&c, fail, &none()), (CP, QF, None));
    let lying = r#"{"verdict":"pass","checks":[{"name":"t","passed":false,"evidence":"exit 1"}]}"#;
    assert_eq!(
        ws.check(&c, lying, &none()),
        (
            CF,
            QF,
            Some("Verifier verdict must agree with every typed check".into())
        )
    );
    assert_eq!(
        ws.check(&c, "```json\n[1,2]\n```", &none()).2.unwrap(),
        "result must be a JSON object"
    );
    assert_eq!(
        ws.check(&c, r#"{"verdict":"pass","checks":[]}"#, &none())
            .2
            .unwrap(),
        "Verifier result must carry pass or fail verdict and checks"
    );
}

#[test]
fn debugger_report() {
    let ws = Ws::new();
    let c = k(K::DebuggerReport);
    let ok =
        r#"{"diagnosis":"off by one","reproduction":"reproduced","evidence":["sum([1]) == 0"]}"#;
    assert_eq!(ws.check(&c, ok, &none()), (CP, QU, None));
    let with_verdict =
        r#"{"diagnosis":"x","reproduction":"reproduced","evidence":[],"verdict":"pass"}"#;
    let r = ws.check(&c, with_verdict, &none());
    assert_eq!((r.0, r.1), (CF, QU));
    assert!(r.2.unwrap().contains("without a verdict"));
    assert_eq!(
        ws.check(
            &c,
            r#"{"diagnosis":"x","reproduction":"maybe","evidence":[]}"#,
            &none()
        )
        .0,
        CF
    );
}

#[test]
fn research_report_network_posture() {
    let ws = Ws::new();
    let c = k(K::ResearchReport);
    let local = r#"{"source":"local","findings":[{"claim":"c","evidence":"README.md:3"}]}"#;
    assert_eq!(ws.check(&c, local, &none()), (CP, QU, None));
    let external = local.replace("local", "external");
    let r = ws.check(&c, &external, &none());
    assert_eq!((r.0, r.1), (CF, QU));
    assert_eq!(
        r.2.unwrap(),
        "external research requires an allowed network posture"
    );
    assert_eq!(ws.check_net(&c, &external, &none(), true).0, CP);
    assert_eq!(
        ws.check(&c, r#"{"source":"local","findings":["x"]}"#, &none())
            .2
            .unwrap(),
        "Research findings must be objects"
    );
    assert_eq!(
        ws.check(
            &c,
            r#"{"source":"local","findings":[{"claim":"x"}]}"#,
            &none()
        )
        .2
        .unwrap(),
        "Research findings must carry claim and evidence"
    );
}

fn effects(written: &[&str], refused: &[&str], commands: &[&str]) -> RunEvidence {
    RunEvidence {
        read_spans: None,
        effects: Some(RunEffects {
            written_paths: written.iter().map(PathBuf::from).collect(),
            refused_paths: refused.iter().map(PathBuf::from).collect(),
            validation_commands: commands.iter().map(|s| (*s).to_owned()).collect(),
        }),
    }
}

#[test]
fn mutation_report_grounding() {
    let ws = Ws::new();
    let c = k(K::MutationReport);
    let report = |path: &str| {
        format!(
            r#"{{"mutatedPaths":["{path}"],"validations":[{{"name":"npm test","passed":true,"evidence":"exit 0"}}]}}"#
        )
    };
    let r = ws.check(&c, &report("src/file.ts"), &effects(&[], &[], &[]));
    assert_eq!(r.0, CF);
    let reason = r.2.unwrap();
    assert!(
        reason.contains("never wrote and that does not exist: src/file.ts"),
        "{reason}"
    );
    assert!(reason.contains("this run wrote nothing"));
    // Written and validated: pass.
    std::fs::write(ws.root().join("src/file.ts"), "x").unwrap();
    assert_eq!(
        ws.check(
            &c,
            &report("src/file.ts"),
            &effects(&["src/file.ts"], &[], &["npm test"])
        ),
        (CP, QP, None)
    );
    // No effects supplied: the report's own word.
    assert_eq!(
        ws.check(&c, &report("src/file.ts"), &none()),
        (CP, QP, None)
    );
    // Present but not written: unverified, unmeasured.
    assert_eq!(
        ws.check(
            &c,
            &report("src/math.js"),
            &effects(&["src/file.ts"], &[], &["npm test"])
        )
        .1,
        QU
    );
    // Written but nothing validated: unmeasured.
    assert_eq!(
        ws.check(
            &c,
            &report("src/file.ts"),
            &effects(&["src/file.ts"], &[], &[])
        )
        .1,
        QU
    );
    let r = ws.check(
        &c,
        &report("src/math.js"),
        &effects(&[], &["src/math.js"], &[]),
    );
    assert_eq!(r.0, CF);
    assert!(
        r.2.unwrap()
            .contains("only write this run attempted was refused: src/math.js")
    );
    // Self-reported failure conforms with quality fail.
    let failing = r#"{"mutatedPaths":[],"validations":[{"name":"npm test","passed":false,"evidence":"exit 1"}]}"#;
    assert_eq!(ws.check(&c, failing, &none()), (CP, QF, None));
}

#[test]
fn mutation_report_shape_and_authorship() {
    let ws = Ws::new();
    let c = k(K::MutationReport);
    let with = |extra: &str| {
        format!(
            r#"{{"mutatedPaths":[],"validations":[{{"name":"t","passed":true,"evidence":"ok"}}]{extra}}}"#
        )
    };
    for ok in [
        r#","commitMessage":"""#,
        r#","commitMessage":null"#,
        r#","commitMessage":"   ""#,
        "",
    ] {
        assert_eq!(ws.check(&c, &with(ok), &none()).0, CP, "{ok}");
    }
    assert_eq!(
        ws.check(&c, &with(r#","commitMessage":42"#), &none())
            .2
            .unwrap(),
        "commitMessage must be a string when present"
    );
    let long = format!(r#","summary":"{}""#, "a".repeat(1001));
    assert!(
        ws.check(&c, &with(&long), &none())
            .2
            .unwrap()
            .contains("at most 1000 bytes")
    );
    assert!(
        ws.check(&c, &with(r#","summary":"a\u0007b""#), &none())
            .2
            .unwrap()
            .contains("must not contain control characters")
    );
    let empty = r#"{"mutatedPaths":[],"validations":[]}"#;
    let reason = ws.check(&c, empty, &none()).2.unwrap();
    assert!(reason.contains("validations was empty"));
    assert!(reason.contains(r#"{"name":"npm test","passed":true,"evidence":"exit 0"}"#));
    assert!(reason.contains("only read files"));
    let prose = r#"{"mutatedPaths":[],"validations":["ran npm test"]}"#;
    let reason2 = ws.check(&c, prose, &none()).2.unwrap();
    assert!(reason2.contains(r#"{"name":"npm test","passed":true,"evidence":"exit 0"}"#));
    assert!(reason2.contains("no other keys") && !reason2.contains("was empty"));
    // The repair message carries the same text.
    let ex = repair_exchange(1, &reason, &c, &[]);
    assert!(
        ex.result
            .text
            .contains(&format!("Validator reason: {reason}"))
    );
    assert_eq!(
        ws.check(&c, r#"{"validations":[]}"#, &none()).2.unwrap(),
        "Mutation result must carry mutatedPaths and validations"
    );
    let a = result_contract_authorship(
        &c,
        &with(r#","commitMessage":"fix: sum\r\n\r\nbody ","summary":"  ""#),
    )
    .unwrap();
    assert_eq!(a.commit_message.as_deref(), Some("fix: sum\n\nbody"));
    assert_eq!(a.summary, None);
    assert!(result_contract_authorship(&k(K::VerifierReport), "{}").is_none());
    assert!(result_contract_authorship(&c, "not json").is_none());
}

#[test]
fn provenance_handbook_and_free_text_kinds() {
    let ws = Ws::new();
    let p = k(K::ProvenanceReport);
    assert_eq!(
        ws.check(
            &p,
            r#"{"confirmedFacts":[],"missingEvidence":["x"],"nextInspections":[]}"#,
            &none()
        ),
        (CP, QU, None)
    );
    assert_eq!(ws.check(&p, r#"{"confirmedFacts":[]}"#, &none()).0, CF);
    let h = k(K::ContextHandbook);
    let hb = r#"{"projectName":"p","identity":"a tool","conventions":["x"],"invariants":[],"sections":[{"title":"t","body":"b"}]}"#;
    assert_eq!(ws.check(&h, hb, &none()), (CP, QU, None));
    let r = ws.check(&h, &hb.replace(r#""invariants":[],"#, ""), &none());
    assert_eq!((r.0, r.1), (CF, QF));
    for kind in [K::ExternalDelegation, K::ArtifactReport] {
        assert_eq!(
            ws.check(&k(kind), "anything at all", &none()),
            (CP, QU, None)
        );
    }
}

#[test]
fn code_report_kind() {
    let ws = Ws::new();
    let c = k(K::CodeReport);
    let red = r#"{"passed":false,"exitCode":1,"checks":[{"name":"test","passed":false,"evidence":"exit 1"}],"artifactPaths":[],"outputExcerpt":"FAIL"}"#;
    assert_eq!(
        ws.check(&c, red, &none()),
        (CP, QU, None),
        "a red suite conforms"
    );
    let disagree = red.replace(r#""exitCode":1"#, r#""exitCode":0"#);
    assert_eq!(
        ws.check(&c, &disagree, &none()).2.unwrap(),
        "Code result passed must agree with its exit code and every check"
    );
    assert_eq!(
        ws.check(
            &c,
            r#"{"passed":true,"exitCode":0,"checks":[],"artifactPaths":[],"outputExcerpt":""}"#,
            &none()
        )
        .2
        .unwrap(),
        "Code result must carry typed checks"
    );
}

#[test]
fn council_delegation_oracle_ballot_world_knowledge() {
    let ws = Ws::new();
    let cases: [(K, &str, &str, Quality); 5] = [
        (
            K::CouncilReport,
            r#"{"members":[{"label":"a","runId":"r1","round":1,"answer":"yes"}],"synthesis":{"kind":"vote","verdict":"yes","tally":{"yes":1}}}"#,
            r#"{"members":[{"label":"a","runId":"r1","round":0,"answer":"yes"}],"synthesis":{"kind":"vote"}}"#,
            QF,
        ),
        (
            K::DelegationPlan,
            r#"{"tasks":[{"id":"build","agent":"coder","description":"Implement","depends_on":[],"writes":["src"],"mode":"parallel"}]}"#,
            r#"{"tasks":[{"id":"build","agent":"coder","description":"Implement","depends_on":[],"writes":["src"],"mode":"whenever"}]}"#,
            QF,
        ),
        (
            K::OracleReport,
            r#"{"verdict":"keep","challenge":"c","changesMyMind":"a benchmark","citedDecisions":[]}"#,
            r#"{"verdict":"keep"}"#,
            QU,
        ),
        (
            K::CouncilBallot,
            r#"{"verdict":"yes","text":"because"}"#,
            r#"{"verdict":"yes\nno","text":"because"}"#,
            QU,
        ),
        (
            K::WorldKnowledgeReport,
            r#"{"answer":"42","findings":[{"claim":"c","evidence":"e"}]}"#,
            r#"{"answer":"","findings":[]}"#,
            QU,
        ),
    ];
    for (kind, good, bad, fail_quality) in cases {
        assert_eq!(ws.check(&k(kind), good, &none()), (CP, QU, None), "{kind}");
        let r = ws.check(&k(kind), bad, &none());
        assert_eq!((r.0, r.1), (CF, fail_quality), "{kind}");
        assert!(r.2.is_some());
    }
    let long = format!(r#"{{"verdict":"{}","text":"t"}}"#, "y".repeat(65));
    assert_eq!(ws.check(&k(K::CouncilBallot), &long, &none()).0, CF);
}

#[test]
fn every_kind_has_a_shape_and_missing_output_fails_json_kinds() {
    let ws = Ws::new();
    let ev = none();
    let ctx = ValidationContext {
        cwd: ws.root(),
        network_allowed: false,
        filesystem: &DiskFilesystem,
        evidence: &ev,
    };
    for kind in K::ALL {
        let c = match kind {
            K::ArchitectPlan => ResultContract::architect_plan("PLAN.md"),
            _ => k(kind),
        };
        assert!(!result_contract_shape(&c).is_empty(), "{kind}");
        let v = validate_result_contract(&c, None, &ctx);
        match kind {
            K::ExternalDelegation | K::ArtifactReport => assert_eq!(v.conformance, CP),
            _ => assert_eq!(v.conformance, CF, "{kind}"),
        }
        assert!(
            v.source_id
                .starts_with(&format!("agent-result-contract:{kind}:"))
        );
    }
    assert!(
        result_contract_shape(&ResultContract::architect_plan("docs/P.md")).contains("docs/P.md")
    );
    assert_eq!(
        result_contract_output_bytes(&k(K::MutationReport)),
        Some(2 * 1000 + 16 * 1024)
    );
    assert_eq!(result_contract_output_bytes(&k(K::ScoutReport)), None);
}

#[test]
fn not_reached_is_not_a_quality_failure() {
    let ws = Ws::new();
    let ev = none();
    let ctx = ValidationContext {
        cwd: ws.root(),
        network_allowed: false,
        filesystem: &DiskFilesystem,
        evidence: &ev,
    };
    let c = k(K::ScoutReport);
    let o = validate_recipe_result(Some(&c), None, false, &ctx).unwrap();
    assert!(!o.applicable);
    assert_eq!(o.fact.conformance, FactConformance::NotReached);
    assert_eq!(o.fact.quality, QU);
    assert!(
        o.fact
            .source_id
            .starts_with("agent-result-contract:scout-report:")
    );
    let o = validate_recipe_result(Some(&c), None, true, &ctx).unwrap();
    assert_eq!(
        (o.fact.conformance, o.fact.quality),
        (FactConformance::Fail, QF)
    );
    assert!(validate_recipe_result(None, Some("x"), true, &ctx).is_none());
    // Digests: equal inputs agree, a different reason differs.
    let a = validate_result_contract(&c, Some("nope"), &ctx);
    let b = validate_result_contract(&c, Some("nope"), &ctx);
    let d = validate_result_contract(&c, Some("[1]"), &ctx);
    assert_eq!(a.validator_digest, b.validator_digest);
    assert_ne!(a.validator_digest, d.validator_digest);
}

#[test]
fn repair_exchange_shape() {
    assert_eq!(RESULT_CONTRACT_REPAIR_LIMIT, 2);
    let anchors: Vec<String> = (1..=14).map(|i| format!("src/overlays.ts:{i}")).collect();
    let c = k(K::ScoutReport);
    let first = repair_exchange(
        1,
        "Scout citation is not grounded in a live read: src/overlays.ts:2 (this run read only 6-6, 7-7)",
        &c,
        &anchors,
    );
    assert_eq!(first.call.id, "evoflux-result-contract-repair-1");
    assert_eq!(first.call.name, "result_contract");
    assert_eq!(first.result.tool_call_id, first.call.id);
    assert!(first.result.is_error);
    assert!(
        !first.result.text.contains("- src/overlays.ts:2\n"),
        "only the last 12 anchors"
    );
    // The strict shape comes before the ungrounded fallback.
    let t = &first.result.text;
    assert!(t.find(r#""line":12"#).unwrap() < t.find("ungrounded lead").unwrap());
    let last = repair_exchange(2, "result must be valid JSON", &k(K::VerifierReport), &[]);
    assert!(
        last.result
            .text
            .starts_with("FINAL RESULT REQUIRED IN THIS RESPONSE.")
    );
    insta::assert_json_snapshot!("repair_exchange_round_1", first);
    insta::assert_json_snapshot!("repair_exchange_final_round", last);
}
