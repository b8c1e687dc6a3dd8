//! Plugin servers: one manager per enabled installation, adapted in memory
//! from the plugin's validated `mcp.json` (never copied into the global
//! configuration).

use std::collections::BTreeMap;

use evoflux_core::Diagnostic;
use evoflux_graph::PluginRoot;
use evoflux_plugins::credentials::{CredentialDeclaration, CredentialValues};
use evoflux_plugins::{InstallationId, McpStatus, PluginInspection, PluginManager};

use crate::codes;
use crate::definition::{
    PluginContext, ServerDefinition, plugin_definitions, reserved_header_diagnostics,
};
use crate::error::McpError;
use crate::manager::{ManagerOptions, ManagerScope, McpManager};

/// The servers of one enabled installation, with what went wrong on the
/// way (an invalid top-level `mcp.json`, unreadable credentials).
pub fn installation_definitions(
    plugins: &PluginManager,
    root: &PluginRoot,
) -> (Vec<ServerDefinition>, Vec<Diagnostic>) {
    let inspection = plugins.inspect(&root.dir);
    definitions_from_inspection(plugins, root, &inspection)
}

/// Every server an agent's `mcp:` list can name, as people name them
/// ([`ServerOwner::server_ref`]): the graph's global servers and those of
/// enabled plugins. Reads definitions only; nothing starts.
pub fn server_refs(
    graph: &evoflux_graph::CompiledGraph,
    plugins: &PluginManager,
) -> std::collections::BTreeSet<String> {
    let mut refs: std::collections::BTreeSet<String> =
        crate::definition::definitions_from_graph(graph)
            .iter()
            .map(|d| d.owner.server_ref(&d.name))
            .collect();
    for root in &plugins.enabled_plugin_roots().0 {
        refs.extend(
            installation_definitions(plugins, root)
                .0
                .iter()
                .map(|d| d.owner.server_ref(&d.name)),
        );
    }
    refs
}

/// As [`installation_definitions`], from an inspection the caller has.
pub fn definitions_from_inspection(
    plugins: &PluginManager,
    root: &PluginRoot,
    inspection: &PluginInspection,
) -> (Vec<ServerDefinition>, Vec<Diagnostic>) {
    let mut diagnostics = Vec::new();
    match inspection.mcp_status {
        McpStatus::Absent | McpStatus::NotInspected => return (Vec::new(), diagnostics),
        McpStatus::Disabled => {
            diagnostics.push(
                Diagnostic::warning(
                    codes::PLUGIN_MCP_DISABLED,
                    format!(
                        "plugin `{}`: mcp.json is invalid at the top level, so none of its MCP servers run",
                        root.name
                    ),
                )
                .with_file(root.dir.join("mcp.json")),
            );
            return (Vec::new(), diagnostics);
        }
        McpStatus::Loaded => {}
    }
    let Ok(id) = root.installation.parse::<InstallationId>() else {
        return (Vec::new(), diagnostics);
    };
    let paths = plugins.paths();
    let (credentials, missing_credentials) = match credentials_env(plugins, &id, inspection) {
        Ok(found) => found,
        Err(message) => {
            diagnostics.push(Diagnostic::warning(
                codes::CREDENTIALS_UNAVAILABLE,
                format!(
                    "plugin `{}`: credentials cannot be read ({message}); its stdio servers start without them",
                    root.name
                ),
            ));
            (BTreeMap::new(), Vec::new())
        }
    };
    let data_dir = std::path::absolute(paths.plugin_data_dir(&id))
        .unwrap_or_else(|_| paths.plugin_data_dir(&id));
    let ctx = PluginContext {
        installation: root.installation.clone(),
        plugin: root.name.clone(),
        root: inspection.root.clone(),
        data_dir,
        credentials,
        missing_credentials,
        capabilities: inspection
            .manifest
            .as_ref()
            .map(evoflux_plugins::extensions::mcp_server_capabilities)
            .unwrap_or_default(),
    };
    let definitions = plugin_definitions(&ctx, &inspection.mcp_servers);
    diagnostics.extend(definitions.iter().flat_map(reserved_header_diagnostics));
    // The inspection reports invalid servers; a server that waits for
    // credentials is valid, so it is said here.
    diagnostics.extend(
        definitions
            .iter()
            .filter(|d| matches!(d.launch, crate::definition::Launch::NeedsCredentials { .. }))
            .filter_map(crate::definition::skipped_diagnostic),
    );
    (definitions, diagnostics)
}

/// The declared credential variables with their stored or default values,
/// and the labels of the required ones without a value.
fn credentials_env(
    plugins: &PluginManager,
    id: &InstallationId,
    inspection: &PluginInspection,
) -> Result<(BTreeMap<String, String>, Vec<String>), String> {
    let Some(manifest) = &inspection.manifest else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let Some(decl) = CredentialDeclaration::of(manifest).map_err(|e| e.to_string())? else {
        return Ok((BTreeMap::new(), Vec::new()));
    };
    let values =
        CredentialValues::read(&plugins.paths().credentials_file(id)).map_err(|e| e.to_string())?;
    Ok((values.environment(&decl), values.missing_required(&decl)))
}

/// A manager for one installation (not started).
pub fn installation_manager(
    plugins: &PluginManager,
    root: &PluginRoot,
    options: ManagerOptions,
) -> Result<(McpManager, Vec<Diagnostic>), McpError> {
    let (definitions, diagnostics) = installation_definitions(plugins, root);
    let manager = McpManager::new(
        ManagerScope::Plugin {
            installation: root.installation.clone(),
            plugin: root.name.clone(),
        },
        definitions,
        options,
    )?;
    Ok((manager, diagnostics))
}

/// One manager per enabled installation that declares MCP servers, in the
/// order of [`PluginManager::enabled_plugin_roots`] (not started).
pub fn plugin_managers(
    plugins: &PluginManager,
    options: &ManagerOptions,
) -> Result<(Vec<McpManager>, Vec<Diagnostic>), McpError> {
    let (roots, mut diagnostics) = plugins.enabled_plugin_roots();
    let mut managers = Vec::new();
    for root in &roots {
        let (manager, diags) = installation_manager(plugins, root, options.clone())?;
        diagnostics.extend(diags);
        if !manager.statuses().is_empty() {
            managers.push(manager);
        }
    }
    Ok((managers, diagnostics))
}
