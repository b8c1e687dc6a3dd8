//! Plugin servers end to end: a linked plugin whose `mcp.json` runs the
//! test server through a bundled `./bin/server` script, with placeholders,
//! credentials, failure isolation and hot reconcile.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use evoflux_mcp::environment::{BASE_VARS, base_environment};
use evoflux_mcp::plugin::plugin_managers;
use evoflux_mcp::{ManagerOptions, McpRuntime, ServerOwner, ServerState, codes};
use evoflux_plugins::{
    CredentialChange, InstallationId, MCP_SCHEMA_1_0_0, PLUGIN_SCHEMA_1_0_0, PluginManager,
    PluginPaths,
};
use serde_json::json;

const CALL: Duration = Duration::from_secs(30);

struct Env {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    plugins: PluginManager,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let plugins = PluginManager::new(PluginPaths::new(base.join("data"), base.join("cache")));
        Env {
            _tmp: tmp,
            base,
            plugins,
        }
    }

    fn options(&self) -> ManagerOptions {
        ManagerOptions {
            base_env: base_environment([
                ("PATH".to_owned(), std::env::var("PATH").unwrap_or_default()),
                ("UNRELATED_SECRET".to_owned(), "no".to_owned()),
            ]),
            ..ManagerOptions::default()
        }
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A plugin folder whose `./bin/server` runs the test server.
fn plugin_dir(parent: &Path, dir: &str, name: &str, mcp: serde_json::Value) -> PathBuf {
    let root = parent.join(dir);
    write(
        &root.join("plugin.json"),
        &json!({
            "$schema": PLUGIN_SCHEMA_1_0_0,
            "name": name,
            "version": "1.0.0",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN"}
            ]}}
        })
        .to_string(),
    );
    write(&root.join("mcp.json"), &mcp.to_string());
    let script = root.join("bin/server");
    write(
        &script,
        &format!("#!/bin/sh\nexec '{TEST_SERVER}' \"$@\"\n"),
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    root
}

fn set_token(env: &Env, id: &InstallationId, value: &str) {
    env.plugins
        .change_credentials(
            id,
            &BTreeMap::from([(
                "token".to_owned(),
                CredentialChange::SetText(value.to_owned()),
            )]),
        )
        .unwrap();
}

fn demo_mcp() -> serde_json::Value {
    json!({
        "$schema": MCP_SCHEMA_1_0_0,
        "mcpServers": {
            "svc": {
                "type": "stdio",
                "command": "./bin/server",
                "args": ["--filler-tools", "1"],
                "env": {
                    "DB": "${PLUGIN_DATA}/db",
                    "ROOT_AGAIN": "${PLUGIN_ROOT}",
                    "LITERAL": "$HOME ${OTHER} ${PLUGIN_ROOT_SUFFIX}"
                },
                "cwd": "${PLUGIN_DATA}"
            },
            "bad": {"type": "stdio", "args": ["no command"]},
            "old": {"type": "sse", "url": "http://127.0.0.1:9/sse"}
        }
    })
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plugin_stdio_gets_placeholders_credentials_and_nothing_else() {
    let env = Env::new();
    // A root whose path itself contains a placeholder: expanded once only.
    let root = plugin_dir(&env.base, "src/weird${PLUGIN_DATA}", "demo", demo_mcp());
    let id = env
        .plugins
        .link(&root, true)
        .unwrap()
        .detail
        .installation
        .id;
    set_token(&env, &id, "tok-SECRET-1");
    let data = env.plugins.paths().plugin_data_dir(&id);

    let (managers, diagnostics) = plugin_managers(&env.plugins, &env.options()).unwrap();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    assert_eq!(managers.len(), 1);
    let m = &managers[0];
    m.start_all();
    settle(m).await;

    let svc = m.status("svc").unwrap();
    assert_eq!(svc.state, ServerState::Ready, "{svc:?}");
    assert!(matches!(&svc.owner, ServerOwner::Plugin { plugin, .. } if plugin == "demo"));
    let bad = m.status("bad").unwrap();
    assert_eq!(bad.state, ServerState::Failed);
    assert_eq!(bad.last_error.unwrap().code, codes::SERVER_INVALID);
    assert_eq!(m.status("old").unwrap().state, ServerState::Skipped);
    assert!(data.is_dir(), "PLUGIN_DATA was not created");

    let set = m.tool_set(&BTreeSet::new());
    let get_env = set.get("mcp__demo_svc__get_env").unwrap();
    let r = set
        .call_tool(&get_env.qualified_name, json!({}), CALL)
        .await
        .unwrap();
    let seen: BTreeMap<String, String> = serde_json::from_str(&r.to_text()).unwrap();
    let root_s = root.canonicalize().unwrap().to_string_lossy().into_owned();
    let data_s = data.to_string_lossy().into_owned();
    assert!(root_s.contains("${PLUGIN_DATA}"));
    assert_eq!(seen["PLUGIN_ROOT"], root_s);
    assert_eq!(seen["PLUGIN_DATA"], data_s);
    assert_eq!(seen["ROOT_AGAIN"], root_s);
    assert_eq!(seen["DB"], format!("{data_s}/db"));
    assert_eq!(seen["LITERAL"], "$HOME ${OTHER} ${PLUGIN_ROOT_SUFFIX}");
    assert_eq!(seen["SERVICE_API_TOKEN"], "tok-SECRET-1");
    let allowed: BTreeSet<&str> = [
        "PLUGIN_ROOT",
        "PLUGIN_DATA",
        "ROOT_AGAIN",
        "DB",
        "LITERAL",
        "SERVICE_API_TOKEN",
        // Set by the `/bin/sh` of the bundled script itself.
        "PWD",
        "SHLVL",
        "_",
    ]
    .into_iter()
    .chain(BASE_VARS.iter().copied())
    .collect();
    for key in seen.keys() {
        assert!(allowed.contains(key.as_str()), "leaked {key}");
    }
    // `sh` exports PWD: the cwd is PLUGIN_DATA.
    if let Some(pwd) = seen.get("PWD") {
        assert_eq!(pwd, &data_s);
    }
    // Statuses never show environment values.
    let listed = serde_json::to_string(&m.statuses()).unwrap();
    assert!(!listed.contains("tok-SECRET-1"));
    m.stop_all().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtime_reconciles_credentials_disable_and_invalid_mcp_json() {
    let env = Env::new();
    let root = plugin_dir(&env.base, "src/demo", "demo", demo_mcp());
    let id = env
        .plugins
        .link(&root, true)
        .unwrap()
        .detail
        .installation
        .id;
    set_token(&env, &id, "first");
    // A second plugin with an mcp.json that is invalid at the top level.
    let broken = plugin_dir(
        &env.base,
        "src/broken",
        "broken",
        json!({"$schema": MCP_SCHEMA_1_0_0, "mcpServers": {}, "extra": 1}),
    );
    env.plugins.link(&broken, true).unwrap();

    let graph = evoflux_graph::compile(&[], &[]).unwrap();
    let (mut runtime, diagnostics) =
        McpRuntime::new(&graph, Some(&env.plugins), env.options()).unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d.code == codes::PLUGIN_MCP_DISABLED),
        "{diagnostics:?}"
    );
    assert!(runtime.global().statuses().is_empty());
    assert_eq!(runtime.managers().len(), 2);
    runtime.start_all();
    let m = runtime.plugin(id.as_str()).unwrap().clone();
    settle(&m).await;

    let token = |set: &evoflux_mcp::ToolSet| {
        let set = set.clone();
        async move {
            let r = set
                .call_tool("mcp__demo_svc__get_env", json!({}), CALL)
                .await
                .unwrap();
            let seen: BTreeMap<String, String> = serde_json::from_str(&r.to_text()).unwrap();
            seen["SERVICE_API_TOKEN"].clone()
        }
    };
    assert_eq!(token(&runtime.tool_set(&BTreeSet::new())).await, "first");
    let pid = runtime
        .tool_set(&BTreeSet::new())
        .call_tool("mcp__demo_svc__pid", json!({}), CALL)
        .await
        .unwrap()
        .to_text();

    // Saving credentials: the changed server restarts with the new value.
    set_token(&env, &id, "second");
    let (roots, _) = env.plugins.enabled_plugin_roots();
    let demo_root = roots
        .iter()
        .find(|r| r.installation == id.as_str())
        .unwrap();
    runtime
        .reconcile_plugin(&env.plugins, demo_root)
        .await
        .unwrap();
    settle(&m).await;
    assert_eq!(token(&runtime.tool_set(&BTreeSet::new())).await, "second");

    // Disabling: its servers stop and its tools disappear.
    runtime.remove_plugin(id.as_str()).await;
    assert!(runtime.plugin(id.as_str()).is_none());
    assert!(runtime.tool_set(&BTreeSet::new()).is_empty());
    assert!(m.statuses().iter().all(|s| s.state != ServerState::Ready));
    #[cfg(target_os = "linux")]
    assert!(wait_gone(pid.parse().unwrap()).await);
    let _ = pid;

    // Enabling again starts them.
    runtime
        .reconcile_plugin(&env.plugins, demo_root)
        .await
        .unwrap();
    let again = runtime.plugin(id.as_str()).unwrap().clone();
    settle(&again).await;
    assert_eq!(again.status("svc").unwrap().state, ServerState::Ready);
    runtime.shutdown().await;
    assert!(
        runtime
            .statuses()
            .iter()
            .all(|s| s.state != ServerState::Ready)
    );
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_follows_the_registry_without_a_restart() {
    let env = Env::new();
    let root = plugin_dir(&env.base, "src/demo", "demo", demo_mcp());
    let id = env
        .plugins
        .link(&root, true)
        .unwrap()
        .detail
        .installation
        .id;
    set_token(&env, &id, "first");
    let graph = evoflux_graph::compile(&[], &[]).unwrap();
    let (mut runtime, _) = McpRuntime::new(&graph, Some(&env.plugins), env.options()).unwrap();
    runtime.start_all();
    settle(runtime.plugin(id.as_str()).unwrap()).await;

    // Disabled in the registry (e.g. by `evoflux plugin disable` in another
    // process): the next sync stops it.
    env.plugins.set_enabled(&id, false).unwrap();
    assert!(runtime.sync_plugins(&env.plugins).await.is_empty());
    assert!(runtime.plugin(id.as_str()).is_none());
    assert!(runtime.tool_set(&BTreeSet::new()).is_empty());

    // Enabled again with a new credential: it comes back with the new value.
    env.plugins.set_enabled(&id, true).unwrap();
    set_token(&env, &id, "second");
    runtime.sync_plugins(&env.plugins).await;
    let m = runtime.plugin(id.as_str()).unwrap().clone();
    settle(&m).await;
    let r = runtime
        .tool_set(&BTreeSet::new())
        .call_tool("mcp__demo_svc__get_env", json!({}), CALL)
        .await
        .unwrap();
    let seen: BTreeMap<String, String> = serde_json::from_str(&r.to_text()).unwrap();
    assert_eq!(seen["SERVICE_API_TOKEN"], "second");

    // An unchanged registry restarts nothing.
    let pid = |rt: &McpRuntime| {
        let set = rt.tool_set(&BTreeSet::new());
        async move {
            set.call_tool("mcp__demo_svc__pid", json!({}), CALL)
                .await
                .unwrap()
                .to_text()
        }
    };
    let before = pid(&runtime).await;
    runtime.sync_plugins(&env.plugins).await;
    settle(&m).await;
    assert_eq!(pid(&runtime).await, before);
    runtime.shutdown().await;
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_waiting_for_a_required_credential_starts_once_it_is_set_without_a_restart() {
    let env = Env::new();
    let root = plugin_dir(&env.base, "src/demo", "demo", demo_mcp());
    // The same plugin, with its token required.
    write(
        &root.join("plugin.json"),
        &json!({
            "$schema": PLUGIN_SCHEMA_1_0_0,
            "name": "demo",
            "version": "1.0.0",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "token", "label": "API token", "type": "secret",
                 "env": "SERVICE_API_TOKEN", "required": true}
            ]}}
        })
        .to_string(),
    );
    let id = env
        .plugins
        .link(&root, true)
        .unwrap()
        .detail
        .installation
        .id;
    let graph = evoflux_graph::compile(&[], &[]).unwrap();
    let (mut runtime, diagnostics) =
        McpRuntime::new(&graph, Some(&env.plugins), env.options()).unwrap();
    assert!(
        diagnostics
            .iter()
            .any(|d| d.code == codes::NEEDS_CREDENTIALS),
        "{diagnostics:?}"
    );
    runtime.start_all();
    let m = runtime.plugin(id.as_str()).unwrap().clone();
    settle(&m).await;
    let svc = m.status("svc").unwrap();
    assert_eq!(svc.state, ServerState::NeedsCredentials, "{svc:?}");
    assert!(svc.last_error.unwrap().message.contains("API token"));

    set_token(&env, &id, "now");
    runtime.sync_plugins(&env.plugins).await;
    let m = runtime.plugin(id.as_str()).unwrap().clone();
    settle(&m).await;
    assert_eq!(m.status("svc").unwrap().state, ServerState::Ready);
    runtime.shutdown().await;
}
