//! Channels: HTTP routes served by `evoflux serve`.
//!
//! A user channel (`channels/<path>.toml`) declares routes that start a
//! session with a named agent from a prompt template. The framework
//! channels `api` and `home` declare the HTTP API and the web UI with typed
//! internal actions that users cannot author; replacing or disabling their
//! slot replaces or removes those routes.

use std::path::Path;

use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::declarative::deserialize_strict;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Head,
    Post,
    Put,
    Patch,
    Delete,
    Options,
}

impl Method {
    pub const fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
        }
    }
}

/// A CORS list: `"*"` or explicit values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CorsList {
    Any(AnyMarker),
    List(Vec<String>),
}

/// The literal `"*"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AnyMarker {
    #[serde(rename = "*")]
    Any,
}

/// Normalized CORS options; equality is structural.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cors {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<CorsList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub methods: Option<CorsList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_headers: Option<CorsList>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expose_headers: Option<CorsList>,
    #[serde(default)]
    pub credentials: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age: Option<u64>,
}

/// `cors = true`, `cors = false` or a table of options.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum CorsSetting {
    Flag(bool),
    Options(Cors),
}

impl CorsSetting {
    fn normalize(self) -> Option<Cors> {
        match self {
            CorsSetting::Flag(true) => Some(Cors::default()),
            CorsSetting::Flag(false) => None,
            CorsSetting::Options(c) => Some(c),
        }
    }
}

/// Endpoints of the framework HTTP API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApiEndpoint {
    Health,
    Info,
    OpenApi,
    CreateSession,
    ListSessions,
    ShowSession,
    DeleteSession,
    SendMessage,
    StreamEvents,
    AnswerInput,
    DecideApproval,
    CancelTurn,
    ResumeSession,
    SessionArtifact,
    Agents,
    CreateAgent,
    ShowAgent,
    ShowCodingAgent,
    ReplaceAgent,
    ReplaceCodingAgent,
    DeleteAgent,
    DeleteCodingAgent,
    /// The agent editor's Form view of a file (no file is read or written).
    ReadAgentForm,
    /// A file with Form values written over it (nothing is saved).
    WriteAgentForm,
    Skills,
    ShowSkill,
    CreateSkill,
    ReplaceSkill,
    UpdateSkillPrefs,
    /// Deletes an editable bundle, or with `settings_id` resets that
    /// variant's preferences.
    DeleteSkill,
    SkillSettings,
    Plugins,
    InspectPlugin,
    InstallPlugin,
    UploadPlugin,
    CreatePlugin,
    PackPlugin,
    PluginTree,
    PluginFile,
    SavePluginFile,
    CreatePluginEntry,
    DeletePluginEntry,
    ShowPlugin,
    UninstallPlugin,
    UpdatePlugin,
    UpdatePluginUpload,
    SetPluginEnabled,
    PluginCredentials,
    SetPluginCredentials,
    ClearPluginCredentials,
    McpServers,
    ShowMcpServer,
    /// The schedules with their next and last run.
    Schedules,
    ShowSchedule,
    ScheduleHistory,
    /// Starts a schedule's task now.
    RunSchedule,
}

/// What a route does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RouteAction {
    /// Start a session with `agent`, the prompt rendered from `prompt`
    /// (a template over the request).
    StartSession {
        agent: String,
        prompt: String,
        mode: AppMode,
    },
    /// A framework API endpoint.
    Api { endpoint: ApiEndpoint },
    /// The web UI's page.
    Home,
    /// A file of the web UI (`/ui/:file`): its scripts and styles.
    HomeAsset,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteDecl {
    pub method: Method,
    /// As written; canonicalized by the route plan.
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cors: Option<Cors>,
    pub action: RouteAction,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelDefinition {
    pub routes: Vec<RouteDecl>,
}

/// The file shape of a user channel.
#[derive(Debug, Deserialize)]
struct ChannelFile {
    #[serde(default)]
    cors: Option<CorsSetting>,
    #[serde(default)]
    route: Vec<RouteFile>,
}

#[derive(Debug, Deserialize)]
struct RouteFile {
    method: Method,
    path: String,
    #[serde(default)]
    cors: Option<CorsSetting>,
    agent: String,
    prompt: String,
    #[serde(default)]
    mode: Option<AppMode>,
}

pub fn parse(path: &Path, value: Value, diags: &mut Diagnostics) -> Option<ChannelDefinition> {
    let file: ChannelFile = deserialize_strict(path, value, "channel", diags)?;
    if file.route.is_empty() {
        diags.push(
            Diagnostic::error(
                "compile/channel-invalid",
                "a channel needs at least one [[route]] with method, path, agent and prompt",
            )
            .with_file(path)
            .with_field("route"),
        );
        return None;
    }
    let channel_cors = file.cors.and_then(CorsSetting::normalize);
    let routes = file
        .route
        .into_iter()
        .map(|r| RouteDecl {
            method: r.method,
            path: r.path,
            cors: match r.cors {
                Some(setting) => setting.normalize(),
                None => channel_cors.clone(),
            },
            action: RouteAction::StartSession {
                agent: r.agent,
                prompt: r.prompt,
                mode: r.mode.unwrap_or(AppMode::Work),
            },
        })
        .collect();
    Some(ChannelDefinition { routes })
}

/// The framework `api` channel: the whole HTTP API surface.
pub fn framework_api() -> ChannelDefinition {
    use ApiEndpoint as E;
    use Method as M;
    let r = |method, path: &str, endpoint| RouteDecl {
        method,
        path: path.to_owned(),
        cors: None,
        action: RouteAction::Api { endpoint },
    };
    ChannelDefinition {
        routes: vec![
            r(M::Get, "/api/health", E::Health),
            r(M::Get, "/api/info", E::Info),
            r(M::Get, "/openapi.json", E::OpenApi),
            r(M::Post, "/api/sessions", E::CreateSession),
            r(M::Get, "/api/sessions", E::ListSessions),
            r(M::Get, "/api/sessions/:id", E::ShowSession),
            r(M::Delete, "/api/sessions/:id", E::DeleteSession),
            r(M::Post, "/api/sessions/:id/messages", E::SendMessage),
            r(M::Get, "/api/sessions/:id/events", E::StreamEvents),
            r(M::Post, "/api/sessions/:id/input", E::AnswerInput),
            r(
                M::Post,
                "/api/sessions/:id/approvals/:call_id",
                E::DecideApproval,
            ),
            r(M::Post, "/api/sessions/:id/cancel", E::CancelTurn),
            r(M::Post, "/api/sessions/:id/resume", E::ResumeSession),
            r(M::Get, "/api/sessions/:id/artifact", E::SessionArtifact),
            r(M::Get, "/api/agents", E::Agents),
            r(M::Post, "/api/agents", E::CreateAgent),
            r(M::Get, "/api/agents/:name", E::ShowAgent),
            r(M::Put, "/api/agents/:name", E::ReplaceAgent),
            r(M::Delete, "/api/agents/:name", E::DeleteAgent),
            r(M::Get, "/api/agents/coding/:name", E::ShowCodingAgent),
            r(M::Put, "/api/agents/coding/:name", E::ReplaceCodingAgent),
            r(M::Delete, "/api/agents/coding/:name", E::DeleteCodingAgent),
            r(M::Post, "/api/agent-form/read", E::ReadAgentForm),
            r(M::Post, "/api/agent-form/write", E::WriteAgentForm),
            r(M::Get, "/api/skills", E::Skills),
            r(M::Post, "/api/skills", E::CreateSkill),
            r(M::Get, "/api/skills/:name", E::ShowSkill),
            r(M::Put, "/api/skills/:name", E::ReplaceSkill),
            r(M::Patch, "/api/skills/:name", E::UpdateSkillPrefs),
            r(M::Delete, "/api/skills/:name", E::DeleteSkill),
            r(M::Get, "/api/settings/skills", E::SkillSettings),
            r(M::Get, "/api/plugins", E::Plugins),
            r(M::Get, "/api/plugins/inspect", E::InspectPlugin),
            r(M::Post, "/api/plugins/install", E::InstallPlugin),
            r(M::Post, "/api/plugins/upload", E::UploadPlugin),
            r(M::Post, "/api/plugins/create", E::CreatePlugin),
            r(M::Post, "/api/plugins/pack", E::PackPlugin),
            r(M::Get, "/api/plugins/workspace/tree", E::PluginTree),
            r(M::Get, "/api/plugins/workspace/file", E::PluginFile),
            r(M::Put, "/api/plugins/workspace/file", E::SavePluginFile),
            r(
                M::Post,
                "/api/plugins/workspace/entry",
                E::CreatePluginEntry,
            ),
            r(
                M::Delete,
                "/api/plugins/workspace/entry",
                E::DeletePluginEntry,
            ),
            r(M::Get, "/api/plugins/:id", E::ShowPlugin),
            r(M::Delete, "/api/plugins/:id", E::UninstallPlugin),
            r(M::Post, "/api/plugins/:id/update", E::UpdatePlugin),
            r(
                M::Post,
                "/api/plugins/:id/update-upload",
                E::UpdatePluginUpload,
            ),
            r(M::Patch, "/api/plugins/:id/enabled", E::SetPluginEnabled),
            r(M::Get, "/api/plugins/:id/credentials", E::PluginCredentials),
            r(
                M::Put,
                "/api/plugins/:id/credentials",
                E::SetPluginCredentials,
            ),
            r(
                M::Delete,
                "/api/plugins/:id/credentials",
                E::ClearPluginCredentials,
            ),
            r(M::Get, "/api/mcp/servers", E::McpServers),
            r(M::Get, "/api/mcp/servers/:name", E::ShowMcpServer),
            r(M::Get, "/api/scheduler", E::Schedules),
            r(M::Get, "/api/scheduler/:name", E::ShowSchedule),
            r(M::Get, "/api/scheduler/:name/history", E::ScheduleHistory),
            r(M::Post, "/api/scheduler/:name/run", E::RunSchedule),
        ],
    }
}

/// The framework `home` channel: the web UI at `/` and its files.
pub fn framework_home() -> ChannelDefinition {
    let r = |method, path: &str, action| RouteDecl {
        method,
        path: path.to_owned(),
        cors: None,
        action,
    };
    ChannelDefinition {
        routes: vec![
            r(Method::Get, "/", RouteAction::Home),
            r(Method::Head, "/", RouteAction::Home),
            r(Method::Get, "/ui/:file", RouteAction::HomeAsset),
        ],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_channel_parses_with_channel_level_cors() {
        let mut d = Diagnostics::new();
        let v = json!({
            "cors": {"origin": ["https://app.example.com"]},
            "route": [
                {"method": "POST", "path": "/hooks/github", "agent": "triage", "prompt": "{{body}}"},
                {"method": "GET", "path": "/hooks/status", "agent": "triage", "prompt": "status", "cors": false, "mode": "coding"}
            ]
        });
        let c = parse(Path::new("c.toml"), v, &mut d).unwrap();
        assert!(d.is_empty());
        assert!(c.routes[0].cors.is_some());
        assert!(c.routes[1].cors.is_none());
        assert_eq!(
            c.routes[1].action,
            RouteAction::StartSession {
                agent: "triage".into(),
                prompt: "status".into(),
                mode: AppMode::Coding
            }
        );
    }

    #[test]
    fn users_cannot_author_api_actions_or_unknown_methods() {
        let mut d = Diagnostics::new();
        let v = json!({"route": [{"method": "GET", "path": "/x", "agent": "a", "prompt": "p", "endpoint": "info"}]});
        assert!(parse(Path::new("c.toml"), v, &mut d).is_none());
        assert!(d.has_code("compile/unknown-key"));
        let mut d = Diagnostics::new();
        let v = json!({"route": [{"method": "TRACE", "path": "/x", "agent": "a", "prompt": "p"}]});
        assert!(parse(Path::new("c.toml"), v, &mut d).is_none());
        assert!(d.has_code("compile/definition-invalid"));
        let mut d = Diagnostics::new();
        assert!(parse(Path::new("c.toml"), json!({}), &mut d).is_none());
        assert!(d.has_code("compile/channel-invalid"));
    }
}
