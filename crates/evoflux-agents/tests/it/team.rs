//! Team agents through the real source graph: the harness spec's agent
//! invariants and team construction with several leads.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use evoflux_agents::ToolCatalog;
use evoflux_agents::team::seed::init_seeds;
use evoflux_agents::team::{
    AgentDirectory, AgentSource, Role, TeamError, compile_agent_config, load_agents,
    validate_agent_text,
};
use evoflux_agents::worker::load_workers;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::{CompiledGraph, RootOptions, compile_standard};

struct Fixture {
    _tmp: tempfile::TempDir,
    user: PathBuf,
    project: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("config");
        let project = tmp.path().join("repo");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        std::fs::create_dir_all(&user).unwrap();
        Fixture {
            _tmp: tmp,
            user,
            project,
        }
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.project.join(".evoflux").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn write_user(&self, rel: &str, text: &str) {
        let p = self.user.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn graph(&self) -> CompiledGraph {
        compile_standard(&RootOptions {
            admin_dir: None,
            user_config_dir: Some(self.user.clone()),
            home: None,
            workspaces: vec![self.project.clone()],
            trusted: vec![self.project.clone()],
            plugins: Vec::new(),
            foreign_mcp: Vec::new(),
        })
        .unwrap()
    }

    fn agents(&self, mode: AppMode) -> (AgentDirectory, Diagnostics) {
        let mut d = Diagnostics::new();
        let dir = load_agents(&self.graph(), mode, &mut d);
        (dir, d)
    }

    /// Every file below the fixture with its bytes.
    fn tree(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(self._tmp.path(), &mut out);
        out
    }
}

#[test]
fn builtin_team_exists_without_files() {
    let f = Fixture::new();
    let (work, d) = f.agents(AppMode::Work);
    assert!(!d.has_errors(), "{}", d.render_human());
    assert_eq!(work.default_lead.as_deref(), Some("evoflux"));
    let team = work.team(None).unwrap();
    assert_eq!(team.lead, "evoflux");
    assert_eq!(
        team.members,
        ["consultant", "debate", "executor", "explorer"]
    );
    let (coding, _) = f.agents(AppMode::Coding);
    assert_eq!(
        coding.team(None).unwrap().members,
        ["architect", "coder", "debate", "explorer"]
    );
}

#[test]
fn team_construction_with_two_leads() {
    let f = Fixture::new();
    f.write(
        "agents/research-lead.md",
        "---\nname: research-lead\nrole: lead\ndescription: Leads research\n---\nLead research.\n",
    );
    f.write(
        "agents/analyst.md",
        "---\nname: analyst\nrole: member\nlead: research-lead\n---\n",
    );
    f.write("agents/writer.md", "---\nname: writer\n---\nWrite well.\n");
    let (work, d) = f.agents(AppMode::Work);
    assert!(!d.has_errors(), "{}", d.render_human());
    assert_eq!(work.leads(), ["evoflux", "research-lead"]);
    assert_eq!(work.default_lead.as_deref(), Some("evoflux"));
    let default = work.team(None).unwrap();
    assert_eq!(
        default.members,
        ["consultant", "debate", "executor", "explorer", "writer"]
    );
    let research = work.team(Some("research-lead")).unwrap();
    assert_eq!(research.members, ["analyst"]);
    assert!(!research.members.iter().any(|m| default.members.contains(m)));
    assert_eq!(
        work.team(Some("writer")).unwrap_err(),
        TeamError::NotALead {
            mode: AppMode::Work,
            name: "writer".into(),
            leads: vec!["evoflux".into(), "research-lead".into()],
        }
    );
    // Work leads are not Coding leads.
    let (coding, _) = f.agents(AppMode::Coding);
    assert!(coding.team(Some("research-lead")).is_err());
}

#[test]
fn a_lead_is_addressed_as_agents_show_addresses_it() {
    let f = Fixture::new();
    f.write(
        "agents/coding/reviewer.md",
        "---
role: lead
---
",
    );
    let (coding, _) = f.agents(AppMode::Coding);
    assert_eq!(
        coding.team(Some("coding/reviewer")).unwrap(),
        coding.team(Some("reviewer")).unwrap()
    );
    assert_eq!(
        coding.team(Some("coding/reviewer")).unwrap().lead,
        "reviewer"
    );
    let (work, _) = f.agents(AppMode::Work);
    assert_eq!(
        work.team(Some("coding/reviewer")).unwrap_err(),
        TeamError::OtherMode {
            mode: AppMode::Work,
            name: "coding/reviewer".into(),
            agent_mode: AppMode::Coding,
        }
    );
    // The error names every valid lead, in words and as a field.
    let err = coding.team(Some("nosuch")).unwrap_err();
    let TeamError::NotALead { leads, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(leads, &["evoflux", "reviewer"]);
    assert!(err.to_string().contains("evoflux, reviewer"), "{err}");
}

#[test]
fn default_lead_is_deterministic_when_builtin_lead_is_overridden() {
    let f = Fixture::new();
    f.write(
        "agents/evoflux.md",
        "---\nname: evoflux\nrole: member\n---\n",
    );
    f.write("agents/zeta.md", "---\nrole: lead\n---\n");
    f.write("agents/alpha.md", "---\nrole: lead\n---\n");
    let (work, _) = f.agents(AppMode::Work);
    assert_eq!(work.default_lead.as_deref(), Some("alpha"));
    assert!(
        work.team(None)
            .unwrap()
            .members
            .contains(&"evoflux".to_owned())
    );
    assert!(work.team(Some("zeta")).unwrap().members.is_empty());
}

#[test]
fn all_malformed_files_reported_together() {
    let f = Fixture::new();
    f.write("agents/a.md", "---\nrole: boss\n---\n");
    f.write("agents/b.md", "---\nmodel: nocolon\n---\n");
    f.write("agents/c.md", "---\nlead: nobody\n---\n");
    f.write("agents/d.md", "no front matter\n");
    let (work, d) = f.agents(AppMode::Work);
    for code in [
        "agent/role-invalid",
        "agent/model-invalid",
        "agent/lead-unknown",
        "agent/frontmatter-missing",
    ] {
        assert!(d.has_code(code), "{code}: {}", d.render_human());
    }
    assert!(work.agents.iter().filter(|a| !a.is_valid()).count() >= 4);
    assert!(!work.team(None).unwrap().members.iter().any(|m| m == "c"));
}

/// Issue #46: 100,000 nested brackets in a front matter value (200 KB) are
/// refused before parsing, naming the file and the line, while the other
/// agents load as usual.
#[test]
fn hostile_front_matter_is_refused_with_its_file_and_line() {
    let f = Fixture::new();
    f.write("agents/writer.md", "---\nname: writer\n---\nWrite well.\n");
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    f.write(
        "agents/deep.md",
        &format!("---\nname: deep\ndescription: {deep}\n---\nBody.\n"),
    );
    // The source graph refuses the file (as `agents list` and `info`
    // report it) and the team is built without it.
    let graph = f.graph();
    let mut d = Diagnostics::new();
    let work = load_agents(&graph, AppMode::Work, &mut d);
    let refused: Vec<_> = graph
        .diagnostics
        .iter()
        .chain(d.iter())
        .filter(|x| x.code == "yaml/too-deep")
        .collect();
    assert!(!refused.is_empty(), "{}", graph.diagnostics.render_human());
    for x in refused {
        assert!(x.is_error());
        assert!(x.locator.file.as_ref().unwrap().ends_with("agents/deep.md"));
        assert_eq!(x.locator.line, Some(3));
    }
    assert!(
        work.team(None)
            .unwrap()
            .members
            .iter()
            .any(|m| m == "writer")
    );
    assert!(!work.team(None).unwrap().members.iter().any(|m| m == "deep"));
}

#[test]
fn only_flat_work_and_coding_agents_exist() {
    let f = Fixture::new();
    f.write("agents/aim/old.md", "---\nrole: member\n---\n");
    f.write("agents/coding/reviewer.md", "---\nrole: member\n---\n");
    f.write("agents/helper.md", "---\nrole: member\n---\n");
    let graph = f.graph();
    assert!(graph.diagnostics.has_code("discover/agent-folder-invalid"));
    let mut d = Diagnostics::new();
    let work = load_agents(&graph, AppMode::Work, &mut d);
    let coding = load_agents(&graph, AppMode::Coding, &mut d);
    let names = |dir: &AgentDirectory| {
        dir.agents
            .iter()
            .map(|a| a.name.clone())
            .collect::<Vec<_>>()
    };
    assert!(names(&work).contains(&"helper".into()));
    assert!(!names(&work).contains(&"reviewer".into()));
    assert!(names(&coding).contains(&"reviewer".into()));
    assert!(!names(&work).contains(&"old".into()) && !names(&coding).contains(&"old".into()));
}

#[test]
fn case_insensitive_duplicate_names_are_errors() {
    let f = Fixture::new();
    f.write("agents/coding/Helper.md", "---\nrole: member\n---\n");
    f.write("agents/coding/helper.md", "---\nrole: member\n---\n");
    let (_, d) = f.agents(AppMode::Coding);
    assert_eq!(
        d.codes()
            .iter()
            .filter(|c| **c == "agent/name-duplicate")
            .count(),
        2
    );
}

#[test]
fn validation_with_an_explicit_mode_never_creates_files() {
    let f = Fixture::new();
    f.write("agents/helper.md", "---\nrole: member\n---\n");
    let before = f.tree();
    for mode in AppMode::ALL {
        let (dir, _) = f.agents(mode);
        let mut d = Diagnostics::new();
        let _ = dir.compile_all(&ToolCatalog::framework(), &mut d);
        let d = validate_agent_text(
            mode,
            "new-agent",
            Path::new("new-agent.md"),
            "---\nrole: lead\n---\n",
        );
        assert!(d.is_empty());
    }
    let bad = validate_agent_text(
        AppMode::Coding,
        "x",
        Path::new("x.md"),
        "---\nrole: captain\n---\n",
    );
    assert!(bad.has_code("agent/role-invalid"));
    assert!(
        validate_agent_text(AppMode::Work, "a b", Path::new("a.md"), "---\n---\n")
            .has_code("agent/name-invalid")
    );
    assert_eq!(f.tree(), before, "validation wrote to disk");
}

#[test]
fn listing_never_mutates_configuration() {
    let f = Fixture::new();
    f.write(
        "agents/helper.md",
        "---\nrole: member\nx-unknown: keep\n---\n",
    );
    f.write_user(
        "agents/coding/coder.md",
        "---\nname: coder\nthinking_level: high\n---\n",
    );
    let before = f.tree();
    let graph = f.graph();
    let tools = ToolCatalog::from_graph(&graph);
    for mode in AppMode::ALL {
        let mut d = Diagnostics::new();
        let dir = load_agents(&graph, mode, &mut d);
        let _ = dir.compile_all(&tools, &mut d);
        let _ = dir.team(None);
    }
    let _ = load_workers(&graph, &tools, &mut Diagnostics::new()).unwrap();
    assert_eq!(f.tree(), before, "listing wrote to disk");
    // No seed was materialized by loading.
    assert!(!f.user.join("agents/evoflux.md").exists());
}

#[test]
fn user_file_overrides_identity_and_keeps_code_owned_profile() {
    let f = Fixture::new();
    f.write_user(
        "agents/coding/coder.md",
        "---\nname: coder\nmodel: openai:gpt-4o\ntools_opt_out: [shell]\n---\nPrefer small diffs.\n",
    );
    let graph = f.graph();
    let mut d = Diagnostics::new();
    let dir = load_agents(&graph, AppMode::Coding, &mut d);
    let entry = dir.get("coder").unwrap();
    assert!(matches!(entry.source, AgentSource::File { .. }));
    let raw = entry.raw.as_ref().unwrap();
    assert_eq!(raw.role, Role::Member);
    let e = compile_agent_config(
        raw,
        entry.source.clone(),
        &ToolCatalog::from_graph(&graph),
        &mut d,
    );
    assert!(e.builtin_profile);
    assert_eq!(e.model.as_deref(), Some("openai:gpt-4o"));
    assert!(e.prompt.starts_with("You are the coder."));
    assert!(e.prompt.ends_with("Prefer small diffs."));
    assert!(!e.tools.contains(&"shell".into()));
    assert!(e.tools.contains(&"code_context".into()));
    assert!(
        !e.tools.contains(&"ask_user".into()),
        "lead-only tools stay with leads"
    );
}

#[test]
fn init_materializes_seeds_once_and_they_load_like_builtins() {
    let f = Fixture::new();
    let before = {
        let (dir, _) = f.agents(AppMode::Work);
        dir.compile_all(&ToolCatalog::framework(), &mut Diagnostics::new())
    };
    let report = init_seeds(&f.user).unwrap();
    assert_eq!(report.created.len(), 10);
    assert!(f.user.join("agents/evoflux.md").exists());
    assert!(f.user.join("agents/coding/coder.md").exists());
    std::fs::write(
        f.user.join("agents/explorer.md"),
        "---\nname: explorer\n---\nmine\n",
    )
    .unwrap();
    let again = init_seeds(&f.user).unwrap();
    assert!(again.created.is_empty() && again.kept.len() == 10);
    assert_eq!(
        std::fs::read_to_string(f.user.join("agents/explorer.md")).unwrap(),
        "---\nname: explorer\n---\nmine\n"
    );
    std::fs::remove_file(f.user.join("agents/explorer.md")).unwrap();
    init_seeds(&f.user).unwrap();
    let (dir, d) = f.agents(AppMode::Work);
    assert!(!d.has_errors(), "{}", d.render_human());
    let mut after = dir.compile_all(&ToolCatalog::framework(), &mut Diagnostics::new());
    for e in &mut after {
        e.source = AgentSource::Builtin;
    }
    assert_eq!(
        after, before,
        "a seed changes nothing but where the agent lives"
    );
}

#[test]
fn workers_from_the_graph_follow_audience_rules() {
    let f = Fixture::new();
    let recipe = |desc: &str, audience: &str| {
        format!(
            "---\nversion: 1\nname: W\ndescription: {desc}\ntools: {{required: [read, edit], optional: []}}\nskills: []\naudience: {audience}\ncategory: implement\ncapabilityClass: workspace-edit\nlatencyClass: fast\nprojectContextTier: none\nbudget: {{toolCalls: 5, readReserve: 1, synthesis: true}}\nresultContract: {{kind: mutation-report}}\ntags: [implementation]\n---\nDo it.\n"
        )
    };
    f.write("workers/helper.md", &recipe("Project helper.", "custom"));
    f.write("workers/coder.md", &recipe("Project coder.", "custom"));
    f.write("workers/sneaky.md", &recipe("Claims base.", "base"));
    f.write_user("workers/tester.md", &recipe("User tester.", "custom"));
    let graph = f.graph();
    let mut d = Diagnostics::new();
    let cat = load_workers(&graph, &ToolCatalog::from_graph(&graph), &mut d).unwrap();
    assert_eq!(cat.get("helper").unwrap().description, "Project helper.");
    assert!(!cat.get("coder").unwrap().description.contains("Project"));
    assert_eq!(cat.get("tester").unwrap().description, "User tester.");
    assert!(cat.get("sneaky").is_none());
    assert!(d.has_code("worker/quarantined") && d.has_code("worker/ignored"));
    assert_eq!(cat.specs.len(), 13);
}

#[test]
fn a_member_file_named_like_a_worker_warns_that_it_shadows_it() {
    use evoflux_agents::team::{MEMBER_SHADOWS_WORKER, members_shadowing_workers};
    let f = Fixture::new();
    // `tester` is a framework worker a Coding lead can dispatch.
    f.write(
        "agents/coding/tester.md",
        "---\nrole: member\ndescription: Our tests\n---\nTest.\n",
    );
    // Overriding a built-in member changes nothing about which worker is
    // reachable: the built-in `coder` member already takes that name.
    f.write("agents/coding/coder.md", "---\nrole: member\n---\n");
    // Work leads dispatch no workers.
    f.write("agents/tester.md", "---\nrole: member\n---\n");
    let graph = f.graph();
    let workers = load_workers(
        &graph,
        &ToolCatalog::from_graph(&graph),
        &mut Diagnostics::new(),
    )
    .unwrap();
    let coding = load_agents(&graph, AppMode::Coding, &mut Diagnostics::new());
    let warned = members_shadowing_workers(&coding, &workers);
    assert_eq!(warned.codes(), [MEMBER_SHADOWS_WORKER], "{warned:?}");
    let d = &warned.as_slice()[0];
    assert_eq!(d.severity, evoflux_core::Severity::Warning);
    assert!(
        d.locator
            .file
            .as_ref()
            .is_some_and(|p| p.ends_with("agents/coding/tester.md")),
        "{d:?}"
    );
    assert_eq!(
        d.locator.slot,
        Some(evoflux_graph::Slot::new(
            evoflux_graph::SlotKind::CodingAgent,
            "tester"
        ))
    );
    let work = load_agents(&graph, AppMode::Work, &mut Diagnostics::new());
    assert!(members_shadowing_workers(&work, &workers).is_empty());
}
