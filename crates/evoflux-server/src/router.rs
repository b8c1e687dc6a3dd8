//! The router is the compiled route plan: every effective route, every
//! derived preflight and the closed host inventory, nothing else. Each
//! route's handler is chosen by an exhaustive switch on its typed action;
//! [`mounted`] lists what was mounted, so a test can compare it with the
//! plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodFilter, MethodRouter, any, on};
use evoflux_graph::channel::{ApiEndpoint, Cors, CorsList, Method, RouteAction};
use evoflux_graph::route_plan::{HostRoute, RoutePlan};
use serde::Serialize;

use crate::api::{agents, mcp, plugins, scheduler, sessions, skills, system, trust, viewer};
use crate::auth::{Token, require_token};
use crate::channels::{ChannelRoute, RequestView};
use crate::error::ApiError;
use crate::state::ServerState;

/// One mounted route: its method (`ALL` for every method) and its path in
/// the plan's form (`/api/sessions/:id`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct MountedRoute {
    pub method: String,
    pub path: String,
}

/// What the router for `plan` mounts, in the plan's order: effective
/// routes, preflights, then the host inventory.
pub fn mounted(plan: &RoutePlan) -> Vec<MountedRoute> {
    let mut out: Vec<MountedRoute> = plan
        .effective
        .iter()
        .map(|r| MountedRoute {
            method: r.method.as_str().to_owned(),
            path: r.path.clone(),
        })
        .collect();
    out.extend(plan.preflights.iter().map(|p| MountedRoute {
        method: "OPTIONS".to_owned(),
        path: p.path.clone(),
    }));
    out.extend(HostRoute::ALL.iter().map(|h| {
        let (method, path) = h.route();
        MountedRoute {
            method: method.map_or("ALL", Method::as_str).to_owned(),
            path: path.to_owned(),
        }
    }));
    out
}

/// `/a/:id` → `/a/{id}` (axum's syntax).
fn axum_path(path: &str) -> String {
    path.split('/')
        .map(|seg| match seg.strip_prefix(':') {
            Some(name) => format!("{{{name}}}"),
            None => seg.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("/")
}

fn filter(method: Method) -> MethodFilter {
    match method {
        Method::Get => MethodFilter::GET,
        Method::Head => MethodFilter::HEAD,
        Method::Post => MethodFilter::POST,
        Method::Put => MethodFilter::PUT,
        Method::Patch => MethodFilter::PATCH,
        Method::Delete => MethodFilter::DELETE,
        Method::Options => MethodFilter::OPTIONS,
    }
}

/// Whether a route is served without the token.
fn public(action: &RouteAction) -> bool {
    match action {
        RouteAction::Api { endpoint } => match endpoint {
            // The API's description holds no data.
            ApiEndpoint::Health | ApiEndpoint::OpenApi => true,
            // A browser's redirect from the authorization server: it cannot
            // carry the token, and the login's pending `state` is its check.
            ApiEndpoint::McpOAuthCallback => true,
            ApiEndpoint::Info
            | ApiEndpoint::Highlight
            | ApiEndpoint::CreateSession
            | ApiEndpoint::ListSessions
            | ApiEndpoint::ShowSession
            | ApiEndpoint::RenameSession
            | ApiEndpoint::DeleteSession
            | ApiEndpoint::SendMessage
            | ApiEndpoint::StreamEvents
            | ApiEndpoint::AnswerInput
            | ApiEndpoint::DecideApproval
            | ApiEndpoint::AnswerElicitation
            | ApiEndpoint::CancelTurn
            | ApiEndpoint::ResumeSession
            | ApiEndpoint::SessionArtifact
            | ApiEndpoint::SessionMedia
            | ApiEndpoint::SessionSnapshot
            | ApiEndpoint::SessionTranscript
            | ApiEndpoint::SessionCommands
            | ApiEndpoint::AttachFile
            | ApiEndpoint::SessionPreviews
            | ApiEndpoint::Agents
            | ApiEndpoint::CreateAgent
            | ApiEndpoint::ShowAgent
            | ApiEndpoint::ShowCodingAgent
            | ApiEndpoint::ReplaceAgent
            | ApiEndpoint::ReplaceCodingAgent
            | ApiEndpoint::DeleteAgent
            | ApiEndpoint::DeleteCodingAgent
            | ApiEndpoint::ReadAgentForm
            | ApiEndpoint::WriteAgentForm
            | ApiEndpoint::Skills
            | ApiEndpoint::ShowSkill
            | ApiEndpoint::CreateSkill
            | ApiEndpoint::ReplaceSkill
            | ApiEndpoint::UpdateSkillPrefs
            | ApiEndpoint::DeleteSkill
            | ApiEndpoint::SkillSettings
            | ApiEndpoint::Plugins
            | ApiEndpoint::InspectPlugin
            | ApiEndpoint::InstallPlugin
            | ApiEndpoint::UploadPlugin
            | ApiEndpoint::CreatePlugin
            | ApiEndpoint::PackPlugin
            | ApiEndpoint::PluginTree
            | ApiEndpoint::PluginFile
            | ApiEndpoint::SavePluginFile
            | ApiEndpoint::CreatePluginEntry
            | ApiEndpoint::DeletePluginEntry
            | ApiEndpoint::ShowPlugin
            | ApiEndpoint::UninstallPlugin
            | ApiEndpoint::UpdatePlugin
            | ApiEndpoint::UpdatePluginUpload
            | ApiEndpoint::SetPluginEnabled
            | ApiEndpoint::PluginCredentials
            | ApiEndpoint::SetPluginCredentials
            | ApiEndpoint::ClearPluginCredentials
            | ApiEndpoint::McpServers
            | ApiEndpoint::ShowMcpServer
            | ApiEndpoint::AddMcpServer
            | ApiEndpoint::ReplaceMcpServer
            | ApiEndpoint::RemoveMcpServer
            | ApiEndpoint::RestartMcpServer
            | ApiEndpoint::McpServerLogin
            | ApiEndpoint::Schedules
            | ApiEndpoint::ShowSchedule
            | ApiEndpoint::ScheduleHistory
            | ApiEndpoint::RunSchedule
            | ApiEndpoint::SetScheduleEnabled
            | ApiEndpoint::ShowTrust
            | ApiEndpoint::GrantTrust
            | ApiEndpoint::RevokeTrust => false,
        },
        // The page shell holds no data; what it fetches needs the token.
        RouteAction::Home | RouteAction::HomeAsset => true,
        // The server token is checked by the token layer; any other auth
        // by the route's handler.
        RouteAction::StartSession(task) => !ChannelRoute::uses_server_token(&task.auth),
    }
}

type Handler = MethodRouter<Arc<ServerState>>;

/// A skill bundle edit: 20 MiB of files, base64 and JSON around them.
const BUNDLE_BODY: usize = 32 * 1024 * 1024;
/// A package upload: the archive and the multipart framing.
const UPLOAD_BODY: usize = plugins::MAX_UPLOAD_BYTES as usize + 1024 * 1024;
/// One package file (1 MiB) as JSON, escapes included.
const FILE_BODY: usize = 8 * 1024 * 1024;
/// A request a previewed app sends through the proxy (a form, an upload).
const PREVIEW_BODY: usize = 32 * 1024 * 1024;
/// An attachment, with room to refuse one just over the limit by its size.
const ATTACHMENT_BODY: usize = evoflux_app::attachments::MAX_ATTACHMENT + 1024 * 1024;

/// Raises axum's default 2 MB request limit for the routes that take more.
fn body_limit(bytes: usize) -> axum::extract::DefaultBodyLimit {
    axum::extract::DefaultBodyLimit::max(bytes)
}

/// The handler of one route's action; `path` as the plan writes it.
fn handler(method: Method, path: &str, action: &RouteAction) -> Handler {
    let f = filter(method);
    match action {
        RouteAction::Api { endpoint } => match endpoint {
            ApiEndpoint::Health => on(f, system::health),
            ApiEndpoint::Info => on(f, system::info),
            ApiEndpoint::OpenApi => on(f, system::openapi),
            ApiEndpoint::Highlight => on(f, crate::api::highlight::highlight_block),
            ApiEndpoint::CreateSession => on(f, sessions::create),
            ApiEndpoint::ListSessions => on(f, sessions::list),
            ApiEndpoint::ShowSession => on(f, sessions::show),
            ApiEndpoint::RenameSession => on(f, sessions::rename),
            ApiEndpoint::DeleteSession => on(f, sessions::delete),
            ApiEndpoint::SendMessage => on(f, sessions::message),
            ApiEndpoint::StreamEvents => on(f, sessions::events),
            ApiEndpoint::AnswerInput => on(f, sessions::answer),
            ApiEndpoint::DecideApproval => on(f, sessions::approve),
            ApiEndpoint::AnswerElicitation => on(f, sessions::answer_elicitation),
            ApiEndpoint::CancelTurn => on(f, sessions::cancel),
            ApiEndpoint::ResumeSession => on(f, sessions::resume),
            ApiEndpoint::SessionArtifact => on(f, sessions::artifact),
            ApiEndpoint::SessionMedia => on(f, sessions::media),
            ApiEndpoint::SessionSnapshot => on(f, sessions::snapshot),
            ApiEndpoint::SessionTranscript => on(f, sessions::transcript),
            ApiEndpoint::SessionCommands => on(f, sessions::commands),
            ApiEndpoint::AttachFile => on(f, sessions::attach).layer(body_limit(ATTACHMENT_BODY)),
            ApiEndpoint::SessionPreviews => on(f, crate::preview::list),
            ApiEndpoint::Agents => on(f, crate::api::lists::agents),
            ApiEndpoint::CreateAgent => on(f, agents::create),
            ApiEndpoint::ShowAgent => on(f, agents::show_work),
            ApiEndpoint::ShowCodingAgent => on(f, agents::show_coding),
            ApiEndpoint::ReplaceAgent => on(f, agents::replace_work),
            ApiEndpoint::ReplaceCodingAgent => on(f, agents::replace_coding),
            ApiEndpoint::DeleteAgent => on(f, agents::delete_work),
            ApiEndpoint::DeleteCodingAgent => on(f, agents::delete_coding),
            ApiEndpoint::ReadAgentForm => on(f, agents::read_form_view),
            ApiEndpoint::WriteAgentForm => on(f, agents::write_form_view),
            ApiEndpoint::Skills => on(f, crate::api::lists::skills),
            ApiEndpoint::ShowSkill => on(f, skills::show),
            ApiEndpoint::CreateSkill => on(f, skills::create).layer(body_limit(BUNDLE_BODY)),
            ApiEndpoint::ReplaceSkill => on(f, skills::replace).layer(body_limit(BUNDLE_BODY)),
            ApiEndpoint::UpdateSkillPrefs => on(f, skills::update_prefs),
            ApiEndpoint::DeleteSkill => on(f, skills::delete),
            ApiEndpoint::SkillSettings => on(f, crate::api::lists::skill_settings),
            ApiEndpoint::Plugins => on(f, crate::api::lists::plugins),
            ApiEndpoint::InspectPlugin => on(f, plugins::inspect),
            ApiEndpoint::InstallPlugin => on(f, plugins::install),
            ApiEndpoint::UploadPlugin => on(f, plugins::upload).layer(body_limit(UPLOAD_BODY)),
            ApiEndpoint::CreatePlugin => on(f, plugins::create),
            ApiEndpoint::PackPlugin => on(f, plugins::pack),
            ApiEndpoint::PluginTree => on(f, plugins::tree),
            ApiEndpoint::PluginFile => on(f, plugins::file),
            ApiEndpoint::SavePluginFile => on(f, plugins::save_file).layer(body_limit(FILE_BODY)),
            ApiEndpoint::CreatePluginEntry => on(f, plugins::create_entry),
            ApiEndpoint::DeletePluginEntry => on(f, plugins::delete_entry),
            ApiEndpoint::ShowPlugin => on(f, plugins::show),
            ApiEndpoint::UninstallPlugin => on(f, plugins::uninstall),
            ApiEndpoint::UpdatePlugin => on(f, plugins::update),
            ApiEndpoint::UpdatePluginUpload => {
                on(f, plugins::update_upload).layer(body_limit(UPLOAD_BODY))
            }
            ApiEndpoint::SetPluginEnabled => on(f, plugins::set_enabled),
            ApiEndpoint::PluginCredentials => on(f, plugins::credentials),
            ApiEndpoint::SetPluginCredentials => on(f, plugins::set_credentials),
            ApiEndpoint::ClearPluginCredentials => on(f, plugins::clear_credentials),
            ApiEndpoint::McpServers => on(f, mcp::list),
            ApiEndpoint::ShowMcpServer => on(f, mcp::show),
            ApiEndpoint::AddMcpServer => on(f, mcp::add),
            ApiEndpoint::ReplaceMcpServer => on(f, mcp::replace),
            ApiEndpoint::RemoveMcpServer => on(f, mcp::remove),
            ApiEndpoint::RestartMcpServer => on(f, mcp::restart),
            ApiEndpoint::McpServerLogin => on(f, crate::api::mcp_oauth::login),
            ApiEndpoint::McpOAuthCallback => on(f, crate::api::mcp_oauth::callback),
            ApiEndpoint::Schedules => on(f, scheduler::list),
            ApiEndpoint::ShowSchedule => on(f, scheduler::show),
            ApiEndpoint::ScheduleHistory => on(f, scheduler::history),
            ApiEndpoint::RunSchedule => on(f, scheduler::run),
            ApiEndpoint::SetScheduleEnabled => on(f, scheduler::set_enabled),
            ApiEndpoint::ShowTrust => on(f, trust::show),
            ApiEndpoint::GrantTrust => on(f, trust::grant),
            ApiEndpoint::RevokeTrust => on(f, trust::revoke),
        },
        RouteAction::Home => on(f, crate::ui::page),
        RouteAction::HomeAsset => on(f, crate::ui::asset),
        RouteAction::StartSession(task) => {
            let route = Arc::new(ChannelRoute {
                route: format!("{} {path}", method.as_str()),
                task: task.as_ref().clone(),
            });
            on(
                f,
                move |State(state): State<Arc<ServerState>>,
                      Path(params): Path<BTreeMap<String, String>>,
                      RawQuery(query): RawQuery,
                      parts: axum::http::request::Parts,
                      body: Bytes| {
                    let route = Arc::clone(&route);
                    async move {
                        let view = RequestView {
                            method: &parts.method,
                            path: parts.uri.path(),
                            query: query.as_deref().unwrap_or(""),
                            params: &params,
                            body: &body,
                        };
                        route.run(state, &parts.headers, view).await
                    }
                },
            )
        }
    }
}

/// Builds the router of `plan` over `state`.
pub fn build(plan: &RoutePlan, state: Arc<ServerState>, token: Token) -> Router {
    // Methods of one path are one method router; public and protected
    // methods are kept apart so the token layer covers only the latter.
    let mut paths: BTreeMap<String, (Option<Handler>, Option<Handler>)> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut add = |path: String, is_public: bool, h: Handler| {
        if !paths.contains_key(&path) {
            order.push(path.clone());
        }
        let slot = paths.entry(path).or_insert((None, None));
        let side = if is_public { &mut slot.0 } else { &mut slot.1 };
        *side = Some(match side.take() {
            Some(existing) => existing.merge(h),
            None => h,
        });
    };
    for r in &plan.effective {
        let mut h = handler(r.method, &r.path, &r.action);
        if let Some(cors) = &r.cors {
            let cors = cors.clone();
            h = h.layer(middleware::from_fn(move |req: Request, next: Next| {
                let cors = cors.clone();
                async move { with_cors_headers(&cors, req, next).await }
            }));
        }
        add(axum_path(&r.path), public(&r.action), h);
    }
    for p in &plan.preflights {
        let cors = p.cors.clone();
        let methods: Vec<&'static str> = plan
            .effective
            .iter()
            .filter(|r| p.source_ids.contains(&r.source_id) && r.identity == p.identity)
            .map(|r| r.method.as_str())
            .collect();
        let methods = methods.join(", ");
        add(
            axum_path(&p.path),
            true,
            on(MethodFilter::OPTIONS, move |headers: HeaderMap| {
                let cors = cors.clone();
                let methods = methods.clone();
                async move { preflight(&cors, &methods, &headers) }
            }),
        );
    }
    for host in HostRoute::ALL {
        let (method, path) = host.route();
        let h: Handler = match host {
            HostRoute::Readiness => on(filter(method.unwrap_or(Method::Get)), system::readiness),
            HostRoute::ScheduleTrigger | HostRoute::FleetContinuation => any(system::reserved),
            HostRoute::ViewerFiles => on(filter(method.unwrap_or(Method::Get)), viewer::files),
            HostRoute::ViewerDocument => {
                on(filter(method.unwrap_or(Method::Get)), viewer::document)
            }
            // The root without its slash, the root, and every path below.
            HostRoute::PreviewProxy => {
                let root = axum_path(path);
                add(
                    format!("{root}/"),
                    true,
                    any(crate::preview::index).layer(body_limit(PREVIEW_BODY)),
                );
                add(
                    format!("{root}/{{*path}}"),
                    true,
                    any(crate::preview::path).layer(body_limit(PREVIEW_BODY)),
                );
                any(crate::preview::root)
            }
        };
        let is_public = match host {
            // Its key, not the token, is checked: a frame and a new tab
            // cannot send the token.
            HostRoute::Readiness | HostRoute::PreviewProxy => true,
            HostRoute::ScheduleTrigger
            | HostRoute::FleetContinuation
            | HostRoute::ViewerFiles
            | HostRoute::ViewerDocument => false,
        };
        add(axum_path(path), is_public, h);
    }
    let auth = middleware::from_fn_with_state(token, require_token);
    let mut router = Router::new();
    for path in order {
        let Some((public_h, protected_h)) = paths.remove(&path) else {
            continue;
        };
        let h = match (public_h, protected_h) {
            (Some(p), Some(q)) => p.merge(q.layer(auth.clone())),
            (Some(p), None) => p,
            (None, Some(q)) => q.layer(auth.clone()),
            (None, None) => continue,
        };
        router = router.route(&path, h);
    }
    router
        .fallback(|| async {
            ApiError::not_found(
                "server/route-not-found",
                "no such route; /openapi.json lists the API",
            )
        })
        .with_state(state)
}

/// Whether the request's origin is allowed, and the value to answer with.
fn allowed_origin(cors: &Cors, headers: &HeaderMap) -> Option<HeaderValue> {
    let origin = headers.get(header::ORIGIN)?;
    match &cors.origin {
        None | Some(CorsList::Any(_)) if !cors.credentials => Some(HeaderValue::from_static("*")),
        None | Some(CorsList::Any(_)) => Some(origin.clone()),
        Some(CorsList::List(list)) => origin
            .to_str()
            .ok()
            .filter(|o| list.iter().any(|l| l == o))
            .map(|_| origin.clone()),
    }
}

fn list_value(list: &CorsList) -> String {
    match list {
        CorsList::Any(_) => "*".to_owned(),
        CorsList::List(items) => items.join(", "),
    }
}

fn preflight(cors: &Cors, methods: &str, headers: &HeaderMap) -> Response {
    let Some(origin) = allowed_origin(cors, headers) else {
        return StatusCode::FORBIDDEN.into_response();
    };
    let mut response = StatusCode::NO_CONTENT.into_response();
    let h = response.headers_mut();
    h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    let methods = cors.methods.as_ref().map_or(methods.to_owned(), list_value);
    if let Ok(v) = HeaderValue::from_str(&methods) {
        h.insert(header::ACCESS_CONTROL_ALLOW_METHODS, v);
    }
    let allow = match &cors.allow_headers {
        Some(l) => list_value(l),
        None => headers
            .get(header::ACCESS_CONTROL_REQUEST_HEADERS)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("authorization, content-type")
            .to_owned(),
    };
    if let Ok(v) = HeaderValue::from_str(&allow) {
        h.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, v);
    }
    if cors.credentials {
        h.insert(
            header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
            HeaderValue::from_static("true"),
        );
    }
    if let Some(age) = cors.max_age {
        h.insert(header::ACCESS_CONTROL_MAX_AGE, HeaderValue::from(age));
    }
    h.insert(header::VARY, HeaderValue::from_static("origin"));
    response
}

async fn with_cors_headers(cors: &Cors, request: Request, next: Next) -> Response {
    let origin = allowed_origin(cors, request.headers());
    let mut response = next.run(request).await;
    if let Some(origin) = origin {
        let h = response.headers_mut();
        h.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        if let Some(expose) = &cors.expose_headers
            && let Ok(v) = HeaderValue::from_str(&list_value(expose))
        {
            h.insert(header::ACCESS_CONTROL_EXPOSE_HEADERS, v);
        }
        if cors.credentials {
            h.insert(
                header::ACCESS_CONTROL_ALLOW_CREDENTIALS,
                HeaderValue::from_static("true"),
            );
        }
        h.insert(header::VARY, HeaderValue::from_static("origin"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_axum_paths() {
        assert_eq!(
            axum_path("/api/sessions/:id/events"),
            "/api/sessions/{id}/events"
        );
        assert_eq!(axum_path("/"), "/");
    }
}
