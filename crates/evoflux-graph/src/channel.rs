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
    /// A code block's tokens by class, for the web UI's code highlighting.
    Highlight,
    CreateSession,
    ListSessions,
    ShowSession,
    /// Renames a session (`PATCH /api/sessions/{id}` with `{title}`).
    RenameSession,
    DeleteSession,
    SendMessage,
    StreamEvents,
    AnswerInput,
    DecideApproval,
    /// Answers an MCP server's form (`elicitation_requested`) by its id.
    AnswerElicitation,
    CancelTurn,
    ResumeSession,
    SessionArtifact,
    /// One image or audio item of a stored transcript entry (a tool
    /// result's screenshot), decoded, with its MIME type.
    SessionMedia,
    /// What a view of a session renders first: the newest stored page
    /// before its last turn and the event id to follow from.
    SessionSnapshot,
    /// A page of a session's older transcript (`before=` cursor).
    SessionTranscript,
    /// The prompt commands a session's user can type as `/name` (Claude
    /// Code commands, codex prompts, MCP prompts), for the composer.
    SessionCommands,
    /// Writes a file into a Work session's folder (the body is the file).
    AttachFile,
    /// The session's previews (dev servers of its `preview` tool), with
    /// where the server proxies each.
    SessionPreviews,
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
    /// Adds a server to the user's own `mcp.json` and starts it.
    AddMcpServer,
    /// Replaces a server of the user's own `mcp.json` and restarts it.
    ReplaceMcpServer,
    /// Removes a server from the user's own `mcp.json` and stops it.
    RemoveMcpServer,
    /// Stops and starts one server (any source).
    RestartMcpServer,
    /// Starts an OAuth login to a Streamable HTTP server: the
    /// authorization URL to open.
    McpServerLogin,
    /// The authorization server's redirect back (a browser's, so served
    /// without the token; accepted only for a pending login's `state`).
    McpOAuthCallback,
    /// The schedules with their next and last run.
    Schedules,
    ShowSchedule,
    ScheduleHistory,
    /// Starts a schedule's task now.
    RunSchedule,
    /// Enables or disables a schedule (`PATCH /api/scheduler/{name}` with
    /// `{enabled}`): `enabled` changes in its file.
    SetScheduleEnabled,
    /// What trusting a served repository grants, and whether it is trusted.
    ShowTrust,
    /// Trusts a served repository as its review (by identity) listed it.
    GrantTrust,
    /// Forgets the trust given to a served repository.
    RevokeTrust,
}

/// What a route does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum RouteAction {
    /// Give a session running `agent` a task: the prompt rendered from
    /// `prompt` (a template over the request), in a new session or, with a
    /// `session` key, the session earlier requests with the same key
    /// opened.
    StartSession(Box<ChannelTask>),
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

/// What a user channel's route does with a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelTask {
    pub agent: String,
    pub prompt: Template,
    pub mode: AppMode,
    /// Who may call the route.
    pub auth: ChannelAuth,
    /// What the caller gets back.
    pub answer: Answer,
    /// Requests whose key renders the same continue one session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Template>,
}

/// Who may call a user channel's route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", deny_unknown_fields)]
pub enum ChannelAuth {
    /// The server's own bearer token, as for the API (the default).
    ServerToken,
    /// Anyone who can reach the server; say so explicitly.
    None,
    /// `Authorization: Bearer <token>`, the token being the value of the
    /// environment variable `token_env` when the request arrives.
    Bearer { token_env: String },
    /// A signature of the raw body (GitHub's `X-Hub-Signature-256`, and
    /// the like): `header` carries `prefix` and the lower-case hex
    /// HMAC-SHA256 of the body under the value of `secret_env`.
    HmacSha256 {
        secret_env: String,
        header: String,
        #[serde(default)]
        prefix: String,
    },
}

/// What the caller of a user channel's route gets back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Answer {
    /// `202 Accepted` at once, with the session id and its events URL.
    Session,
    /// The turn's answer (`200`), waiting at most `wait_secs`; a turn that
    /// takes longer is answered as `Session` and goes on.
    Sync { wait_secs: u64 },
}

/// The longest a synchronous answer may wait, and the default.
pub const MAX_SYNC_WAIT_SECS: u64 = 600;
pub const DEFAULT_SYNC_WAIT_SECS: u64 = 120;

/// A prompt or key template over a request: `{{body}}`, `{{body.a.b}}`
/// (a field of a JSON body), `{{method}}`, `{{path}}`, `{{query}}` and
/// `{{param.NAME}}` (a path parameter of the route). Parsed when the
/// channel compiles, so an unknown placeholder is a compile error, never
/// an empty string at run time. Serialized as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    parts: Vec<TemplatePart>,
}

/// One piece of a [`Template`]. Closed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TemplatePart {
    Text(String),
    Body,
    /// A field of the JSON body, by its path of keys (array indexes as
    /// digits).
    BodyField(Vec<String>),
    Method,
    Path,
    Query,
    Param(String),
}

impl Template {
    /// Parses `source`; `params` are the route's path parameters. The
    /// error names the placeholder.
    pub fn parse(source: &str, params: &[&str]) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = source;
        while let Some(start) = rest.find("{{") {
            if start > 0 {
                parts.push(TemplatePart::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 2..];
            let Some(end) = after.find("}}") else {
                return Err(format!(
                    "`{{{{` at `{}` is never closed with `}}}}`",
                    &rest[start..].chars().take(20).collect::<String>()
                ));
            };
            let name = after[..end].trim();
            let part = match name {
                "body" => TemplatePart::Body,
                "method" => TemplatePart::Method,
                "path" => TemplatePart::Path,
                "query" => TemplatePart::Query,
                other => match (other.strip_prefix("body."), other.strip_prefix("param.")) {
                    (Some(field), _) if field.split('.').all(|k| !k.is_empty()) => {
                        TemplatePart::BodyField(field.split('.').map(str::to_owned).collect())
                    }
                    (_, Some(p)) if params.contains(&p) => TemplatePart::Param(p.to_owned()),
                    (_, Some(p)) => {
                        return Err(format!(
                            "`{{{{param.{p}}}}}` names no parameter of the route's path (it has: {})",
                            if params.is_empty() {
                                "none".to_owned()
                            } else {
                                params.join(", ")
                            }
                        ));
                    }
                    _ => {
                        return Err(format!(
                            "`{{{{{other}}}}}` is not body, body.<field>, method, path, query or param.<name>"
                        ));
                    }
                },
            };
            parts.push(part);
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(TemplatePart::Text(rest.to_owned()));
        }
        Ok(Template {
            source: source.to_owned(),
            parts,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    pub fn parts(&self) -> &[TemplatePart] {
        &self.parts
    }
}

impl Serialize for Template {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

impl<'de> Deserialize<'de> for Template {
    /// Reads a template back as written; its parameters are not known
    /// here, so any `param.` name is taken.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let source = String::deserialize(d)?;
        let params: Vec<&str> = template_params(&source);
        Template::parse(&source, &params).map_err(serde::de::Error::custom)
    }
}

/// The `param.` names a template uses.
fn template_params(source: &str) -> Vec<&str> {
    source
        .split("{{")
        .skip(1)
        .filter_map(|s| s.split("}}").next())
        .filter_map(|s| s.trim().strip_prefix("param."))
        .collect()
}

/// The parameters of a route path (`/hooks/:repo/:issue` → repo, issue).
pub fn path_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix(':'))
        .collect()
}

/// The file shape of a user channel.
#[derive(Debug, Deserialize)]
struct ChannelFile {
    #[serde(default)]
    cors: Option<CorsSetting>,
    #[serde(default)]
    auth: Option<ChannelAuth>,
    #[serde(default)]
    route: Vec<RouteFile>,
}

#[derive(Debug, Deserialize)]
struct RouteFile {
    method: Method,
    path: String,
    #[serde(default)]
    cors: Option<CorsSetting>,
    #[serde(default)]
    auth: Option<ChannelAuth>,
    agent: String,
    prompt: String,
    #[serde(default)]
    mode: Option<AppMode>,
    #[serde(default)]
    answer: Option<AnswerKind>,
    #[serde(default)]
    wait_secs: Option<u64>,
    #[serde(default)]
    session: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum AnswerKind {
    Session,
    Sync,
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
    let channel_auth = file.auth.unwrap_or(ChannelAuth::ServerToken);
    let mut routes = Vec::new();
    let mut ok = true;
    for (i, r) in file.route.into_iter().enumerate() {
        let field = |name: &str| format!("route[{i}].{name}");
        let mut error = |code: &'static str, name: &str, message: String| {
            diags.push(
                Diagnostic::error(code, message)
                    .with_file(path)
                    .with_field(field(name)),
            );
        };
        let params = path_params(&r.path);
        let prompt = Template::parse(&r.prompt, &params)
            .map_err(|e| error("channel/placeholder-invalid", "prompt", e));
        let session = r
            .session
            .as_deref()
            .map(|s| Template::parse(s, &params))
            .transpose()
            .map_err(|e| error("channel/placeholder-invalid", "session", e));
        let answer = match (r.answer, r.wait_secs) {
            (None | Some(AnswerKind::Session), None) => Ok(Answer::Session),
            (None | Some(AnswerKind::Session), Some(_)) => {
                error(
                    "channel/wait-without-sync",
                    "wait_secs",
                    "`wait_secs` applies only to `answer = \"sync\"`: remove it or answer synchronously"
                        .to_owned(),
                );
                Err(())
            }
            (Some(AnswerKind::Sync), wait) => match wait.unwrap_or(DEFAULT_SYNC_WAIT_SECS) {
                w @ 1..=MAX_SYNC_WAIT_SECS => Ok(Answer::Sync { wait_secs: w }),
                w => {
                    error(
                        "channel/wait-out-of-range",
                        "wait_secs",
                        format!("`wait_secs = {w}` must be between 1 and {MAX_SYNC_WAIT_SECS}"),
                    );
                    Err(())
                }
            },
        };
        let auth = r.auth.unwrap_or_else(|| channel_auth.clone());
        let auth = check_auth(&auth)
            .map(|()| auth)
            .map_err(|e| error("channel/auth-invalid", "auth", e));
        let (Ok(prompt), Ok(session), Ok(answer), Ok(auth)) = (prompt, session, answer, auth)
        else {
            ok = false;
            continue;
        };
        routes.push(RouteDecl {
            method: r.method,
            path: r.path,
            cors: match r.cors {
                Some(setting) => setting.normalize(),
                None => channel_cors.clone(),
            },
            action: RouteAction::StartSession(Box::new(ChannelTask {
                agent: r.agent,
                prompt,
                mode: r.mode.unwrap_or(AppMode::Work),
                auth,
                answer,
                session,
            })),
        });
    }
    ok.then_some(ChannelDefinition { routes })
}

/// An environment variable name and a header name must be plain names.
fn check_auth(auth: &ChannelAuth) -> Result<(), String> {
    let env_name = |n: &str| {
        !n.is_empty()
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !n.starts_with(|c: char| c.is_ascii_digit())
    };
    match auth {
        ChannelAuth::ServerToken | ChannelAuth::None => Ok(()),
        ChannelAuth::Bearer { token_env } if env_name(token_env) => Ok(()),
        ChannelAuth::HmacSha256 {
            secret_env, header, ..
        } if env_name(secret_env)
            && !header.is_empty()
            && header
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') =>
        {
            Ok(())
        }
        ChannelAuth::Bearer { token_env: name }
        | ChannelAuth::HmacSha256 {
            secret_env: name, ..
        } if !env_name(name) => Err(format!(
            "`{name}` is not an environment variable name (letters, digits and `_`)"
        )),
        ChannelAuth::Bearer { .. } | ChannelAuth::HmacSha256 { .. } => {
            Err("the signature header must be a header name such as X-Hub-Signature-256".to_owned())
        }
    }
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
            r(M::Post, "/api/highlight", E::Highlight),
            r(M::Post, "/api/sessions", E::CreateSession),
            r(M::Get, "/api/sessions", E::ListSessions),
            r(M::Get, "/api/sessions/:id", E::ShowSession),
            r(M::Patch, "/api/sessions/:id", E::RenameSession),
            r(M::Delete, "/api/sessions/:id", E::DeleteSession),
            r(M::Post, "/api/sessions/:id/messages", E::SendMessage),
            r(M::Get, "/api/sessions/:id/events", E::StreamEvents),
            r(M::Post, "/api/sessions/:id/input", E::AnswerInput),
            r(
                M::Post,
                "/api/sessions/:id/approvals/:call_id",
                E::DecideApproval,
            ),
            r(
                M::Post,
                "/api/sessions/:id/elicitations/:elicitation_id",
                E::AnswerElicitation,
            ),
            r(M::Post, "/api/sessions/:id/cancel", E::CancelTurn),
            r(M::Post, "/api/sessions/:id/resume", E::ResumeSession),
            r(M::Get, "/api/sessions/:id/artifact", E::SessionArtifact),
            r(
                M::Get,
                "/api/sessions/:id/media/:seq/:index",
                E::SessionMedia,
            ),
            r(M::Get, "/api/sessions/:id/snapshot", E::SessionSnapshot),
            r(M::Get, "/api/sessions/:id/transcript", E::SessionTranscript),
            r(M::Get, "/api/sessions/:id/commands", E::SessionCommands),
            r(M::Post, "/api/sessions/:id/attachments", E::AttachFile),
            r(M::Get, "/api/sessions/:id/previews", E::SessionPreviews),
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
            r(M::Post, "/api/mcp/servers", E::AddMcpServer),
            r(M::Put, "/api/mcp/servers/:name", E::ReplaceMcpServer),
            r(M::Delete, "/api/mcp/servers/:name", E::RemoveMcpServer),
            r(
                M::Post,
                "/api/mcp/servers/:name/restart",
                E::RestartMcpServer,
            ),
            r(M::Post, "/api/mcp/servers/:name/login", E::McpServerLogin),
            r(M::Get, "/api/mcp/oauth/callback", E::McpOAuthCallback),
            r(M::Get, "/api/scheduler", E::Schedules),
            r(M::Get, "/api/scheduler/:name", E::ShowSchedule),
            r(M::Get, "/api/scheduler/:name/history", E::ScheduleHistory),
            r(M::Post, "/api/scheduler/:name/run", E::RunSchedule),
            r(M::Patch, "/api/scheduler/:name", E::SetScheduleEnabled),
            r(M::Get, "/api/trust", E::ShowTrust),
            r(M::Post, "/api/trust", E::GrantTrust),
            r(M::Delete, "/api/trust", E::RevokeTrust),
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
            RouteAction::StartSession(Box::new(ChannelTask {
                agent: "triage".into(),
                prompt: Template::parse("status", &[]).unwrap(),
                mode: AppMode::Coding,
                auth: ChannelAuth::ServerToken,
                answer: Answer::Session,
                session: None,
            }))
        );
    }

    #[test]
    fn auth_answer_and_session_keys_parse_with_route_overrides() {
        let mut d = Diagnostics::new();
        let v = json!({
            "auth": {"hmac-sha256": {"secret_env": "GH_SECRET", "header": "X-Hub-Signature-256", "prefix": "sha256="}},
            "route": [
                {"method": "POST", "path": "/hooks/:repo", "agent": "triage",
                 "prompt": "{{param.repo}}: {{body.issue.title}}", "session": "{{body.issue.number}}"},
                {"method": "POST", "path": "/ask", "agent": "triage", "prompt": "{{body}}",
                 "auth": "none", "answer": "sync", "wait_secs": 30},
                {"method": "POST", "path": "/bearer", "agent": "triage", "prompt": "{{body}}",
                 "auth": {"bearer": {"token_env": "HOOK_TOKEN"}}, "answer": "sync"}
            ]
        });
        let c = parse(Path::new("c.toml"), v, &mut d).unwrap();
        assert!(d.is_empty(), "{d:?}");
        let task = |i: usize| match &c.routes[i].action {
            RouteAction::StartSession(task) => task.as_ref().clone(),
            other => panic!("{other:?}"),
        };
        let t = task(0);
        assert!(matches!(&t.auth, ChannelAuth::HmacSha256 { prefix, .. } if prefix == "sha256="));
        assert_eq!(
            t.prompt.parts()[2],
            TemplatePart::BodyField(vec!["issue".into(), "title".into()])
        );
        assert_eq!(
            t.session.as_ref().unwrap().source(),
            "{{body.issue.number}}"
        );
        let t = task(1);
        assert_eq!(
            (t.auth, t.answer),
            (ChannelAuth::None, Answer::Sync { wait_secs: 30 })
        );
        assert_eq!(
            task(2).answer,
            Answer::Sync {
                wait_secs: DEFAULT_SYNC_WAIT_SECS
            }
        );
        // As written, through info and back.
        let back: RouteAction =
            serde_json::from_value(serde_json::to_value(&c.routes[0].action).unwrap()).unwrap();
        assert_eq!(back, c.routes[0].action);
    }

    #[test]
    fn every_route_mistake_is_reported_with_its_field() {
        let cases = [
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "{{secret}}"}),
                "channel/placeholder-invalid",
                "route[0].prompt",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "{{param.id}}"}),
                "channel/placeholder-invalid",
                "route[0].prompt",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "{{body"}),
                "channel/placeholder-invalid",
                "route[0].prompt",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "x", "session": "{{body.}}"}),
                "channel/placeholder-invalid",
                "route[0].session",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "x", "wait_secs": 5}),
                "channel/wait-without-sync",
                "route[0].wait_secs",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "x", "answer": "sync", "wait_secs": 0}),
                "channel/wait-out-of-range",
                "route[0].wait_secs",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "x", "auth": {"bearer": {"token_env": "A-B"}}}),
                "channel/auth-invalid",
                "route[0].auth",
            ),
            (
                json!({"method": "POST", "path": "/a", "agent": "t", "prompt": "x", "auth": {"hmac-sha256": {"secret_env": "S", "header": "X Sig"}}}),
                "channel/auth-invalid",
                "route[0].auth",
            ),
        ];
        for (route, code, field) in cases {
            let mut d = Diagnostics::new();
            assert!(parse(Path::new("c.toml"), json!({"route": [route]}), &mut d).is_none());
            let hit = d
                .iter()
                .find(|x| x.code == code)
                .unwrap_or_else(|| panic!("{code}: {d:?}"));
            assert_eq!(hit.locator.field.as_deref(), Some(field), "{code}");
        }
        let mut d = Diagnostics::new();
        let v = json!({"route": [{"method": "POST", "path": "/a", "agent": "t", "prompt": "x", "answer": "later"}]});
        assert!(parse(Path::new("c.toml"), v, &mut d).is_none());
        assert!(d.has_code("compile/definition-invalid"));
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
