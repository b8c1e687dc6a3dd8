//! The compiler against fixtures on disk.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use evoflux_graph::candidate::AppRoot;
use evoflux_graph::compose::CompositionEntry;
use evoflux_graph::info;
use evoflux_graph::registry::BuiltinModule;
use evoflux_graph::tool::{Handling, ToolExecutor};
use evoflux_graph::{
    BuiltinRegistry, CompiledGraph, Definition, Layer, Owner, RootOptions, Slot, compile,
    compile_standard,
};

struct Fixture {
    _tmp: tempfile::TempDir,
    user: PathBuf,
    repo: PathBuf,
}

impl Fixture {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let user = tmp.path().join("config");
        let repo = tmp.path().join("repo");
        std::fs::create_dir_all(&user).unwrap();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        Fixture {
            _tmp: tmp,
            user,
            repo,
        }
    }

    fn write(&self, path: impl AsRef<Path>, text: &str) -> PathBuf {
        let path = path.as_ref().to_path_buf();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn user_file(&self, rel: &str, text: &str) -> PathBuf {
        self.write(self.user.join(rel), text)
    }

    fn project_file(&self, rel: &str, text: &str) -> PathBuf {
        self.write(self.repo.join(".evoflux").join(rel), text)
    }

    fn options(&self) -> RootOptions {
        RootOptions {
            admin_dir: None,
            user_config_dir: Some(self.user.clone()),
            home: None,
            workspaces: vec![self.repo.clone()],
            trusted: vec![self.repo.clone()],
            plugins: Vec::new(),
            foreign_mcp: Vec::new(),
        }
    }

    fn compile(&self) -> CompiledGraph {
        compile_standard(&self.options()).unwrap()
    }
}

const COMMAND_TOOL: &str = r#"
description = "Fetch a URL with curl"
argv = ["curl", "-sL", "{{url}}"]
[input_schema]
type = "object"
required = ["url"]
[input_schema.properties.url]
type = "string"
"#;

fn codes(g: &CompiledGraph) -> Vec<&str> {
    g.diagnostics.codes()
}

fn tool<'a>(g: &'a CompiledGraph, name: &str) -> Option<&'a evoflux_graph::tool::ToolDefinition> {
    match &g.node(&Slot::tool(name))?.definition {
        Definition::Tool(t) => Some(t),
        _ => None,
    }
}

#[test]
fn framework_defaults_compile_clean() {
    let f = Fixture::new();
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    for name in evoflux_graph::tool::FRAMEWORK_TOOLS {
        let t = tool(&g, name).unwrap();
        let bound = g
            .binding(&g.node(&Slot::tool(name)).unwrap().source_id)
            .unwrap();
        assert!(matches!(bound.owner, Owner::Framework { .. }), "{name}");
        assert!(matches!(
            bound.binding,
            evoflux_graph::Binding::Builtin { .. }
        ));
        assert_eq!(t.name, *name);
    }
    assert!(g.node(&Slot::config()).is_some());
    assert!(g.node(&Slot::sandbox()).is_some());
    assert!(g.composition.entries.is_empty());
    assert_eq!(g.nodes.len(), g.bindings.len());
}

#[test]
fn replacing_web_fetch_makes_it_an_ordinary_command_tool() {
    let f = Fixture::new();
    let before = f.compile();
    assert!(matches!(
        tool(&before, "web_fetch").unwrap().executor,
        Some(ToolExecutor::Builtin { .. })
    ));
    let web_search = tool(&before, "web_search").unwrap();
    assert!(matches!(
        web_search.behavior.handling,
        Handling::ProviderTool { .. }
    ));

    f.project_file("tools/web_fetch.toml", COMMAND_TOOL);
    f.project_file("tools/web_search.toml", COMMAND_TOOL);
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    let t = tool(&g, "web_search").unwrap();
    assert_eq!(
        t.behavior.handling,
        Handling::None,
        "provider handling must vanish"
    );
    assert!(matches!(t.executor, Some(ToolExecutor::Command(_))));
    let t = tool(&g, "web_fetch").unwrap();
    assert!(matches!(t.executor, Some(ToolExecutor::Command(_))));

    let info = serde_json::to_value(info::project(&g, None)).unwrap();
    let row = info["tools"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "web_search")
        .unwrap();
    assert_eq!(row["handling"]["kind"], "none");
    assert_eq!(row["executor"]["kind"], "command");
    assert_eq!(row["source"]["layer"], "project");
    // The framework definition shows only as a composition diagnostic.
    let shadowed: Vec<_> = info["composition"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["slot"] == "tools/web_search")
        .collect();
    assert_eq!(shadowed.len(), 1);
    assert_eq!(shadowed[0]["kind"], "shadowed");
    assert_eq!(shadowed[0]["layer"], "framework");
}

#[test]
fn project_disable_sentinel_removes_shell() {
    let f = Fixture::new();
    let sentinel = f.project_file("tools/shell.toml", "disable = true\n");
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert!(tool(&g, "shell").is_none());
    let kinds: Vec<_> = g
        .composition
        .entries
        .iter()
        .map(|e| match e {
            CompositionEntry::Disabled { source } => ("disabled", source.source_id.clone()),
            CompositionEntry::Shadowed {
                source,
                winner_source_id,
            } => {
                assert_eq!(&source.layer, &Layer::Framework);
                ("shadowed", winner_source_id.clone())
            }
            other => panic!("unexpected entry {other:?}"),
        })
        .collect();
    assert_eq!(kinds.len(), 2);
    assert_eq!(kinds[0].0, "disabled");
    assert_eq!(kinds[1], ("shadowed", kinds[0].1.clone()));
    // Neither the sentinel nor the framework shell has a binding.
    assert!(
        !g.bindings
            .values()
            .any(|b| b.logical_path == "tools/shell.toml")
    );
    let info = info::project(&g, None);
    assert!(!info.tools.entries.iter().any(|t| t.name == "shell"));
    let _ = sentinel;
}

#[test]
fn disable_with_nothing_beneath_fails() {
    let f = Fixture::new();
    let path = f.project_file("tools/shel.toml", "disable = true\n");
    let g = f.compile();
    assert_eq!(codes(&g), ["compile/disable-without-target"]);
    assert_eq!(
        g.diagnostics.as_slice()[0].locator.file.as_deref(),
        Some(path.as_path())
    );
    assert!(g.has_errors());
}

#[test]
fn two_definitions_of_one_tool_in_one_layer_fail() {
    let f = Fixture::new();
    // Two project roots of one repository: the workspace and the git root.
    let sub = f.repo.join("sub");
    f.write(sub.join(".evoflux/tools/deploy.toml"), COMMAND_TOOL);
    f.project_file("tools/deploy.toml", COMMAND_TOOL);
    let mut opts = f.options();
    opts.workspaces = vec![sub];
    let g = compile_standard(&opts).unwrap();
    assert_eq!(codes(&g), ["compile/duplicate-candidate"]);
    assert!(tool(&g, "deploy").is_none());
}

#[test]
fn two_formats_of_one_stem_collide_in_discovery() {
    let f = Fixture::new();
    f.user_file("tools/deploy.toml", COMMAND_TOOL);
    f.user_file(
        "tools/deploy.json",
        r#"{"description": "x", "argv": ["x"], "input_schema": {"type": "object"}}"#,
    );
    let g = f.compile();
    assert_eq!(codes(&g), ["discover/slot-collision"]);
}

#[test]
fn malformed_loser_is_never_read_and_malformed_winner_never_falls_back() {
    let f = Fixture::new();
    f.user_file("tools/deploy.toml", "this is [not toml");
    f.project_file("tools/deploy.toml", COMMAND_TOOL);
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert!(tool(&g, "deploy").is_some());

    let f = Fixture::new();
    f.user_file("tools/deploy.toml", COMMAND_TOOL);
    let bad = f.project_file("tools/deploy.toml", "description = \"x\"\nargv = [\n");
    let g = f.compile();
    assert_eq!(codes(&g), ["compile/syntax-invalid"]);
    assert_eq!(
        g.diagnostics.as_slice()[0].locator.file.as_deref(),
        Some(bad.as_path())
    );
    assert!(
        tool(&g, "deploy").is_none(),
        "an invalid winner must not fall back"
    );
    // The user definition is still recorded as shadowed by the failed winner.
    assert_eq!(g.composition.entries.len(), 1);
}

#[test]
fn losing_framework_modules_are_never_constructed() {
    let f = Fixture::new();
    f.project_file("tools/boom.toml", COMMAND_TOOL);
    let mut registry = BuiltinRegistry::framework();
    registry.modules.push(BuiltinModule {
        logical_path: "tools/boom.toml".into(),
        feature: "test",
        semantic_revision: None,
        construct: |_| panic!("a shadowed framework module was constructed"),
    });
    let roots = evoflux_graph::discover::standard_roots(&f.options());
    let g = compile(&[registry], &roots).unwrap();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert!(matches!(
        tool(&g, "boom").unwrap().executor,
        Some(ToolExecutor::Command(_))
    ));
}

#[test]
fn every_malformed_file_is_reported_together() {
    let f = Fixture::new();
    f.user_file("tools/a.toml", "description = 1\n");
    f.user_file("tools/b.toml", "disable = true\n");
    f.user_file("channels/hooks.toml", "[[route]]\nmethod = \"GET\"\n");
    f.user_file("notes.txt", "hello");
    f.user_file("tools/9lives.toml", COMMAND_TOOL);
    f.project_file("sandbox.toml", "max_timeout_seconds = 0\n");
    let g = f.compile();
    let mut got = codes(&g);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "compile/definition-invalid",
            "compile/definition-invalid",
            "compile/disable-without-target",
            "compile/sandbox-invalid",
            "discover/tool-name-invalid",
            "discover/unsupported-file",
        ]
    );
    let unsupported = g
        .diagnostics
        .iter()
        .find(|d| d.code == "discover/unsupported-file")
        .unwrap();
    assert_eq!(unsupported.severity, evoflux_core::Severity::Warning);
}

#[test]
fn config_composes_first_and_project_wins() {
    let f = Fixture::new();
    f.user_file("config.toml", "[model]\ndefault = \"openai:gpt-4o-mini\"\n");
    f.project_file(
        "config.toml",
        "[model]\ndefault = \"ollama:qwen2.5:7b\"\n[providers.ollama]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:11434/v1\"\n",
    );
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    let Definition::Config(c) = &g.node(&Slot::config()).unwrap().definition else {
        panic!()
    };
    assert_eq!(c.config.model.default.to_string(), "ollama:qwen2.5:7b");
    let layered: Vec<_> = g
        .composition
        .entries
        .iter()
        .filter_map(|e| match e {
            CompositionEntry::Layered { source, .. } if source.slot == "config" => {
                Some(source.layer)
            }
            _ => None,
        })
        .collect();
    assert_eq!(layered, [Layer::Framework, Layer::User]);

    f.project_file("config.toml", "[model]\ndefault = \"nowhere:x\"\n");
    let g = f.compile();
    assert_eq!(codes(&g), ["config/provider-unknown"]);
    assert_eq!(
        g.diagnostics.as_slice()[0].locator.slot,
        Some(evoflux_graph::Slot::config())
    );
}

#[test]
fn connections_come_from_mcp_json_entries() {
    let f = Fixture::new();
    f.user_file(
        "mcp.json",
        r#"{"mcpServers": {"github": {"type": "stdio", "command": "broken command"}, "docs": {"type": "streamable-http", "url": "https://docs.example.com/mcp"}}}"#,
    );
    f.project_file(
        "mcp.json",
        r#"{"mcpServers": {"github": {"type": "stdio", "command": "github-mcp", "args": ["--stdio"]}}}"#,
    );
    let g = f.compile();
    // The user's broken `github` loses to the project's and is never parsed.
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    let info = info::project(&g, None);
    let names: Vec<_> = info
        .connections
        .entries
        .iter()
        .map(|c| (c.name.as_str(), c.transport))
        .collect();
    assert_eq!(names, [("docs", "streamable-http"), ("github", "stdio")]);
    let gh = &info.connections.entries[1].source;
    assert_eq!(gh.layer, Layer::Project);
    assert!(
        matches!(&gh.binding, evoflux_graph::Binding::File { entry: Some(e), .. } if e == "github")
    );

    f.project_file("mcp.json", r#"{"mcpServers": {"Bad_Name": {}}}"#);
    let g = f.compile();
    assert!(codes(&g).contains(&"discover/connection-name-invalid"));
    assert!(
        codes(&g).contains(&"compile/connection-invalid"),
        "the user github now wins: {:?}",
        codes(&g)
    );
}

#[test]
fn channels_plan_routes_with_codes() {
    let f = Fixture::new();
    let route = |m: &str, p: &str| {
        format!(
            "[[route]]\nmethod = \"{m}\"\npath = \"{p}\"\nagent = \"triage\"\nprompt = \"{{{{body}}}}\"\n"
        )
    };
    f.user_file("channels/a.toml", &route("GET", "/hooks/:id"));
    f.user_file("channels/b.toml", &route("GET", "/hooks/:name"));
    f.user_file("channels/c.toml", &route("POST", "/internal/schedules/x"));
    f.user_file(
        "channels/d.toml",
        &format!("{}{}", route("PUT", "/x"), route("PUT", "/x/")),
    );
    f.user_file("channels/e.toml", &route("GET", "/api/health"));
    let g = f.compile();
    let mut got = codes(&g);
    got.sort_unstable();
    assert_eq!(
        got,
        [
            "compile/channel-route-duplicate",
            "compile/channel-route-shadowed",
            "compile/channel-route-shadowed",
            "compile/reserved-route-collision",
        ]
    );
    // The framework api channel (`channels/api`) sorts before `channels/e`.
    let health = g
        .route_plan
        .effective
        .iter()
        .find(|r| r.path == "/api/health")
        .unwrap();
    assert!(health.source_id.as_str().starts_with("evoflux:defaults"));
    assert_eq!(g.route_plan.shadowed.len(), 2);
}

#[test]
fn home_channel_can_be_disabled() {
    let f = Fixture::new();
    f.user_file("channels/home.toml", "disable = true\n");
    let g = f.compile();
    assert!(g.diagnostics.is_empty());
    assert!(!g.route_plan.effective.iter().any(|r| r.path == "/"));
}

#[test]
fn markdown_kinds_are_selected_with_provenance() {
    let f = Fixture::new();
    f.user_file(
        "agents/lead.md",
        "---\nname: lead\nrole: lead\n---\nLead.\n",
    );
    f.project_file(
        "agents/coding/reviewer.md",
        "---\nname: reviewer\n---\nReview.\n",
    );
    f.project_file(
        "skills/review/SKILL.md",
        "---\nname: review\ndescription: Review\n---\nDo it.\n",
    );
    f.project_file("skills/review/scripts/run.sh", "echo hi");
    f.write(
        f.repo.join(".agents/skills/review/SKILL.md"),
        "---\nname: review\ndescription: x\n---\nx\n",
    );
    f.project_file("workers/audit.md", "---\ndisable: true\n---\n");
    let g = f.compile();
    // The project's delegation tool, derived from its agents and workers,
    // is dropped: its `workers/audit` is a sentinel with nothing to disable.
    assert_eq!(
        codes(&g),
        [
            "compile/skill-collision",
            "compile/disable-without-target",
            "compile/derived-dependency-lost"
        ]
    );
    let work = info::project(&g, Some(evoflux_core::AppMode::Work));
    let names: Vec<_> = work
        .agents
        .entries
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["lead"]);
    let coding = info::project(&g, Some(evoflux_core::AppMode::Coding));
    let names: Vec<_> = coding
        .agents
        .entries
        .iter()
        .map(|a| a.name.as_str())
        .collect();
    assert_eq!(names, ["coding/reviewer"]);
    assert!(!work.tools.entries.iter().any(|t| t.name == "code_context"));
    assert!(
        coding
            .tools
            .entries
            .iter()
            .any(|t| t.name == "code_context")
    );
    assert_eq!(work.skills.total, 1);
    let owner = &work.skills.entries[0].source.owner;
    assert!(
        matches!(owner, Owner::Application { root: AppRoot::Project, folder: evoflux_graph::candidate::AppFolder::Evoflux, path } if path.ends_with(".evoflux"))
    );
}

fn reload(g: &CompiledGraph, edit: impl FnOnce(&mut serde_json::Value)) -> Vec<String> {
    let mut v = serde_json::to_value(g).unwrap();
    edit(&mut v);
    let text = serde_json::to_string(&v).unwrap();
    match CompiledGraph::load(&text, &[BuiltinRegistry::framework()]) {
        Ok(_) => Vec::new(),
        Err(e) => e
            .diagnostics()
            .into_iter()
            .map(|d| d.code.into_owned())
            .collect(),
    }
}

#[test]
fn graph_round_trips_and_tampering_is_rejected_at_load() {
    let f = Fixture::new();
    f.project_file("tools/deploy.toml", COMMAND_TOOL);
    f.project_file("tools/shell.toml", "disable = true\n");
    let g = f.compile();
    let json = g.to_json().unwrap();
    let back = CompiledGraph::load(&json, &[BuiltinRegistry::framework()]).unwrap();
    assert_eq!(back, g);

    let dropped = reload(&g, |v| {
        let bindings = v["bindings"].as_object_mut().unwrap();
        let key = bindings
            .keys()
            .find(|k| k.contains("tools/read"))
            .unwrap()
            .clone();
        bindings.remove(&key);
    });
    assert!(
        dropped.contains(&"graph/binding-missing".to_owned()),
        "{dropped:?}"
    );

    let extra = reload(&g, |v| {
        let bindings = v["bindings"].as_object_mut().unwrap();
        let any = bindings.values().next().unwrap().clone();
        bindings.insert("user:user:tools/ghost.toml".into(), any);
    });
    assert!(
        extra.contains(&"graph/binding-unreferenced".to_owned()),
        "{extra:?}"
    );

    let no_owner = reload(&g, |v| {
        let bindings = v["bindings"].as_object_mut().unwrap();
        let first = bindings.values_mut().next().unwrap();
        first.as_object_mut().unwrap().remove("owner");
    });
    assert_eq!(no_owner, ["graph/parse-invalid"]);

    let edited = reload(&g, |v| {
        v["nodes"][0]["slot"]["name"] = serde_json::json!("renamed");
    });
    assert!(
        edited.contains(&"graph/hash-mismatch".to_owned()),
        "{edited:?}"
    );

    let old_revision = reload(&g, |v| {
        for b in v["bindings"].as_object_mut().unwrap().values_mut() {
            if b["binding"]["kind"] == "builtin" {
                b["binding"]["revision"] = serde_json::json!("evoflux@0.0.1:graph-v0");
            }
        }
    });
    assert!(
        old_revision.contains(&"graph/revision-mismatch".to_owned()),
        "{old_revision:?}"
    );

    let loser_bound = reload(&g, |v| {
        let bindings = v["bindings"].as_object_mut().unwrap();
        let any = bindings.values().next().unwrap().clone();
        let disabled = g
            .composition
            .entries
            .iter()
            .find_map(|e| match e {
                CompositionEntry::Disabled { source } => Some(source.source_id.to_string()),
                _ => None,
            })
            .unwrap();
        bindings.insert(disabled, any);
    });
    assert!(
        loser_bound.contains(&"graph/binding-for-loser".to_owned()),
        "{loser_bound:?}"
    );

    let version = reload(&g, |v| v["format_version"] = serde_json::json!(99));
    assert_eq!(version, ["graph/format-unsupported"]);
}

fn tree(base: &Path) -> RootOptions {
    let user = base.join("config");
    let repo = base.join("repo");
    for (dir, rel, text) in [
        (&user, "tools/deploy.toml", COMMAND_TOOL),
        (&repo, ".evoflux/tools/shell.toml", "disable = true\n"),
        (
            &repo,
            ".evoflux/agents/lead.md",
            "---\nname: lead\n---\nhi\n",
        ),
    ] {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    RootOptions {
        admin_dir: None,
        user_config_dir: Some(user),
        home: None,
        trusted: vec![repo.clone()],
        workspaces: vec![repo],
        plugins: Vec::new(),
        foreign_mcp: Vec::new(),
    }
}

#[test]
fn hash_identity_survives_relocation_and_tracks_content() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let ga = compile_standard(&tree(a.path())).unwrap();
    let gb = compile_standard(&tree(b.path())).unwrap();
    assert_ne!(a.path(), b.path());
    assert_eq!(
        ga.hash, gb.hash,
        "relocating identical files must keep the identity"
    );

    std::fs::write(
        b.path().join("config/tools/deploy.toml"),
        COMMAND_TOOL.replace("curl", "wget"),
    )
    .unwrap();
    let edited = compile_standard(&tree_without_rewrite(b.path())).unwrap();
    assert_ne!(
        ga.hash, edited.hash,
        "editing a selected file must change the identity"
    );

    let mut registry = BuiltinRegistry::framework();
    registry.revision.push_str("+next");
    let bumped = compile(
        &[registry],
        &evoflux_graph::discover::standard_roots(&tree_without_rewrite(a.path())),
    )
    .unwrap();
    assert_ne!(
        ga.hash, bumped.hash,
        "a builtin revision bump must change the identity"
    );
}

fn tree_without_rewrite(base: &Path) -> RootOptions {
    RootOptions {
        admin_dir: None,
        user_config_dir: Some(base.join("config")),
        home: None,
        workspaces: vec![base.join("repo")],
        trusted: vec![base.join("repo")],
        plugins: Vec::new(),
        foreign_mcp: Vec::new(),
    }
}

#[test]
fn info_json_matches_the_committed_schema() {
    let schema: serde_json::Value = serde_json::from_str(info::INFO_SCHEMA).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let f = Fixture::new();
    f.project_file("tools/web_fetch.toml", COMMAND_TOOL);
    f.project_file("tools/shell.toml", "disable = true\n");
    f.user_file(
        "mcp.json",
        r#"{"mcpServers": {"docs": {"type": "sse", "url": "https://docs.example.com/sse"}}}"#,
    );
    f.user_file(
        "channels/hooks.toml",
        "cors = true\n[[route]]\nmethod = \"POST\"\npath = \"/hooks/:id\"\nagent = \"a\"\nprompt = \"p\"\n",
    );
    f.user_file("agents/lead.md", "---\nname: lead\n---\n");
    f.user_file("extra.txt", "");
    let g = f.compile();
    for mode in [
        None,
        Some(evoflux_core::AppMode::Work),
        Some(evoflux_core::AppMode::Coding),
    ] {
        let v = serde_json::to_value(info::project(&g, mode)).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&v)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{errors:#?}");
        assert_eq!(info::check_invariants(&v), Vec::<String>::new());
        assert_eq!(v["routes"]["preflights"].as_array().unwrap().len(), 1);
    }
    // The schema rejects what the invariants forbid structurally.
    let mut bad = serde_json::to_value(info::project(&g, None)).unwrap();
    bad["tools"]["entries"][0]["executor"] = serde_json::json!({"kind": "magic"});
    assert!(!validator.is_valid(&bad));
    let mut dup = serde_json::to_value(info::project(&g, None)).unwrap();
    let first = dup["tools"]["entries"][0].clone();
    dup["tools"]["entries"].as_array_mut().unwrap().push(first);
    assert!(!info::check_invariants(&dup).is_empty());
}

#[test]
fn skill_roots_follow_the_bundle_layout() {
    let f = Fixture::new();
    let skill = "---\nname: x\ndescription: d\n---\nbody\n";
    // A legacy nested bundle, a resource folder that must not be searched,
    // and a hidden folder.
    f.write(
        f.repo.join(".agents/skills/qdrant/qdrant-search/SKILL.md"),
        skill,
    );
    f.write(f.repo.join(".agents/skills/review/SKILL.md"), skill);
    f.write(
        f.repo
            .join(".agents/skills/review/references/example/SKILL.md"),
        skill,
    );
    f.write(f.repo.join(".agents/skills/.hidden/SKILL.md"), skill);
    let g = f.compile();
    let skills: Vec<String> = g
        .nodes
        .iter()
        .filter(|n| n.slot.kind == evoflux_graph::SlotKind::Skill)
        .map(|n| n.slot.to_string())
        .collect();
    assert_eq!(skills, ["skills/qdrant/qdrant-search", "skills/review"]);
    assert_eq!(codes(&g), ["skill/nested-legacy-skill"]);
    // The nested slot survives serialization and validation.
    CompiledGraph::load(&g.to_json().unwrap(), &[BuiltinRegistry::framework()]).unwrap();
}

#[test]
fn a_skill_disable_sentinel_removes_the_slot() {
    let f = Fixture::new();
    f.user_file(
        "skills/notes/SKILL.md",
        "---\nname: notes\ndescription: d\n---\nbody\n",
    );
    f.project_file("skills/notes/SKILL.md", "---\ndisable: true\n---\n");
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert!(!g.nodes.iter().any(|n| n.slot.to_string() == "skills/notes"));
    assert!(matches!(
        g.composition.entries[0],
        CompositionEntry::Disabled { .. }
    ));
    // A skill that merely mentions `disable` in a description is not one.
    f.project_file(
        "skills/notes/SKILL.md",
        "---\nname: notes\ndescription: how to disable alerts\n---\nbody\n",
    );
    assert!(
        f.compile()
            .nodes
            .iter()
            .any(|n| n.slot.to_string() == "skills/notes")
    );
}

// Team members and workers as graph nodes, and the delegation tool derived
// from them (issue #53).

const WRITER: &str = "---\nname: writer\ndescription: Writes.\n---\nWrite.\n";
const AUDIT: &str = "---\nid: audit\ndescription: Audits.\n---\nAudit.\n";

/// A user with the member `writer` and a repository with the Coding member
/// `reviewer` and the worker `audit`, under `base`.
fn team_tree(base: &Path) -> RootOptions {
    for (rel, text) in [
        ("config/agents/writer.md", WRITER),
        (
            "repo/.evoflux/agents/coding/reviewer.md",
            "---\nname: reviewer\n---\nReview.\n",
        ),
        ("repo/.evoflux/workers/audit.md", AUDIT),
    ] {
        let p = base.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    std::fs::create_dir_all(base.join("repo/.git")).unwrap();
    tree_without_rewrite(base)
}

fn bound_file(g: &CompiledGraph, slot: &str) -> PathBuf {
    let node = g.node(&slot.parse().unwrap()).unwrap();
    match &g.binding(&node.source_id).unwrap().binding {
        evoflux_graph::Binding::File { path, .. } => path.clone(),
        other => panic!("{slot} is not bound to a file: {other:?}"),
    }
}

#[test]
fn members_and_workers_keep_their_identity_when_relocated_and_change_it_when_edited() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let ga = compile_standard(&team_tree(a.path())).unwrap();
    let gb = compile_standard(&team_tree(b.path())).unwrap();
    assert!(
        ga.diagnostics.is_empty(),
        "{}",
        ga.diagnostics.render_human()
    );
    // Every member and worker is a node bound to its own file.
    assert!(bound_file(&ga, "agents/writer").starts_with(a.path()));
    assert!(bound_file(&ga, "agents/coding/reviewer").starts_with(a.path()));
    assert!(bound_file(&ga, "workers/audit").starts_with(a.path()));
    assert_eq!(
        ga.hash, gb.hash,
        "the same team in another place of the same layers keeps the identity"
    );

    let member = b.path().join("config/agents/writer.md");
    std::fs::write(&member, WRITER.replace("Write.", "Write well.")).unwrap();
    let edited_member = compile_standard(&tree_without_rewrite(b.path())).unwrap();
    assert_ne!(ga.hash, edited_member.hash, "editing a member changes it");

    std::fs::write(&member, WRITER).unwrap();
    assert_eq!(
        compile_standard(&tree_without_rewrite(b.path()))
            .unwrap()
            .hash,
        ga.hash,
        "restoring the member restores it"
    );
    std::fs::write(
        b.path().join("repo/.evoflux/workers/audit.md"),
        AUDIT.replace("Audits.", "Audits twice."),
    )
    .unwrap();
    let edited_worker = compile_standard(&tree_without_rewrite(b.path())).unwrap();
    assert_ne!(ga.hash, edited_worker.hash, "editing a worker changes it");
    assert_ne!(edited_member.hash, edited_worker.hash);
}

#[test]
fn a_members_winner_and_what_it_shadows_are_in_the_composition_report() {
    let f = Fixture::new();
    f.user_file("agents/writer.md", WRITER);
    let project = f.project_file(
        "agents/writer.md",
        &WRITER.replace("Writes.", "Writes here."),
    );
    let g = f.compile();
    assert_eq!(bound_file(&g, "agents/writer"), project);
    let winner = &g.node(&"agents/writer".parse().unwrap()).unwrap().source_id;
    let shadowed: Vec<_> = g
        .composition
        .entries
        .iter()
        .filter_map(|e| match e {
            CompositionEntry::Shadowed {
                source,
                winner_source_id,
            } if source.slot == "agents/writer" => Some((source.layer, winner_source_id)),
            _ => None,
        })
        .collect();
    assert_eq!(shadowed, [(Layer::User, winner)]);
    let shown = info::project(&g, None);
    assert!(shown.composition.iter().any(|e| e.slot == "agents/writer"
        && e.layer == Layer::User
        && e.winner_source_id.as_ref() == Some(winner)));
}

/// The derivation `tools/agent` is bound to, if it is derived.
fn delegation(g: &CompiledGraph) -> Option<&evoflux_graph::derive::Derivation> {
    let node = g.node(&Slot::tool("agent"))?;
    match &g.binding(&node.source_id)?.binding {
        evoflux_graph::Binding::Builtin { derivation, .. } => derivation.as_ref(),
        evoflux_graph::Binding::File { .. } => None,
    }
}

/// The composition entries of `tools/agent`: kind, layer, whether the
/// candidate was derived, and the winner.
fn agent_entries(g: &CompiledGraph) -> Vec<(&'static str, Layer, bool, Option<String>)> {
    g.composition
        .entries
        .iter()
        .map(|e| e.parts())
        .filter(|(_, s, _)| s.slot == "tools/agent")
        .map(|(kind, s, winner)| {
            (
                kind.as_str(),
                s.layer,
                matches!(s.backing, evoflux_graph::candidate::Backing::Derived { .. }),
                winner.map(ToString::to_string),
            )
        })
        .collect()
}

#[test]
fn the_delegation_tool_is_derived_from_a_layers_team_with_its_provenance() {
    let f = Fixture::new();
    f.user_file("agents/writer.md", WRITER);
    f.user_file("workers/audit.md", AUDIT);
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    let d = delegation(&g).expect("tools/agent is derived");
    assert_eq!(d.template, evoflux_graph::derive::Template::TeamDelegation);
    let writer = &g.node(&"agents/writer".parse().unwrap()).unwrap().source_id;
    let audit = &g.node(&"workers/audit".parse().unwrap()).unwrap().source_id;
    assert_eq!(&d.anchor, writer);
    assert_eq!(
        d.dependencies.iter().collect::<Vec<_>>(),
        [
            (&"agents/writer".to_owned(), writer),
            (&"workers/audit".to_owned(), audit)
        ]
    );
    let node = g.node(&Slot::tool("agent")).unwrap();
    let bound = g.binding(&node.source_id).unwrap();
    assert_eq!(bound.layer, Layer::User);
    assert!(matches!(
        &bound.binding,
        evoflux_graph::Binding::Builtin { module, .. } if module == "templates/team-delegation"
    ));
    // The same tool the framework defines, so the harness dispatches it by
    // its handling as before.
    assert_eq!(
        tool(&g, "agent").unwrap().behavior.handling,
        Handling::Dispatch {
            action: evoflux_graph::tool::DispatchAction::SelfAgent
        }
    );
    // The framework's own `agent` lost to it.
    assert_eq!(
        agent_entries(&g),
        [(
            "shadowed",
            Layer::Framework,
            false,
            Some(node.source_id.to_string())
        )]
    );
    // Its provenance survives a round trip, and a derivation naming a
    // source that is not selected is rejected at load.
    CompiledGraph::load(&g.to_json().unwrap(), &[BuiltinRegistry::framework()]).unwrap();
    let id = node.source_id.to_string();
    let rejected = reload(&g, |v| {
        v["bindings"][&id]["binding"]["derivation"]["dependencies"]["workers/audit"] =
            serde_json::json!("user:gone");
    });
    assert!(
        rejected.contains(&"graph/derivation-dependency-unbound".to_owned()),
        "{rejected:?}"
    );
    // Without a team there is nothing to derive.
    let bare = Fixture::new().compile();
    assert_eq!(delegation(&bare), None);
    assert!(tool(&bare, "agent").is_some());
}

#[test]
fn a_direct_candidate_beats_a_derived_one_in_its_layer() {
    let f = Fixture::new();
    f.user_file("agents/writer.md", WRITER);
    f.user_file("tools/agent.toml", "disable = true\n");
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert!(tool(&g, "agent").is_none());
    let entries = agent_entries(&g);
    let sentinel = entries
        .iter()
        .find(|e| e.0 == "disabled")
        .expect("the sentinel disabled the slot");
    assert_eq!((sentinel.1, sentinel.2), (Layer::User, false));
    let derived = entries.iter().find(|e| e.2).expect("the derived candidate");
    assert_eq!(derived.0, "shadowed");
    assert_eq!(derived.1, Layer::User);
}

#[test]
fn a_higher_layers_direct_candidate_beats_a_lower_layers_derived_one() {
    let f = Fixture::new();
    f.user_file("agents/writer.md", WRITER);
    let file = f.project_file("tools/agent.toml", COMMAND_TOOL);
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert_eq!(bound_file(&g, "tools/agent"), file);
    assert!(matches!(
        tool(&g, "agent").unwrap().executor,
        Some(ToolExecutor::Command(_))
    ));
    let winner = g.node(&Slot::tool("agent")).unwrap().source_id.to_string();
    assert_eq!(
        agent_entries(&g),
        [
            ("shadowed", Layer::User, true, Some(winner.clone())),
            ("shadowed", Layer::Framework, false, Some(winner))
        ]
    );
    // And the other way round: a higher layer's team derives over a lower
    // layer's direct tool.
    let f = Fixture::new();
    f.user_file("tools/agent.toml", COMMAND_TOOL);
    f.project_file("agents/writer.md", WRITER);
    let g = f.compile();
    assert_eq!(delegation(&g).unwrap().dependencies.len(), 1);
    assert_eq!(
        g.binding(&g.node(&Slot::tool("agent")).unwrap().source_id)
            .unwrap()
            .layer,
        Layer::Project
    );
}

#[test]
fn a_derived_slot_whose_dependency_loses_or_disappears_is_removed_with_its_code() {
    let f = Fixture::new();
    f.user_file("agents/writer.md", WRITER);
    f.user_file("agents/editor.md", "---\nname: editor\n---\nEdit.\n");
    // The repository replaces the user's writer: the user layer's
    // delegation tool depended on it.
    f.project_file("agents/writer.md", WRITER);
    let g = f.compile();
    assert_eq!(codes(&g), ["compile/derived-dependency-lost"]);
    let lost = &g.diagnostics.as_slice()[0];
    assert_eq!(lost.locator.slot, Some(Slot::tool("agent")));
    let d = delegation(&g).expect("the repository's team derives the tool");
    let project_writer = &g.node(&"agents/writer".parse().unwrap()).unwrap().source_id;
    assert_eq!(&d.anchor, project_writer);
    // The removed candidate is not a composition entry: it never competed.
    assert!(!agent_entries(&g).iter().any(|e| e.1 == Layer::User));

    // A dependency that disappears (its slot disabled) removes it too, and
    // the framework's tool serves.
    let f = Fixture::new();
    f.user_file("agents/writer.md", WRITER);
    f.project_file("agents/writer.md", "---\ndisable: true\n---\n");
    let g = f.compile();
    assert!(
        codes(&g)
            .iter()
            .all(|c| *c == "compile/derived-dependency-lost"),
        "{:?}",
        codes(&g)
    );
    assert!(!codes(&g).is_empty());
    assert_eq!(delegation(&g), None);
    assert!(tool(&g, "agent").is_some());
    assert!(!g.has_errors());
}

#[test]
fn an_untrusted_repositorys_team_derives_nothing_until_it_is_trusted() {
    let f = Fixture::new();
    f.user_file("tools/agent.toml", "disable = true\n");
    f.project_file("agents/writer.md", WRITER);
    let mut options = f.options();
    options.trusted.clear();
    let g = compile_standard(&options).unwrap();
    // The user's sentinel still disables the tool; the repository's
    // derived candidate waits for trust.
    assert!(tool(&g, "agent").is_none());
    let entries = agent_entries(&g);
    assert!(
        entries.contains(&("awaiting-trust", Layer::Project, true, None)),
        "{entries:?}"
    );
    // Trusted, its team's tool wins over the user's sentinel.
    let g = f.compile();
    assert_eq!(delegation(&g).unwrap().dependencies.len(), 1);
}

/// A `config.toml` declaring the remote agent `helper` started by `command`.
fn helper_config(command: &str) -> String {
    format!(
        "[limits]\nmax_cost_usd = 5.0\n\n[agents.external.helper]\ncommand = [\"{command}\", \"acp\"]\nenv = [\"HELPER_MODE\"]\n"
    )
}

/// The `remote-agents/helper` node's binding: its file and the entry's
/// content hash.
fn helper_binding(g: &CompiledGraph) -> (PathBuf, String, Option<String>) {
    let node = g.node(&"remote-agents/helper".parse().unwrap()).unwrap();
    assert!(
        matches!(&node.definition, Definition::RemoteAgent(a) if a.command[1] == "acp"),
        "{:?}",
        node.definition
    );
    match &g.binding(&node.source_id).unwrap().binding {
        evoflux_graph::Binding::File {
            path,
            sha256,
            entry,
        } => (path.clone(), sha256.clone(), entry.clone()),
        other => panic!("not bound to a file: {other:?}"),
    }
}

#[test]
fn a_remote_agent_keeps_its_identity_when_relocated_and_changes_it_when_its_table_is_edited() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    for base in [a.path(), b.path()] {
        let config = base.join("config");
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("config.toml"), helper_config("helper-acp")).unwrap();
        std::fs::create_dir_all(base.join("repo/.git")).unwrap();
    }
    let ga = compile_standard(&tree_without_rewrite(a.path())).unwrap();
    let gb = compile_standard(&tree_without_rewrite(b.path())).unwrap();
    assert!(
        ga.diagnostics.is_empty(),
        "{}",
        ga.diagnostics.render_human()
    );
    // A node of its own, bound to the entry of the file that declares it.
    let (file, sha, entry) = helper_binding(&ga);
    assert_eq!(file, a.path().join("config/config.toml"));
    assert_eq!(entry.as_deref(), Some("helper"));
    assert_eq!(
        ga.hash, gb.hash,
        "the same declaration in another place of the same layer keeps the identity"
    );

    // Another table of the same file is not the agent's identity...
    let user_config = b.path().join("config/config.toml");
    std::fs::write(
        &user_config,
        helper_config("helper-acp").replace("5.0", "7.0"),
    )
    .unwrap();
    let other_table = compile_standard(&tree_without_rewrite(b.path())).unwrap();
    assert_eq!(helper_binding(&other_table).1, sha);
    // ...its own table is.
    std::fs::write(&user_config, helper_config("other-acp")).unwrap();
    let edited = compile_standard(&tree_without_rewrite(b.path())).unwrap();
    assert_ne!(helper_binding(&edited).1, sha);
    assert_ne!(ga.hash, edited.hash, "editing the agent's table changes it");

    std::fs::write(&user_config, helper_config("helper-acp")).unwrap();
    assert_eq!(
        compile_standard(&tree_without_rewrite(b.path()))
            .unwrap()
            .hash,
        ga.hash,
        "restoring the table restores it"
    );
}

#[test]
fn a_repositorys_remote_agent_shadows_the_users_and_the_report_names_its_winner() {
    let f = Fixture::new();
    f.user_file("config.toml", &helper_config("user-acp"));
    let project = f.project_file(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"repo-acp\", \"acp\"]\ncwd = \"scratch\"\n",
    );
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert_eq!(helper_binding(&g).0, project);
    let slot: Slot = "remote-agents/helper".parse().unwrap();
    let winner = &g.node(&slot).unwrap().source_id;
    let shadowed: Vec<_> = g
        .composition
        .entries
        .iter()
        .filter_map(|e| match e {
            CompositionEntry::Shadowed {
                source,
                winner_source_id,
            } if source.slot == "remote-agents/helper" => {
                Some((source.layer, source.file(), winner_source_id))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        shadowed,
        [(
            Layer::User,
            Some(f.user.join("config.toml").as_path()),
            winner
        )]
    );
    let shown = info::project(&g, None);
    assert!(
        shown
            .composition
            .iter()
            .any(|e| e.slot == "remote-agents/helper"
                && e.layer == Layer::User
                && e.winner_source_id.as_ref() == Some(winner))
    );

    // A declaration that is `disable = true` alone removes the user's.
    f.project_file("config.toml", "[agents.external.helper]\ndisable = true\n");
    let g = f.compile();
    assert!(g.diagnostics.is_empty(), "{}", g.diagnostics.render_human());
    assert!(g.node(&slot).is_none());
    assert!(g.composition.entries.iter().any(|e| matches!(
        e,
        CompositionEntry::Disabled { source }
            if source.slot == "remote-agents/helper" && source.layer == Layer::Project
    )));

    // A repository's agent is never given a variable that holds a key.
    f.project_file(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"repo-acp\"]\nenv = [\"OPENAI_API_KEY\"]\n",
    );
    let g = f.compile();
    assert_eq!(codes(&g), ["config/project-external-agent-key"]);
    assert!(g.node(&slot).is_none());
}

#[test]
fn an_untrusted_repositorys_remote_agent_awaits_trust_and_the_users_serves() {
    let f = Fixture::new();
    f.user_file("config.toml", &helper_config("user-acp"));
    let project = f.project_file(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"repo-acp\", \"acp\"]\n\
         [agents.external.extra]\ncommand = [\"extra-acp\"]\n",
    );
    let g = compile_standard(&RootOptions {
        trusted: Vec::new(),
        ..f.options()
    })
    .unwrap();
    assert_eq!(codes(&g), ["trust/withheld"]);
    assert_eq!(helper_binding(&g).0, f.user.join("config.toml"));
    assert!(g.node(&"remote-agents/extra".parse().unwrap()).is_none());
    let mut waiting: Vec<_> = info::project(&g, None)
        .awaiting_trust
        .into_iter()
        .map(|w| (w.slot, w.file))
        .collect();
    waiting.sort();
    assert_eq!(
        waiting,
        [
            ("remote-agents/extra".to_owned(), Some(project.clone())),
            ("remote-agents/helper".to_owned(), Some(project)),
        ]
    );
}

#[test]
fn a_remote_agents_table_is_checked_when_it_wins_and_named_when_it_cannot_be_a_slot() {
    let f = Fixture::new();
    f.user_file(
        "config.toml",
        "[agents.external.helper]\ncommand = [\"x\"]\ncomand = [\"y\"]\n\
         [agents.external.Bad]\ncommand = [\"x\"]\n",
    );
    let g = f.compile();
    let mut found: Vec<(&str, Option<&str>)> = g
        .diagnostics
        .iter()
        .map(|d| (d.code.as_ref(), d.locator.field.as_deref()))
        .collect();
    found.sort();
    assert_eq!(
        found,
        [
            ("config/external-agent-name", Some("agents.external.Bad")),
            ("config/unknown-key", Some("agents.external.helper.comand")),
        ]
    );
    assert!(g.node(&"remote-agents/helper".parse().unwrap()).is_none());
}
