//! An MCP server's form in a session the HTTP server runs: the event
//! stream announces it (`elicitation_requested`), an answer that does not
//! fit its schema is refused with `session/elicitation-invalid` while the
//! form keeps waiting, and the right answer reaches the MCP server
//! (`@modelcontextprotocol/server-everything`, named by
//! `EVOFLUX_TEST_MCP_EVERYTHING`; skipped with a note without it).

use crate::common;

use std::time::{Duration, Instant};

use serde_json::{Value, json};

async fn post(client: &reqwest::Client, url: &str, body: Value) -> (u16, Value) {
    let r = client
        .post(url)
        .bearer_auth(common::TOKEN)
        .json(&body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

/// Reads the session's event stream until an event of kind `last`.
async fn until(
    response: &mut reqwest::Response,
    text: &mut String,
    last: &str,
) -> Vec<(String, Value)> {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !text.contains(&format!("event: {last}\n")) {
        let chunk = tokio::time::timeout_at(deadline.into(), response.chunk())
            .await
            .unwrap_or_else(|_| panic!("no {last} came: {text}"))
            .unwrap()
            .expect("the stream stays open");
        text.push_str(&String::from_utf8_lossy(&chunk));
    }
    text.split("\n\n")
        .filter_map(|frame| {
            let kind = frame.lines().find_map(|l| l.strip_prefix("event:"))?;
            let data = frame.lines().find_map(|l| l.strip_prefix("data:"))?;
            Some((
                kind.trim().to_owned(),
                serde_json::from_str(data.trim()).ok()?,
            ))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_form_is_answered_over_the_api_and_a_wrong_answer_is_refused() {
    let Some(index) = std::env::var_os("EVOFLUX_TEST_MCP_EVERYTHING").filter(|p| !p.is_empty())
    else {
        eprintln!("note: EVOFLUX_TEST_MCP_EVERYTHING is not set; skipping");
        return;
    };
    let (tmp, app) = common::setup();
    let config = app.dirs.config_dir().to_path_buf();
    std::fs::create_dir_all(&config).unwrap();
    let mcp = json!({"mcpServers": {"every": {
        "command": "node",
        "args": [index.to_string_lossy(), "stdio"],
    }}});
    std::fs::write(config.join("mcp.json"), mcp.to_string()).unwrap();
    let model = evoflux_app::testing::script(
        tmp.path(),
        "turns:\n\
         \x20 - reply:\n\
         \x20     tool_calls:\n\
         \x20       - name: mcp__every__trigger-elicitation-request\n\
         \x20         arguments: {}\n\
         \x20         id: c1\n\
         \x20 - expect:\n\
         \x20     tool_result: {contains: Ada}\n\
         \x20   reply: {text: Thanks.}\n",
    );
    let server = common::start(&app, |_| {}).await;
    let client = reqwest::Client::new();
    let (status, created) = post(
        &client,
        &format!("{}/api/sessions", server.url()),
        json!({"mode": "work", "model": model, "message": "Sign me up."}),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap().to_owned();
    let mut stream = client
        .get(format!("{}/api/sessions/{id}/events?after=0", server.url()))
        .bearer_auth(common::TOKEN)
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    let events = until(&mut stream, &mut text, "elicitation_requested").await;
    let (_, asked) = events
        .iter()
        .find(|(k, _)| k == "elicitation_requested")
        .unwrap();
    assert_eq!(asked["call_id"], "c1");
    assert_eq!(asked["server"], "every");
    assert_eq!(asked["schema"]["required"], json!(["name"]));
    let form = format!(
        "{}/api/sessions/{id}/elicitations/{}",
        server.url(),
        asked["id"].as_str().unwrap()
    );

    // The name is required: refused, and the form still waits.
    let (status, refused) = post(
        &client,
        &form,
        json!({"action": "accept", "content": {"check": true}}),
    )
    .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["code"], "session/elicitation-invalid");
    let (status, unknown) = post(
        &client,
        &format!("{}/api/sessions/{id}/elicitations/nope", server.url()),
        json!({"action": "cancel"}),
    )
    .await;
    assert_eq!(status, 404, "{unknown}");
    assert_eq!(unknown["code"], "session/no-pending-elicitation");

    let (status, accepted) = post(
        &client,
        &form,
        json!({"action": "accept", "content": {"name": "Ada Lovelace", "integer": 7}}),
    )
    .await;
    assert_eq!(status, 202, "{accepted}");
    let events = until(&mut stream, &mut text, "turn_completed").await;
    let answered = events
        .iter()
        .find(|(k, _)| k == "elicitation_answered")
        .map(|(_, e)| e.clone())
        .unwrap();
    assert_eq!(answered["action"], "accept");
    assert_eq!(answered["by"], "user");
    let result = events
        .iter()
        .find(|(k, e)| k == "tool_ended" && e["call_id"] == "c1")
        .map(|(_, e)| e["content"].as_str().unwrap_or_default().to_owned())
        .unwrap();
    assert!(result.contains("Ada Lovelace"), "{result}");
    // An open event stream would hold the server's stop for its grace.
    drop(stream);
    server.stop().await;
}
