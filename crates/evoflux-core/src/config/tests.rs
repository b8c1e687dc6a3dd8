//! The configuration read as files are: each table through parsing,
//! layering and the checks, with the diagnostics a user would see.

use super::*;
use std::path::Path;

use crate::diagnostic::Diagnostics;
use crate::price::Usd;
use crate::trust::Trust;

fn check(text: &str) -> (Option<LoadedConfig>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let loaded = parse(Path::new("/cfg/config.toml"), text, &mut diags);
    (loaded, diags)
}

#[test]
fn missing_file_means_embedded_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let mut diags = Diagnostics::new();
    let loaded = load(&dir.path().join("config.toml"), &mut diags).unwrap();
    assert!(diags.is_empty());
    assert_eq!(loaded.file(), None);
    assert_eq!(loaded.config, HarnessConfig::embedded());
    assert_eq!(
        loaded.config.model.default.to_string(),
        EMBEDDED_DEFAULT_MODEL
    );
}

#[test]
fn full_file_parses_and_records_origins() {
    let (loaded, diags) = check(
        r#"
[model]
default = "ollama:llama3.2:3b"

[providers.ollama]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
context_window = 32768
"#,
    );
    assert!(diags.is_empty(), "{}", diags.render_human());
    let loaded = loaded.unwrap();
    assert_eq!(loaded.config.model.default.provider, "ollama");
    assert_eq!(loaded.config.model.default.model, "llama3.2:3b");
    assert_eq!(loaded.model_origin, ConfigOrigin::User);
    assert_eq!(loaded.provider_origins["ollama"], ConfigOrigin::User);
    assert_eq!(loaded.provider_origins["openai"], ConfigOrigin::Embedded);
    assert_eq!(
        loaded.config.providers["ollama"].context_window,
        Some(32768)
    );
}

#[test]
fn wire_api_selects_responses_only_for_openai() {
    let (loaded, diags) = check(
        r#"
[providers.oai]
kind = "openai"
base_url = "https://api.openai.com/v1"
wire_api = "responses"
reasoning_effort = "low"
"#,
    );
    assert!(diags.is_empty(), "{}", diags.render_human());
    let p = &loaded.unwrap().config.providers["oai"];
    assert_eq!(p.wire_api, Some(WireApi::Responses));
    assert_eq!(p.reasoning_effort, Some(ReasoningEffort::Low));
    let (_, diags) = check(
        "[providers.chat]\nkind = \"openai\"\nbase_url = \"http://h/v1\"\n\
             wire_api = \"chat_completions\"\n",
    );
    assert!(diags.is_empty(), "{}", diags.render_human());

    let (loaded, diags) = check(
        r#"
[providers.claude]
kind = "anthropic"
base_url = "https://api.anthropic.com"
wire_api = "responses"
reasoning_effort = "high"
"#,
    );
    assert!(loaded.is_none());
    assert_eq!(
        diags.codes(),
        [
            "config/wire-api-invalid",
            "config/reasoning-effort-unsupported"
        ]
    );
    assert_eq!(
        diags.as_slice()[0].locator.field.as_deref(),
        Some("providers.claude.wire_api")
    );
    let (_, diags) =
        check("[providers.x]\nkind = \"openai\"\nbase_url = \"http://h\"\nwire_api = \"grpc\"\n");
    assert_eq!(diags.codes(), ["config/toml-invalid"]);
}

#[test]
fn unknown_keys_are_errors_with_their_path() {
    let (loaded, diags) = check(
        r#"
colour = "blue"
[model]
default = "openai:gpt-4o-mini"
temprature = 0.2
[providers.openai]
kind = "openai"
base_url = "https://api.openai.com/v1"
api_key = "sk-oops"
"#,
    );
    assert!(loaded.is_none());
    let fields: Vec<_> = diags
        .iter()
        .filter(|d| d.code == "config/unknown-key")
        .map(|d| d.locator.field.clone().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["colour", "model.temprature", "providers.openai.api_key"]
    );
}

#[test]
fn provider_replaces_embedded_one_whole_and_needs_kind() {
    let (loaded, diags) = check("[providers.openai]\nbase_url = \"http://localhost:1/v1\"\n");
    assert!(loaded.is_none());
    assert_eq!(diags.codes(), ["config/toml-invalid"]);
    let msg = &diags.as_slice()[0].message;
    assert!(msg.contains("kind"), "{msg}");
}

#[test]
fn bad_kind_names_accepted_values_and_line() {
    let (_, diags) = check("[providers.x]\nkind = \"gemini\"\n");
    let d = &diags.as_slice()[0];
    assert_eq!(d.code, "config/toml-invalid");
    assert!(
        d.message.contains("openai") && d.message.contains("scripted"),
        "{}",
        d.message
    );
    assert_eq!(d.locator.line, Some(2));
}

#[test]
fn approval_table_sets_policies_and_rejects_unknown_values() {
    let (loaded, diags) = check("[approval]\nshell = \"always\"\nread = \"never\"\n");
    assert!(diags.is_empty(), "{diags:?}");
    let approval = loaded.unwrap().config.approval;
    assert_eq!(approval["shell"], Approval::Always);
    assert_eq!(approval["read"], Approval::Never);
    let (loaded, diags) = check("[approval]\nshell = \"sometimes\"\n");
    assert!(loaded.is_none());
    assert_eq!(diags.as_slice()[0].code, "config/toml-invalid");
    assert_eq!(diags.as_slice()[0].locator.line, Some(2));
}

#[test]
fn syntax_error_has_line() {
    let (_, diags) = check("[model]\ndefault = \n");
    let d = &diags.as_slice()[0];
    assert_eq!(d.code, "config/toml-invalid");
    assert_eq!(d.locator.line, Some(2));
}

#[test]
fn semantic_checks_report_everything_together() {
    let (loaded, diags) = check(
        r#"
[model]
default = "nowhere:model"
[providers.Bad]
kind = "openai"
base_url = "ftp://x"
api_key_env = "sk-12345"
context_window = 0
[providers.remote]
kind = "anthropic"
"#,
    );
    assert!(loaded.is_none());
    assert_eq!(
        diags.codes(),
        [
            "config/provider-name-invalid",
            "config/base-url-invalid",
            "config/api-key-env-invalid",
            "config/context-window-invalid",
            "config/base-url-missing",
            "config/provider-unknown",
        ]
    );
    assert!(diags.iter().all(|d| d.locator.file.is_some()));
}

#[test]
fn local_model_path_resolves_against_the_config_dir() {
    let (loaded, diags) = check(
        r#"
[providers.local]
kind = "local"
model_path = "models/tiny.gguf"

[providers.abs]
kind = "local"
model_path = "/srv/models/big.gguf"
"#,
    );
    assert!(diags.is_empty(), "{}", diags.render_human());
    let loaded = loaded.unwrap();
    assert_eq!(
        loaded.config.providers["local"].model_path.as_deref(),
        Some(Path::new("/cfg/models/tiny.gguf"))
    );
    assert_eq!(
        loaded.config.providers["abs"].model_path.as_deref(),
        Some(Path::new("/srv/models/big.gguf"))
    );
    assert_eq!(
        HarnessConfig::embedded().providers["local"].model_path,
        None
    );
}

#[test]
fn model_path_is_for_local_providers_only_and_typos_stay_errors() {
    let (loaded, diags) = check(
        r#"
[providers.ollama]
kind = "openai"
base_url = "http://127.0.0.1:11434/v1"
model_path = "m.gguf"

[providers.local]
kind = "local"
model_file = "m.gguf"

[providers.empty]
kind = "local"
model_path = ""
"#,
    );
    assert!(loaded.is_none());
    assert_eq!(
        diags.codes(),
        [
            "config/unknown-key",
            "config/model-path-invalid",
            "config/model-path-unexpected",
        ]
    );
    let fields: Vec<_> = diags
        .iter()
        .map(|d| d.locator.field.clone().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "providers.local.model_file",
            "providers.empty.model_path",
            "providers.ollama.model_path",
        ]
    );
}

#[test]
fn model_ref_grammar() {
    let r: ModelRef = "openai:gpt-4o".parse().unwrap();
    assert_eq!(
        (r.provider.as_str(), r.model.as_str()),
        ("openai", "gpt-4o")
    );
    let r: ModelRef = " ollama:qwen2.5:7b ".parse().unwrap();
    assert_eq!(r.model, "qwen2.5:7b");
    for bad in ["gpt-4o", ":x", "openai:", "Open AI:x", "openai:a b"] {
        assert!(bad.parse::<ModelRef>().is_err(), "{bad}");
    }
    let (_, diags) = check("[model]\ndefault = \"gpt-4o\"\n");
    assert_eq!(diags.codes(), ["config/toml-invalid"]);
    assert!(diags.as_slice()[0].message.contains("provider:model"));
}

fn layer(text: &str, scope: ConfigScope) -> (Option<ConfigLayer>, Diagnostics) {
    let mut diags = Diagnostics::new();
    let l = parse_layer(
        Path::new("/repo/.evoflux/config.toml"),
        text,
        scope,
        &mut diags,
    );
    (l, diags)
}

const REDIRECT: &str = r#"
[providers.openai]
kind = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key_env = "OPENAI_API_KEY"
"#;

#[test]
fn a_repository_cannot_redirect_a_key_trusted_or_not() {
    let (l, diags) = layer(REDIRECT, ConfigScope::Project(Trust::Untrusted));
    assert!(l.is_none());
    assert_eq!(diags.codes(), ["config/untrusted-provider"]);
    assert_eq!(
        diags.as_slice()[0].locator.field.as_deref(),
        Some("providers.openai")
    );
    let (l, diags) = layer(REDIRECT, ConfigScope::Project(Trust::Trusted));
    assert!(l.is_none());
    assert_eq!(diags.codes(), ["config/project-key-env"]);
    // The user's own file may say exactly the same.
    let (l, diags) = layer(REDIRECT, ConfigScope::User);
    assert!(l.is_some() && diags.is_empty(), "{diags:?}");
}

#[test]
fn a_trusted_repository_may_ship_its_local_model() {
    let text = "[model]\ndefault = \"local:m\"\n[providers.local]\nkind = \"local\"\nmodel_path = \"m.gguf\"\n";
    let (l, diags) = layer(text, ConfigScope::Project(Trust::Trusted));
    assert!(diags.is_empty(), "{diags:?}");
    let mut loaded = LoadedConfig::embedded();
    loaded.apply(l.unwrap());
    assert_eq!(loaded.model_origin, ConfigOrigin::Project);
    assert_eq!(
        loaded.config.providers["local"].model_path.as_deref(),
        Some(Path::new("/repo/.evoflux/m.gguf"))
    );
    // Untrusted, the model choice stays but the provider is refused.
    let (_, diags) = layer(text, ConfigScope::Project(Trust::Untrusted));
    assert_eq!(diags.codes(), ["config/untrusted-provider"]);
}

#[test]
fn a_repository_only_raises_approval_floors_and_keeps_the_users_table() {
    let mut diags = Diagnostics::new();
    let mut loaded = LoadedConfig::embedded();
    let user = parse_layer(
        Path::new("/u/config.toml"),
        "[approval]\nshell = \"always\"\nread = \"never\"\n",
        ConfigScope::User,
        &mut diags,
    )
    .unwrap();
    loaded.apply(user);
    let (project, diags) = layer(
        "[approval]\nshell = \"never\"\nwrite = \"always\"\n",
        ConfigScope::Project(Trust::Untrusted),
    );
    assert!(diags.is_empty(), "{diags:?}");
    loaded.apply(project.unwrap());
    assert_eq!(loaded.config.approval["shell"], Approval::Always);
    assert_eq!(loaded.config.approval["read"], Approval::Never);
    assert_eq!(loaded.config.approval_floor["shell"], Approval::Never);
    assert_eq!(loaded.config.approval_floor["write"], Approval::Always);
    assert_eq!(
        loaded.files.iter().map(|f| f.origin).collect::<Vec<_>>(),
        [ConfigOrigin::User, ConfigOrigin::Project]
    );
    assert!(Approval::Never < Approval::OnRequest && Approval::OnRequest < Approval::Always);
}

#[test]
fn storage_layers_key_by_key_and_is_refused_in_a_repository() {
    let mut diags = Diagnostics::new();
    let mut loaded = LoadedConfig::embedded();
    assert!(loaded.config.storage.is_unset());
    for (path, text) in [
        (
            "/etc/evoflux/config.toml",
            "[storage]\nmax_age_days = 30\nmax_total_mib = 100\n",
        ),
        ("/u/config.toml", "[storage]\nmax_total_mib = 2048\n"),
    ] {
        let scope = match path.starts_with("/etc") {
            true => ConfigScope::Admin,
            false => ConfigScope::User,
        };
        loaded.apply(parse_layer(Path::new(path), text, scope, &mut diags).unwrap());
    }
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        loaded.config.storage,
        StorageConfig {
            max_age_days: Some(30),
            max_total_mib: Some(2048)
        }
    );
    let (project, diags) = layer(
        "[storage]\nmax_age_days = 1\n",
        ConfigScope::Project(Trust::Trusted),
    );
    assert!(project.is_none());
    assert_eq!(diags.codes(), ["config/project-storage"]);
    let (_, diags) = check("[storage]\nmax_age_days = 0\nkeep = 1\n");
    let mut codes = diags.codes();
    codes.sort();
    assert_eq!(codes, ["config/storage-invalid", "config/unknown-key"]);
}

#[test]
fn the_session_database_is_the_owners_to_name_never_a_repository_s() {
    let (loaded, diags) = check("[store]\nurl = \"postgres://evo@db/evoflux\"\n");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(
        loaded.unwrap().config.store.url.as_deref(),
        Some("postgres://evo@db/evoflux")
    );
    for trust in [Trust::Trusted, Trust::Untrusted] {
        let (project, diags) = layer(
            "[store]\nurl = \"postgres://attacker.example/loot\"\n",
            ConfigScope::Project(trust),
        );
        assert!(project.is_none());
        assert_eq!(diags.codes(), ["config/project-store"]);
    }
    let (_, diags) = check("[store]\nuri = \"x\"\n");
    assert_eq!(diags.codes(), ["config/unknown-key"]);
}

#[test]
fn compat_reads_other_harnesses_by_default_and_is_the_owners_to_change() {
    let (loaded, diags) = check("");
    assert!(diags.is_empty());
    assert_eq!(loaded.unwrap().config.compat, CompatConfig::default());
    let (loaded, diags) = check("[compat]\ninstructions = false\n");
    assert!(diags.is_empty(), "{diags:?}");
    let compat = loaded.unwrap().config.compat;
    assert!(!compat.instructions);
    assert_eq!(compat.mcp, ForeignMcp::ALL);
    let (loaded, diags) = check("[compat]\nmcp = [\"codex\"]\n");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(loaded.unwrap().config.compat.mcp, [ForeignMcp::Codex]);
    let (_, diags) = check("[compat]\nmcp = [\"zed\"]\n");
    assert!(
        diags.has_errors(),
        "an unknown harness is named, not ignored"
    );
    let (project, diags) = layer(
        "[compat]\ninstructions = false\n",
        ConfigScope::Project(Trust::Trusted),
    );
    assert!(project.is_none());
    assert_eq!(diags.codes(), ["config/project-compat"]);
}

#[test]
fn prices_are_the_owners_and_a_repository_only_lowers_the_spending_limit() {
    let (loaded, diags) = check(
        r#"
[prices."azure:gpt-4o"]
input = 2.0
output = 8.0
cached_input = 0.5

[prices."ollama:*"]
input = 0
output = 0

[limits]
max_cost_usd = 5
"#,
    );
    assert!(diags.is_empty(), "{}", diags.render_human());
    let mut loaded = loaded.unwrap();
    let azure = loaded.config.prices["azure:gpt-4o"];
    assert_eq!(
        (
            azure.input,
            azure.cached_input,
            azure.cache_write_input,
            azure.output
        ),
        (2_000_000, 500_000, 2_000_000, 8_000_000)
    );
    assert_eq!(loaded.config.limits.max_cost_usd, Usd::from_dollars(5.0));
    // A repository may lower the limit, not raise it.
    for (text, expect) in [("2.5", 2.5), ("50", 2.5)] {
        let (l, diags) = layer(
            &format!("[limits]\nmax_cost_usd = {text}\n"),
            ConfigScope::Project(Trust::Trusted),
        );
        assert!(diags.is_empty(), "{diags:?}");
        loaded.apply(l.unwrap());
        assert_eq!(loaded.config.limits.max_cost_usd, Usd::from_dollars(expect));
    }
    let (project, diags) = layer(
        "[prices.\"gpt-4o\"]\ninput = 0\noutput = 0\n",
        ConfigScope::Project(Trust::Trusted),
    );
    assert!(project.is_none());
    assert_eq!(diags.codes(), ["config/project-prices"]);
    let (_, diags) = check(
        "[prices.\"a b\"]\ninput = 1\noutput = 1\n[prices.x]\ninput = -1\noutput = 1\nper = 2\n[limits]\nmax_cost_usd = 0\n",
    );
    let mut codes = diags.codes();
    codes.sort();
    assert_eq!(
        codes,
        [
            "config/limit-invalid",
            "config/price-invalid",
            "config/price-key-invalid",
            "config/unknown-key"
        ]
    );
    let field = |code: &str| {
        diags
            .as_slice()
            .iter()
            .find(|d| d.code == code)
            .and_then(|d| d.locator.field.clone())
    };
    assert_eq!(
        field("config/price-invalid").as_deref(),
        Some("prices.x.input")
    );
    assert_eq!(field("config/unknown-key").as_deref(), Some("prices.x.per"));
}

#[test]
fn skills_resolver_layers_key_by_key_and_its_model_must_name_a_provider() {
    let (loaded, diags) =
        check("[skills]\nresolver = \"on\"\nresolver_model = \"openai:gpt-4o-mini\"\n");
    assert!(diags.is_empty(), "{}", diags.render_human());
    let mut loaded = loaded.unwrap();
    assert_eq!(loaded.config.skills.resolver, Some(ResolverMode::On));
    // A repository's layer changes the mode and keeps the model.
    let (l, diags) = layer(
        "[skills]\nresolver = \"off\"\n",
        ConfigScope::Project(Trust::Untrusted),
    );
    assert!(diags.is_empty(), "{diags:?}");
    loaded.apply(l.unwrap());
    assert_eq!(loaded.config.skills.resolver, Some(ResolverMode::Off));
    assert_eq!(
        loaded
            .config
            .skills
            .resolver_model
            .as_ref()
            .map(ToString::to_string)
            .as_deref(),
        Some("openai:gpt-4o-mini")
    );

    let (_, diags) = check("[skills]\nresolver_model = \"nowhere:small\"\n");
    assert_eq!(diags.codes(), ["config/provider-unknown"]);
    let d = &diags.as_slice()[0];
    assert_eq!(d.locator.field.as_deref(), Some("skills.resolver_model"));
    assert!(d.locator.file.is_some());
    let (_, diags) = check("[skills]\nresolver = \"sometimes\"\n");
    assert_eq!(diags.codes(), ["config/toml-invalid"]);
}

#[test]
fn unreadable_file_is_a_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    // A directory where the file should be.
    let path = dir.path().join("config.toml");
    std::fs::create_dir(&path).unwrap();
    let mut diags = Diagnostics::new();
    assert!(load(&path, &mut diags).is_none());
    assert_eq!(diags.codes(), ["config/unreadable"]);
}

#[test]
fn media_keys_parse_and_warn_where_the_wire_cannot_carry_them() {
    let (loaded, diags) = check(
        "[providers.ollama]\nkind = \"openai\"\nbase_url = \"http://h/v1\"\nimages = false\n\
         audio = true\n[providers.claude]\nkind = \"anthropic\"\nbase_url = \"https://h\"\n\
         audio = true\n",
    );
    let config = loaded.unwrap().config;
    assert_eq!(config.providers["ollama"].images, Some(false));
    assert_eq!(config.providers["ollama"].audio, Some(true));
    assert_eq!(diags.codes(), ["config/media-unsupported"]);
    assert_eq!(
        diags.as_slice()[0].locator.field.as_deref(),
        Some("providers.claude.audio")
    );
}

#[test]
fn teams_max_depth_defaults_to_two_is_checked_and_a_repository_only_lowers_it() {
    let (loaded, diags) = check("");
    assert!(diags.is_empty());
    assert_eq!(loaded.unwrap().config.teams.max_depth(), DEFAULT_MAX_DEPTH);
    let (loaded, diags) = check("[teams]\nmax_depth = 3\n");
    assert!(diags.is_empty(), "{}", diags.render_human());
    let mut loaded = loaded.unwrap();
    assert_eq!(loaded.config.teams.max_depth(), 3);
    for (text, expect) in [("2", 2), ("5", 2), ("1", 1)] {
        let (l, diags) = layer(
            &format!("[teams]\nmax_depth = {text}\n"),
            ConfigScope::Project(Trust::Trusted),
        );
        assert!(diags.is_empty(), "{diags:?}");
        loaded.apply(l.unwrap());
        assert_eq!(loaded.config.teams.max_depth(), expect);
    }
    for bad in ["0", "-1", "9", "4294967297"] {
        let (loaded, diags) = check(&format!("[teams]\nmax_depth = {bad}\n"));
        assert!(loaded.is_none(), "{bad}");
        assert_eq!(diags.codes(), [MAX_DEPTH_INVALID], "{bad}");
        let d = &diags.as_slice()[0];
        assert_eq!(d.locator.field.as_deref(), Some("teams.max_depth"));
        assert!(d.message.contains(bad), "{}", d.message);
    }
    let (_, diags) = check("[teams]\nmax_dept = 2\n");
    assert_eq!(diags.codes(), ["config/unknown-key"]);
}
