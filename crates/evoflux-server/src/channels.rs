//! User channel routes (`channels/<path>.toml`): each request is checked
//! against the route's auth, rendered into a task by the route's prompt
//! template, and given to a session — a new one, or the one an earlier
//! request with the same `session` key opened — through the same live
//! sessions the API drives. The caller gets the session id at once, or the
//! turn's answer when the route answers synchronously.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, Method as HttpMethod, StatusCode, header};
use axum::response::{IntoResponse, Response};
use evoflux_app::SessionOptions;
use evoflux_core::AppMode;
use evoflux_core::ids::SessionId;
use evoflux_graph::channel::{Answer, ChannelAuth, ChannelTask, Template, TemplatePart};
use evoflux_harness::EventKind;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::live::LiveSession;
use crate::state::ServerState;

/// One user channel route, as the router mounts it.
#[derive(Debug, Clone)]
pub struct ChannelRoute {
    /// `<METHOD> <path>` as the route plan writes it: the key its session
    /// threads are kept under.
    pub route: String,
    pub task: ChannelTask,
}

/// What a template is rendered over.
pub struct RequestView<'a> {
    pub method: &'a HttpMethod,
    pub path: &'a str,
    pub query: &'a str,
    pub params: &'a BTreeMap<String, String>,
    pub body: &'a [u8],
}

impl ChannelRoute {
    /// Whether the server's token guards the route (the router's token
    /// layer); every other auth is checked here.
    pub fn uses_server_token(auth: &ChannelAuth) -> bool {
        match auth {
            ChannelAuth::ServerToken => true,
            ChannelAuth::None | ChannelAuth::Bearer { .. } | ChannelAuth::HmacSha256 { .. } => {
                false
            }
        }
    }

    pub async fn run(
        &self,
        state: Arc<ServerState>,
        headers: &HeaderMap,
        request: RequestView<'_>,
    ) -> Response {
        match self.serve(&state, headers, &request).await {
            Ok(r) => r,
            Err(e) => e.into_response(),
        }
    }

    async fn serve(
        &self,
        state: &Arc<ServerState>,
        headers: &HeaderMap,
        request: &RequestView<'_>,
    ) -> Result<Response, ApiError> {
        authorize(&self.task.auth, headers, request.body, &state.environment)?;
        let prompt = render(&self.task.prompt, request)?;
        let thread = match &self.task.session {
            Some(t) => Some(render(t, request)?),
            None => None,
        };
        let thread = thread.filter(|t| !t.trim().is_empty());
        let (live, id) = self.session_for(state, thread.as_deref()).await?;
        let after = state.sessions.last_event(live.id).await?;
        live.start_turn(Some(prompt)).await?;
        let accepted = |id: &str| {
            (
                StatusCode::ACCEPTED,
                axum::Json(json!({
                    "session_id": id,
                    "events": format!("/api/sessions/{id}/events"),
                })),
            )
                .into_response()
        };
        match self.task.answer {
            Answer::Session => Ok(accepted(&id)),
            Answer::Sync { wait_secs } => {
                match turn_end(state, live.id, after, Duration::from_secs(wait_secs)).await {
                    Some(end) => Ok((end.status(), axum::Json(end.body(&id))).into_response()),
                    None => Ok(accepted(&id)),
                }
            }
        }
    }

    /// The session a request goes to: the thread's when it has one (its
    /// session resumed if the server forgot it), else a new one, recorded
    /// for the thread.
    async fn session_for(
        &self,
        state: &Arc<ServerState>,
        thread: Option<&str>,
    ) -> Result<(Arc<LiveSession>, String), ApiError> {
        if let Some(thread) = thread
            && let Some(id) = state.store.channel_thread(&self.route, thread).await?
        {
            let live = state.sessions.live_or_resume(id).await?;
            return Ok((live, id.to_string()));
        }
        let opened = state
            .sessions
            .open(SessionOptions {
                mode: Some(self.task.mode),
                workspaces: match self.task.mode {
                    AppMode::Coding => state.workspaces.iter().take(1).cloned().collect(),
                    AppMode::Work => Vec::new(),
                },
                lead: Some(self.task.agent.clone()),
                model: None,
                resume: None,
                limits: Default::default(),
            })
            .await?;
        let Some(thread) = thread else {
            return Ok((opened.live, opened.session.id.to_string()));
        };
        let id = state
            .store
            .claim_channel_thread(&self.route, thread, opened.session.id)
            .await?;
        if id == opened.session.id {
            return Ok((opened.live, id.to_string()));
        }
        // Another request opened the thread's session meanwhile: use it,
        // and drop the one opened here, which never ran a turn.
        state.sessions.stop(opened.session.id).await;
        let _ = state.store.delete_session(opened.session.id).await;
        Ok((state.sessions.live_or_resume(id).await?, id.to_string()))
    }
}

/// How a turn ended, for a synchronous answer.
enum TurnEnd {
    Completed(Value),
    Failed { code: String, message: String },
    Cancelled,
}

impl TurnEnd {
    fn status(&self) -> StatusCode {
        match self {
            TurnEnd::Completed(_) => StatusCode::OK,
            TurnEnd::Failed { .. } => StatusCode::BAD_GATEWAY,
            TurnEnd::Cancelled => StatusCode::CONFLICT,
        }
    }

    fn body(&self, id: &str) -> Value {
        match self {
            TurnEnd::Completed(event) => json!({
                "session_id": id,
                "status": event.get("status").cloned().unwrap_or(Value::Null),
                "text": event.get("text").cloned().unwrap_or(Value::Null),
                "output": event.get("output").cloned().unwrap_or(Value::Null),
            }),
            TurnEnd::Failed { code, message } => json!({
                "session_id": id,
                "code": code,
                "message": message,
            }),
            TurnEnd::Cancelled => json!({
                "session_id": id,
                "code": "session/turn-cancelled",
                "message": "the turn was cancelled before it answered",
            }),
        }
    }
}

/// Waits for the end of the turn whose events follow `after`: at most
/// `wait`, `None` past it.
async fn turn_end(
    state: &ServerState,
    session: SessionId,
    after: u64,
    wait: Duration,
) -> Option<TurnEnd> {
    let events = crate::events::follow(
        state.store.clone(),
        Arc::clone(state.sessions.bus()),
        session,
        after,
    );
    tokio::time::timeout(wait, async {
        futures_util::pin_mut!(events);
        // A failed turn's `error` comes just before its `turn_failed`.
        let mut error: Option<Value> = None;
        while let Some(e) = futures_util::StreamExt::next(&mut events).await {
            let value = || serde_json::from_str::<Value>(&e.data).unwrap_or(Value::Null);
            let text =
                |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
            match EventKind::parse(&e.kind) {
                Some(EventKind::Error) => error = Some(value()),
                Some(EventKind::TurnCompleted) => return Some(TurnEnd::Completed(value())),
                Some(EventKind::TurnFailed) => {
                    let failed = value();
                    let message = error
                        .as_ref()
                        .map(|v| text(v, "message"))
                        .unwrap_or_default();
                    return Some(TurnEnd::Failed {
                        code: text(&failed, "code"),
                        message,
                    });
                }
                Some(EventKind::TurnCancelled) => return Some(TurnEnd::Cancelled),
                Some(_) => {}
                // The server's notice that the session was stopped.
                None if e.kind == crate::live::SESSION_STOPPED => {
                    return Some(TurnEnd::Cancelled);
                }
                None => {}
            }
        }
        Some(TurnEnd::Cancelled)
    })
    .await
    .ok()
    .flatten()
}

fn unauthorized(code: &str, message: &str) -> ApiError {
    ApiError::new(StatusCode::UNAUTHORIZED, code, message)
}

/// Checks a request against the route's auth (the server token is checked
/// by the router's layer before the handler runs).
fn authorize(
    auth: &ChannelAuth,
    headers: &HeaderMap,
    body: &[u8],
    environment: &BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let secret = |name: &str| {
        environment
            .get(name)
            .filter(|v| !v.is_empty())
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "channel/secret-unset",
                    format!(
                        "this route checks requests against ${name}, which is not set where \
                         `evoflux serve` runs; set it and restart the server"
                    ),
                )
            })
    };
    match auth {
        ChannelAuth::ServerToken | ChannelAuth::None => Ok(()),
        ChannelAuth::Bearer { token_env } => {
            let expected = secret(token_env)?;
            let presented = headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .ok_or_else(|| {
                    unauthorized(
                        "channel/token-missing",
                        "send `Authorization: Bearer <token>`",
                    )
                })?;
            match crate::auth::same_secret(expected.as_bytes(), presented.trim().as_bytes()) {
                true => Ok(()),
                false => Err(unauthorized(
                    "channel/token-invalid",
                    "the bearer token is not this route's",
                )),
            }
        }
        ChannelAuth::HmacSha256 {
            secret_env,
            header: name,
            prefix,
        } => {
            let key = secret(secret_env)?;
            let presented = headers
                .get(name.as_str())
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    unauthorized(
                        "channel/signature-missing",
                        &format!("send the body's HMAC-SHA256 signature in `{name}`"),
                    )
                })?;
            let signature = presented
                .trim()
                .strip_prefix(prefix.as_str())
                .and_then(|hex_sig| hex::decode(hex_sig).ok())
                .ok_or_else(|| {
                    unauthorized(
                        "channel/signature-invalid",
                        &format!("`{name}` must be `{prefix}` and the signature in hex"),
                    )
                })?;
            let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, key.as_bytes());
            ring::hmac::verify(&key, body, &signature).map_err(|_| {
                unauthorized(
                    "channel/signature-invalid",
                    "the signature does not match the body under this route's secret",
                )
            })
        }
    }
}

/// Renders a template over the request. A field of the body that is not
/// there, or a body that is not JSON when a field is asked for, is the
/// caller's mistake (400), named.
pub fn render(template: &Template, request: &RequestView<'_>) -> Result<String, ApiError> {
    let text = || String::from_utf8_lossy(request.body);
    let mut json: Option<Value> = None;
    let mut out = String::new();
    for part in template.parts() {
        match part {
            TemplatePart::Text(t) => out.push_str(t),
            TemplatePart::Body => out.push_str(&text()),
            TemplatePart::Method => out.push_str(request.method.as_str()),
            TemplatePart::Path => out.push_str(request.path),
            TemplatePart::Query => out.push_str(request.query),
            TemplatePart::Param(name) => {
                out.push_str(request.params.get(name).map_or("", String::as_str));
            }
            TemplatePart::BodyField(keys) => {
                if json.is_none() {
                    json = Some(serde_json::from_slice(request.body).map_err(|e| {
                        ApiError::bad_request(
                            "channel/body-not-json",
                            format!("this route reads fields of a JSON body: {e}"),
                        )
                    })?);
                }
                let mut at = json.as_ref().unwrap_or(&Value::Null);
                for key in keys {
                    let next = match at {
                        Value::Object(map) => map.get(key),
                        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
                        _ => None,
                    };
                    at = next.ok_or_else(|| {
                        ApiError::bad_request(
                            "channel/body-field-missing",
                            format!("the body has no `{}`", keys.join(".")),
                        )
                    })?;
                }
                match at {
                    Value::String(s) => out.push_str(s),
                    other => out.push_str(&other.to_string()),
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view<'a>(
        params: &'a BTreeMap<String, String>,
        body: &'a [u8],
        method: &'a HttpMethod,
    ) -> RequestView<'a> {
        RequestView {
            method,
            path: "/hooks/evoflux",
            query: "a=1",
            params,
            body,
        }
    }

    #[test]
    fn templates_render_body_fields_params_and_the_request() {
        let params = BTreeMap::from([("repo".to_owned(), "evoflux".to_owned())]);
        let t = Template::parse(
            "{{method}} {{path}}?{{query}} {{param.repo}}: {{body.issue.title}} #{{body.issue.number}} {{body.labels.0}}",
            &["repo"],
        )
        .unwrap();
        let body = br#"{"issue": {"title": "Crash", "number": 7}, "labels": ["bug"]}"#;
        let got = render(&t, &view(&params, body, &HttpMethod::POST)).unwrap();
        assert_eq!(got, "POST /hooks/evoflux?a=1 evoflux: Crash #7 bug");
        let t = Template::parse("{{body.nope}}", &[]).unwrap();
        let e = render(&t, &view(&params, body, &HttpMethod::POST)).unwrap_err();
        assert_eq!(e.code, "channel/body-field-missing");
        let e = render(&t, &view(&params, b"plain", &HttpMethod::POST)).unwrap_err();
        assert_eq!(e.code, "channel/body-not-json");
        let t = Template::parse("raw: {{body}}", &[]).unwrap();
        assert_eq!(
            render(&t, &view(&params, b"plain", &HttpMethod::POST)).unwrap(),
            "raw: plain"
        );
    }

    #[test]
    fn signatures_and_bearer_tokens_are_checked() {
        let env = BTreeMap::from([("S".to_owned(), "secret".to_owned())]);
        let hmac = ChannelAuth::HmacSha256 {
            secret_env: "S".into(),
            header: "X-Sig".into(),
            prefix: "sha256=".into(),
        };
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, b"secret");
        let sig = hex::encode(ring::hmac::sign(&key, b"body").as_ref());
        let mut h = HeaderMap::new();
        h.insert("x-sig", format!("sha256={sig}").parse().unwrap());
        assert!(authorize(&hmac, &h, b"body", &env).is_ok());
        let code = |r: Result<(), ApiError>| r.unwrap_err().code;
        assert_eq!(
            code(authorize(&hmac, &h, b"other", &env)),
            "channel/signature-invalid"
        );
        assert_eq!(
            code(authorize(&hmac, &HeaderMap::new(), b"body", &env)),
            "channel/signature-missing"
        );
        assert_eq!(
            code(authorize(&hmac, &h, b"body", &BTreeMap::new())),
            "channel/secret-unset"
        );
        let bearer = ChannelAuth::Bearer {
            token_env: "S".into(),
        };
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, "Bearer secret".parse().unwrap());
        assert!(authorize(&bearer, &h, b"", &env).is_ok());
        h.insert(header::AUTHORIZATION, "Bearer guess".parse().unwrap());
        assert_eq!(
            code(authorize(&bearer, &h, b"", &env)),
            "channel/token-invalid"
        );
        assert_eq!(
            code(authorize(&bearer, &HeaderMap::new(), b"", &env)),
            "channel/token-missing"
        );
        assert!(authorize(&ChannelAuth::None, &HeaderMap::new(), b"", &env).is_ok());
    }
}
