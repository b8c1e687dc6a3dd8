//! The clio `worker-boundary` and recipe-schema focused tests, re-expressed
//! with the same inputs and expected outputs, plus the framework workers.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use common::{catalog_with_extras, front, recipe_text, spec_from};
use evoflux_agents::ToolCatalog;
use evoflux_agents::contract::{ResultContract, ResultContractKind, parse_code_report};
use evoflux_agents::worker::catalog::{IgnoreReason, WorkerFile, load_spec};
use evoflux_agents::worker::recipe::RESERVED_CUSTOM_AGENT_IDS;
use evoflux_agents::worker::{
    Audience, CapabilityClass, LatencyClass, RecipeSource, ToolRequirement, agent_spec_fingerprint,
    agent_spec_policy_errors, build_catalog, framework_specs, parse_recipe,
    resolve_tool_compatibility,
};
use evoflux_core::Diagnostics;
use evoflux_graph::Layer;

fn parse(id: &str, source: RecipeSource, text: &str) -> (bool, Diagnostics) {
    let mut d = Diagnostics::new();
    let ok = parse_recipe(id, source, Path::new("r.md"), text, &mut d).is_some();
    (ok, d)
}

fn messages(d: &Diagnostics) -> String {
    d.iter()
        .map(|x| x.message.clone())
        .collect::<Vec<_>>()
        .join("\n")
}

fn boundary_recipe() -> String {
    recipe_text(
        &front(&[
            ("capabilityClass", "verification"),
            (
                "tools",
                r#"{required: ["read", {anyOf: ["grep", "find"]}], optional: ["verify"]}"#,
            ),
            ("resultContract", "{kind: verifier-report}"),
        ]),
        "Check the change.\n",
    )
}

#[test]
fn worker_boundary_strict_recipe_parsing_flattens_tools() {
    let spec = spec_from(
        "checker",
        RecipeSource::Project,
        &boundary_recipe(),
        &catalog_with_extras(),
    );
    assert_eq!(spec.tools, ["read", "grep", "find", "verify"]);
    assert_eq!(spec.capability_class, CapabilityClass::Verification);
    assert_eq!(spec.audience, Audience::Custom);
    assert_eq!(spec.budget.tool_calls, 8);
    assert_eq!(spec.budget.read_reserve, 2);
    assert!(spec.budget.synthesis);
    assert_eq!(
        spec.result_contract,
        ResultContract::new(ResultContractKind::VerifierReport)
    );
    assert_eq!(
        spec.tool_requirements.required[1],
        ToolRequirement::AnyOf {
            any_of: vec!["grep".into(), "find".into()]
        }
    );
}

#[test]
fn worker_boundary_tool_compatibility_resolution() {
    let spec = spec_from(
        "checker",
        RecipeSource::Project,
        &boundary_recipe(),
        &catalog_with_extras(),
    );
    let c = resolve_tool_compatibility(&spec, &["read", "find"], true);
    assert!(c.compatible);
    assert!(c.missing_required.is_empty());
    assert_eq!(c.lost_optional, ["verify"]);
    let c = resolve_tool_compatibility(&spec, &["read"], true);
    assert!(!c.compatible);
    assert_eq!(c.missing_required, ["anyOf(grep|find)"]);
    assert_eq!(c.lost_optional, ["verify"]);
}

#[test]
fn worker_boundary_unknown_key_rejected() {
    let text = recipe_text(&front(&[("forbiddenRoutingHint", "model-x")]), "Body\n");
    let (ok, d) = parse("checker", RecipeSource::Project, &text);
    assert!(!ok);
    assert!(d.has_code("worker/key-unknown"));
    assert!(messages(&d).contains("unknown key 'forbiddenRoutingHint'"));
}

#[test]
fn worker_boundary_code_report_round_trip() {
    let good = "```json\n{\"passed\":true,\"exitCode\":0,\"checks\":[{\"name\":\"test\",\"passed\":true,\"evidence\":\"exit 0\"}],\"artifactPaths\":[\"/tmp/test.log\"],\"outputExcerpt\":\"ok\"}\n```";
    let r = parse_code_report(good).unwrap();
    assert!(r.passed && r.exit_code == 0 && r.checks.len() == 1);
    let bad = good.replace("\"exitCode\":0", "\"exitCode\":1");
    assert!(parse_code_report(&bad).is_none());
    assert!(parse_code_report("```json\n[1]\n```").is_none());
}

#[test]
fn old_routing_hints_are_unknown_keys() {
    for key in [
        "model",
        "target",
        "provider",
        "runtime",
        "thinkingLevel",
        "output",
    ] {
        let text = recipe_text(&front(&[(key, "forbidden")]), "Body\n");
        let (ok, d) = parse("x", RecipeSource::Project, &text);
        assert!(!ok, "{key}");
        assert!(
            messages(&d).contains(&format!("unknown key '{key}'")),
            "{key}"
        );
    }
}

#[test]
fn missing_keys_version_body_and_types() {
    let text = recipe_text(&front(&[("tags", "")]), "Body\n");
    let (_, d) = parse("x", RecipeSource::Project, &text);
    assert!(messages(&d).contains("tags is required"));
    assert!(d.has_code("worker/key-missing"));
    let text = recipe_text(&front(&[("version", "2")]), "Body\n");
    let (_, d) = parse("x", RecipeSource::Project, &text);
    assert!(messages(&d).contains("version must be the supported integer 1"));
    let (_, d) = parse(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[]), "  \n"),
    );
    assert!(messages(&d).contains("persona body must not be empty"));
    let (_, d) = parse(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[("skills", "[1]")]), "B\n"),
    );
    assert!(messages(&d).contains("must be a non-empty string"));
    let (_, d) = parse(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[("tags", "[a, a]")]), "B\n"),
    );
    assert!(messages(&d).contains("must not contain duplicates"));
    let (_, d) = parse(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[("latencyClass", "slow")]), "B\n"),
    );
    assert!(messages(&d).contains("latencyClass has an unsupported value"));
}

#[test]
fn tools_shape_errors() {
    for (tools, msg) in [
        ("[read]", "tools must be a { required, optional } object"),
        (
            "{required: [], optional: [], extra: []}",
            "tools has an unknown key",
        ),
        (
            "{required: []}",
            "tools.required and tools.optional are required",
        ),
        ("{required: read, optional: []}", "must be arrays"),
        (
            "{required: [1], optional: []}",
            "must be a tool name or { anyOf: [...] }",
        ),
        (
            "{required: [{anyOf: [a], x: 1}], optional: []}",
            "must contain only anyOf",
        ),
        (
            "{required: [{anyOf: []}], optional: []}",
            ".anyOf must not be empty",
        ),
        (
            "{required: [read], optional: [read]}",
            "tools contains duplicate requirements",
        ),
    ] {
        let (ok, d) = parse(
            "x",
            RecipeSource::Project,
            &recipe_text(&front(&[("tools", tools)]), "B\n"),
        );
        assert!(!ok, "{tools}");
        assert!(d.has_code("worker/tools-invalid"), "{tools}");
        assert!(messages(&d).contains(msg), "{tools}: {}", messages(&d));
    }
}

#[test]
fn product_closed_enum() {
    let (ok, d) = parse(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[("product", "orientaton")]), "B\n"),
    );
    assert!(!ok);
    assert!(messages(&d).contains("product has an unsupported value"));
    let (ok, _) = parse(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[("product", "orientation")]), "B\n"),
    );
    assert!(ok);
}

#[test]
fn audience_is_provenance() {
    for claimed in ["internal", "shadow", "base"] {
        for source in [RecipeSource::User, RecipeSource::Project] {
            let (ok, d) = parse(
                "x",
                source,
                &recipe_text(&front(&[("audience", claimed)]), "B\n"),
            );
            assert!(!ok);
            assert!(d.has_code("worker/audience-invalid"));
            assert!(
                messages(&d).contains(&format!("must declare audience 'custom', not '{claimed}'"))
            );
        }
    }
    let (ok, _) = parse("x", RecipeSource::User, &recipe_text(&front(&[]), "B\n"));
    assert!(ok);
    let (ok, d) = parse(
        "x",
        RecipeSource::Framework,
        &recipe_text(&front(&[]), "B\n"),
    );
    assert!(!ok);
    assert!(messages(&d).contains("must not declare audience 'custom'"));
}

#[test]
fn budget_rules() {
    for (budget, msg) in [
        (
            "{toolCalls: 4, readReserve: 4, synthesis: true}",
            "budget.readReserve must be less than budget.toolCalls",
        ),
        (
            "{toolCalls: 4, readReserve: -1, synthesis: true}",
            "budget.readReserve must be greater than or equal to 0",
        ),
        (
            "{toolCalls: 4.5, readReserve: 1, synthesis: true}",
            "budget.toolCalls must be a finite safe integer",
        ),
        (
            "{toolCalls: \"4\", readReserve: 1, synthesis: true}",
            "budget.toolCalls must be a finite safe integer",
        ),
        (
            "{toolCalls: 4, synthesis: true}",
            "budget.readReserve is required",
        ),
        (
            "{toolCalls: 4, readReserve: 1, synthesis: true, extra: 1}",
            "budget.extra is unknown",
        ),
        (
            "{toolCalls: 0, readReserve: 0, synthesis: true}",
            "budget.toolCalls must be greater than 0",
        ),
        (
            "{toolCalls: 4, readReserve: 1, synthesis: yes please}",
            "budget.synthesis must be a boolean",
        ),
        (
            "{toolCalls: 8, readReserve: 2, synthesis: true, maximum: {toolCalls: 6, readReserve: 2}}",
            "budget.maximum.toolCalls must be greater than or equal to budget.toolCalls",
        ),
    ] {
        let (ok, d) = parse(
            "x",
            RecipeSource::Project,
            &recipe_text(&front(&[("budget", budget)]), "B\n"),
        );
        assert!(!ok, "{budget}");
        assert!(d.has_code("worker/budget-invalid"));
        assert!(messages(&d).contains(msg), "{budget}: {}", messages(&d));
    }
    let spec = spec_from(
        "x",
        RecipeSource::Project,
        &recipe_text(
            &front(&[(
                "budget",
                "{toolCalls: 8, readReserve: 2, synthesis: false, maximum: {toolCalls: 20, readReserve: 4}}",
            )]),
            "B\n",
        ),
        &ToolCatalog::framework(),
    );
    assert_eq!(spec.budget.maximum.unwrap().tool_calls, 20);
}

#[test]
fn recipe_may_not_declare_coordinator_kinds() {
    for kind in ["code-report", "council-ballot"] {
        let (ok, d) = parse(
            "x",
            RecipeSource::Project,
            &recipe_text(
                &front(&[("resultContract", &format!("{{kind: {kind}}}"))]),
                "B\n",
            ),
        );
        assert!(!ok, "{kind}");
        assert!(d.has_code("worker/result-contract-invalid"));
    }
}

#[test]
fn twelve_framework_workers_are_policy_clean() {
    let specs = framework_specs(&ToolCatalog::framework()).unwrap();
    let ids: Vec<&str> = specs.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "architect",
            "coder",
            "context-bootstrap",
            "debugger",
            "documenter",
            "git-master",
            "provenance",
            "researcher",
            "scout",
            "tester",
            "verifier",
            "wiki-writer"
        ]
    );
    for s in &specs {
        assert_eq!(s.version, 1);
        assert!(!s.body.is_empty(), "{}", s.id);
        assert!(agent_spec_policy_errors(s, &ToolCatalog::framework()).is_empty());
        // Every declared tool exists in the framework vocabulary.
        assert!(s.tool_classes.values().all(Option::is_some), "{}", s.id);
    }
    let get = |id: &str| specs.iter().find(|s| s.id == id).unwrap();
    assert_eq!(
        get("architect").result_contract,
        ResultContract::architect_plan(".evoflux/artifacts/PLAN.md")
    );
    assert_eq!(
        get("wiki-writer").result_contract.kind,
        ResultContractKind::ArtifactReport
    );
    assert_eq!(get("context-bootstrap").audience, Audience::Internal);
    assert_eq!(
        get("context-bootstrap").result_contract.kind,
        ResultContractKind::ContextHandbook
    );
    assert_eq!(
        get("scout").result_contract.kind,
        ResultContractKind::ScoutReport
    );
}

#[test]
fn skills_require_the_skill_loader() {
    let tools = ToolCatalog::framework();
    let text = recipe_text(
        &front(&[
            ("skills", "[review]"),
            ("tools", "{required: [read], optional: []}"),
        ]),
        "B\n",
    );
    let spec = spec_from("x", RecipeSource::Project, &text, &tools);
    let errors = agent_spec_policy_errors(&spec, &tools);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("declares skills but does not expose context")),
        "{errors:?}"
    );
    let text = recipe_text(
        &front(&[
            ("skills", "[review]"),
            ("tools", "{required: [read], optional: [skill]}"),
        ]),
        "B\n",
    );
    let spec = spec_from("x", RecipeSource::Project, &text, &tools);
    assert_eq!(
        agent_spec_policy_errors(&spec, &tools),
        ["agent 'x' must require context for bound skills"]
    );
    let text = recipe_text(
        &front(&[
            ("skills", "[review]"),
            ("tools", "{required: [read, skill], optional: []}"),
        ]),
        "B\n",
    );
    let spec = spec_from("x", RecipeSource::Project, &text, &tools);
    assert!(agent_spec_policy_errors(&spec, &tools).is_empty());
}

#[test]
fn policy_is_decided_by_action_class_not_name() {
    let tools = ToolCatalog::framework();
    let check = |class: &str, req: &str, opt: &str, contract: &str| {
        let text = recipe_text(
            &front(&[
                ("capabilityClass", class),
                (
                    "tools",
                    &format!("{{required: [{req}], optional: [{opt}]}}"),
                ),
                ("resultContract", contract),
            ]),
            "B\n",
        );
        agent_spec_policy_errors(
            &spec_from("w", RecipeSource::Project, &text, &tools),
            &tools,
        )
    };
    assert!(
        check(
            "workspace-edit",
            "read, {anyOf: [write, edit]}",
            "",
            "{kind: mutation-report}"
        )
        .is_empty()
    );
    assert_eq!(
        check("workspace-edit", "read", "edit", "{kind: mutation-report}"),
        ["workspace-edit agent 'w' must require read and write|edit"]
    );
    assert_eq!(
        check("read-only", "read", "shell, edit", "{kind: scout-report}"),
        [
            "read-only agent 'w' requests execute tools (shell)",
            "read-only agent 'w' requests write tools (edit)"
        ]
    );
    // Read-only means read-class only: no network tools either.
    assert_eq!(
        check("read-only", "read", "web_fetch", "{kind: research-report}"),
        ["read-only agent 'w' requests network tools (web_fetch)"]
    );
    assert!(check("read-only", "read", "grep", "{kind: research-report}").is_empty());
    assert_eq!(
        check("verification", "verify", "write", "{kind: verifier-report}"),
        ["verification agent 'w' must not request write tool 'write'"]
    );
    // A verifier runs typed checks, never a shell.
    let shelled = check("verification", "shell", "read", "{kind: verifier-report}");
    assert_eq!(shelled.len(), 2, "{shelled:?}");
    assert_eq!(shelled[0], "verification agent 'w' must require verify");
    assert!(shelled[1].contains("not shell ('shell' is an execute tool)"));
    assert!(
        check(
            "verification",
            "verify",
            "read, grep",
            "{kind: verifier-report}"
        )
        .is_empty()
    );
    // An artifact writer writes through `artifact` only.
    assert!(
        check(
            "artifact-write",
            "artifact",
            "read",
            "{kind: architect-plan, path: .evoflux/artifacts/PLAN.md}"
        )
        .is_empty()
    );
    assert_eq!(
        check(
            "artifact-write",
            "artifact",
            "write",
            "{kind: architect-plan, path: .evoflux/artifacts/PLAN.md}"
        ),
        ["artifact-write agent 'w' can only write terminal artifacts; got 'write'"]
    );
    assert_eq!(
        check(
            "artifact-write",
            "read, write",
            "",
            "{kind: architect-plan, path: .evoflux/artifacts/PLAN.md}"
        ),
        [
            "artifact-write agent 'w' must require artifact",
            "artifact-write agent 'w' can only write terminal artifacts; got 'write'"
        ]
    );
    assert!(
        check("verification", "read", "", "{kind: verifier-report}")[0]
            .contains("must require verify")
    );
    assert_eq!(
        check("read-only", "read", "agent", "{kind: scout-report}"),
        ["agent 'w' exposes dispatch without orchestration capability"]
    );
    assert_eq!(
        check(
            "orchestration",
            "read",
            "agent",
            "{kind: external-delegation}"
        ),
        ["orchestration agent 'w' must require dispatch when it is declared"]
    );
    assert!(
        check(
            "orchestration",
            "read, agent",
            "",
            "{kind: external-delegation}"
        )
        .is_empty()
    );
    assert_eq!(
        check(
            "workspace-edit",
            "read, write",
            "ask_user",
            "{kind: mutation-report}"
        ),
        ["agent 'w' exposes ask_user, which is only available to the orchestrator"]
    );
    assert_eq!(
        check(
            "artifact-write",
            "artifact",
            "shell",
            "{kind: architect-plan, path: P.md}"
        ),
        ["artifact-write agent 'w' requests execute tool 'shell'"]
    );
    assert!(
        check("artifact-write", "artifact", "", "{kind: mutation-report}")[0]
            .contains("can only write terminal artifacts")
    );
    // A tool the graph does not define has no provable class.
    assert_eq!(
        check("read-only", "read", "mystery", "{kind: scout-report}"),
        ["read-only agent 'w' requests unknown tools (mystery)"]
    );
    // The same name with another declared class is judged by the class.
    let writer_grep =
        ToolCatalog::from_definitions(tools.iter().filter(|t| t.name != "grep").cloned().chain([
            common::tool("grep", evoflux_graph::tool::ActionClass::Write),
        ]));
    let text = recipe_text(&front(&[]), "B\n");
    let spec = spec_from("w", RecipeSource::Project, &text, &writer_grep);
    assert_eq!(
        agent_spec_policy_errors(&spec, &writer_grep),
        ["read-only agent 'w' requests write tools (grep)"]
    );
}

/// A read-only agent is told once per refused class, in the order of the
/// classes' names; ask and dispatch tools are reported by their own rules
/// only, never a second time as read-only violations.
#[test]
fn read_only_policy_reports_each_class_once() {
    let tools = ToolCatalog::framework();
    let text = recipe_text(
        &front(&[
            ("capabilityClass", "read-only"),
            (
                "tools",
                "{required: [read], optional: [edit, shell, mystery, verify, web_fetch, agent, ask_user, write]}",
            ),
            ("resultContract", "{kind: scout-report}"),
        ]),
        "B\n",
    );
    let spec = spec_from("w", RecipeSource::Project, &text, &tools);
    assert_eq!(
        agent_spec_policy_errors(&spec, &tools),
        [
            "read-only agent 'w' requests execute tools (shell)",
            "read-only agent 'w' requests network tools (web_fetch)",
            "read-only agent 'w' requests unknown tools (mystery)",
            "read-only agent 'w' requests verify tools (verify)",
            "read-only agent 'w' requests write tools (edit, write)",
            "agent 'w' exposes dispatch without orchestration capability",
            "agent 'w' exposes ask_user, which is only available to the orchestrator",
        ]
    );
}

#[test]
fn compatibility_reports_lost_optional_and_dispatch_mediation() {
    let tools = ToolCatalog::framework();
    let text = recipe_text(
        &front(&[
            ("capabilityClass", "workspace-edit"),
            ("tools", "{required: [read], optional: [edit]}"),
            ("resultContract", "{kind: mutation-report}"),
        ]),
        "B\n",
    );
    let spec = spec_from("w", RecipeSource::Project, &text, &tools);
    let c = resolve_tool_compatibility(&spec, &["read"], true);
    assert!(c.compatible);
    assert!(c.missing_required.is_empty());
    assert_eq!(c.lost_optional, ["edit"]);
    let text = recipe_text(
        &front(&[
            ("capabilityClass", "orchestration"),
            ("tools", "{required: [read, agent], optional: []}"),
            ("resultContract", "{kind: external-delegation}"),
        ]),
        "B\n",
    );
    let spec = spec_from("o", RecipeSource::Project, &text, &tools);
    let c = resolve_tool_compatibility(&spec, &["read", "agent"], false);
    assert!(!c.compatible);
    assert_eq!(c.missing_required, ["agent(runtime mediation unavailable)"]);
    assert!(resolve_tool_compatibility(&spec, &["read", "agent"], true).compatible);
}

#[test]
fn fingerprint_ignores_display_fields_only() {
    let tools = ToolCatalog::framework();
    let base = spec_from(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[]), "B\n"),
        &tools,
    );
    let fp = agent_spec_fingerprint(&base);
    for (k, v) in [
        ("name", "Other"),
        ("description", "Something else."),
        ("category", "explore"),
        ("tags", "[b, c]"),
    ] {
        let s = spec_from(
            "x",
            RecipeSource::User,
            &recipe_text(&front(&[(k, v)]), "B\n"),
            &tools,
        );
        assert_eq!(agent_spec_fingerprint(&s), fp, "{k}");
    }
    for (k, v) in [
        ("latencyClass", "deep"),
        ("resultContract", "{kind: research-report}"),
        ("budget", "{toolCalls: 9, readReserve: 2, synthesis: true}"),
        ("tools", "{required: [read], optional: [grep, ls]}"),
    ] {
        let s = spec_from(
            "x",
            RecipeSource::Project,
            &recipe_text(&front(&[(k, v)]), "B\n"),
            &tools,
        );
        assert_ne!(agent_spec_fingerprint(&s), fp, "{k}");
    }
    let s = spec_from(
        "x",
        RecipeSource::Project,
        &recipe_text(&front(&[]), "Other body\n"),
        &tools,
    );
    assert_ne!(agent_spec_fingerprint(&s), fp);
    // anyOf member order does not matter; the tool order of `tools` neither.
    let a = spec_from(
        "x",
        RecipeSource::Project,
        &recipe_text(
            &front(&[("tools", "{required: [{anyOf: [grep, ls]}], optional: []}")]),
            "B\n",
        ),
        &tools,
    );
    let b = spec_from(
        "x",
        RecipeSource::Project,
        &recipe_text(
            &front(&[("tools", "{required: [{anyOf: [ls, grep]}], optional: []}")]),
            "B\n",
        ),
        &tools,
    );
    assert_eq!(agent_spec_fingerprint(&a), agent_spec_fingerprint(&b));
    // A pinned value: the canonical form is stable across releases.
    assert_eq!(fp.as_str().len(), 64);
}

#[test]
fn latency_priors_increase() {
    assert!(LatencyClass::Fast.prior() < LatencyClass::Balanced.prior());
    assert!(LatencyClass::Balanced.prior() < LatencyClass::Deep.prior());
}

fn file(id: &str, layer: Layer, text: &str) -> WorkerFile {
    WorkerFile {
        id: id.into(),
        path: PathBuf::from(format!("/{layer}/workers/{id}.md")),
        layer,
        text: text.into(),
    }
}

#[test]
fn merge_rules_reserved_ids_shadow_and_builtin() {
    let tools = ToolCatalog::framework();
    let custom = |desc: &str| {
        recipe_text(
            &front(&[
                ("description", desc),
                ("capabilityClass", "workspace-edit"),
                ("tools", "{required: [read, edit], optional: []}"),
                ("resultContract", "{kind: mutation-report}"),
            ]),
            "B\n",
        )
    };
    let mut d = Diagnostics::new();
    let files = vec![
        file("auto", Layer::Project, &custom("A.")),
        file("coder", Layer::Project, &custom("Project coder.")),
        file("scout", Layer::User, &custom("User scout.")),
        file("tester", Layer::User, &custom("User tester.")),
        file("helper", Layer::Project, &custom("Helper.")),
    ];
    let cat = build_catalog(files, &tools, &BTreeSet::new(), &mut d).unwrap();
    let reasons: Vec<(&str, IgnoreReason)> = cat
        .ignored
        .iter()
        .map(|i| (i.id.as_str(), i.reason))
        .collect();
    assert_eq!(
        reasons,
        [
            ("auto", IgnoreReason::ReservedAgentId),
            ("coder", IgnoreReason::ReservedBuiltin),
            ("scout", IgnoreReason::ReservedShadow),
        ]
    );
    assert_eq!(cat.get("coder").unwrap().source, RecipeSource::Framework);
    assert_eq!(cat.get("scout").unwrap().source, RecipeSource::Framework);
    assert_eq!(cat.get("tester").unwrap().description, "User tester.");
    assert_eq!(cat.get("helper").unwrap().source, RecipeSource::Project);
    assert!(cat.get("auto").is_none());
    assert_eq!(
        d.codes().iter().filter(|c| **c == "worker/ignored").count(),
        3
    );
    assert!(RESERVED_CUSTOM_AGENT_IDS.contains(&"worker"));
}

#[test]
fn defective_file_recipe_is_quarantined_not_fatal() {
    let tools = ToolCatalog::framework();
    let mut d = Diagnostics::new();
    let bad = recipe_text(&front(&[("model", "forbidden")]), "B\n");
    let policy_bad = recipe_text(
        &front(&[("tools", "{required: [read, shell], optional: []}")]),
        "B\n",
    );
    let unbound = recipe_text(
        &front(&[
            ("skills", "[missing-skill]"),
            ("tools", "{required: [read, skill], optional: []}"),
        ]),
        "B\n",
    );
    let cat = build_catalog(
        vec![
            file("bad", Layer::Project, &bad),
            file("policy", Layer::User, &policy_bad),
            file("unbound", Layer::Project, &unbound),
        ],
        &tools,
        &BTreeSet::new(),
        &mut d,
    )
    .unwrap();
    assert!(cat.get("bad").is_none() && cat.get("policy").is_none());
    let q: Vec<&str> = cat.quarantined.iter().map(|q| q.id.as_str()).collect();
    assert_eq!(q, ["bad", "policy", "unbound"]);
    assert!(
        cat.quarantined[0]
            .diagnostics
            .has_code("worker/key-unknown")
    );
    assert!(
        cat.quarantined[1]
            .diagnostics
            .has_code("worker/policy-violation")
    );
    assert!(cat.quarantined[2].diagnostics.iter().any(|x| {
        x.code == "worker/skill-unavailable"
            && x.message
                .contains("bound skill(s) unavailable: missing-skill")
    }));
    assert!(
        !d.has_errors(),
        "quarantine is a warning, not a compile error"
    );
    assert_eq!(
        d.codes()
            .iter()
            .filter(|c| **c == "worker/quarantined")
            .count(),
        3
    );
    // A quarantined recipe never appears in the rendered roster.
    let roster = evoflux_agents::worker::render_roster(&cat.specs);
    assert!(!roster.contains("- bad ") && !roster.contains("- policy "));
}

#[test]
fn framework_defect_aborts() {
    let tools = ToolCatalog::framework();
    let text = recipe_text(&front(&[("audience", "custom")]), "B\n");
    let err = load_spec(
        "x",
        RecipeSource::Framework,
        Path::new("x.md"),
        &text,
        &tools,
        &BTreeSet::new(),
    )
    .unwrap_err();
    assert!(err.has_code("worker/audience-invalid"));
    // The framework set itself loads against the framework tools; with a
    // graph that lost `read`, the readers' policy cannot be proven and the
    // load aborts with the defect named.
    let no_read = ToolCatalog::from_definitions(tools.iter().filter(|t| t.name != "read").cloned());
    let err = framework_specs(&no_read).unwrap_err();
    assert!(err.to_string().contains("is defective"));
}

#[test]
fn roster_is_byte_stable_and_splits_audiences() {
    let specs = framework_specs(&ToolCatalog::framework()).unwrap();
    let a = evoflux_agents::worker::render_roster(&specs);
    let mut reversed = specs.clone();
    reversed.reverse();
    assert_eq!(a, evoflux_agents::worker::render_roster(&reversed));
    assert!(
        !a.contains("context-bootstrap"),
        "internal workers are never listed"
    );
    let (public, shadow) = a
        .split_once("Internal specialists, dispatch-only:")
        .unwrap();
    assert!(public.contains("- coder (workspace-edit, 50 calls): "));
    assert!(shadow.contains("- scout (read-only, 18 calls): "));
    insta::assert_snapshot!(a);
    assert_eq!(evoflux_agents::worker::render_roster(&[]), "");
}
