#![allow(clippy::unwrap_used, clippy::expect_used)]

//! MCP servers edited through `evoflux serve`: the write routes of
//! `/api/mcp/servers` against the user's real `mcp.json` (other servers
//! and keys kept byte for byte, `${VAR}` never resolved, other sources
//! refused with where to change them), and the same through the web UI
//! in a real browser, with the real MCP test server started, edited,
//! restarted and removed.

use crate::common;

use common::Sandbox;
use common::server::Server;
use common::webdriver::Browser;
use serde_json::{Value, json};

/// The text of the member `name` of `mcpServers` in `text` (from its key
/// to the end of its value), for byte-for-byte comparisons.
fn member_text(text: &str, name: &str) -> String {
    let key = format!("\"{name}\":");
    let start = text
        .find(&key)
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    let open = start + text[start..].find('{').unwrap();
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return text[start..open + i + 1].to_owned();
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced {name} in {text}")
}

fn item<'a>(listed: &'a Value, name: &str) -> &'a Value {
    listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["server"] == name)
        .unwrap_or_else(|| panic!("no {name} in {listed}"))
}

fn tool_names(server: &Value) -> Vec<String> {
    server["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_edits_only_the_users_mcp_json_and_keeps_everything_else() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let s = Sandbox::new();
    let bin = bin.to_str().unwrap().to_owned();
    // The user's file, laid out by hand, with a server of its own.
    let user_text = format!(
        "{{\n  \"$schema\": \"https://example.com/mcp.schema.json\",\n  \"mcpServers\": {{\n    \"keep\": {{ \"command\": {bin:?},   \"args\": [\"--filler-tools\", \"1\"],\n              \"env\": {{\"HOME_DIR\": \"${{HOME:-/tmp}}\"}} }}\n  }}\n}}\n"
    );
    let user_file = s.user("mcp.json", &user_text);
    // A repository's server: read, never written.
    s.project(
        "mcp.json",
        &json!({"mcpServers": {"repo-srv": {"type": "stdio", "command": bin}}}).to_string(),
    );
    s.trust();
    let server = Server::start_with_env(&s, &[], &[("MCP_SECRET", "s3cret-value-42")]);

    let (status, listed) = server.call("GET", "/api/mcp/servers", None).await;
    assert_eq!(status, 200, "{listed}");
    let keep = item(&listed, "keep");
    assert_eq!(keep["source"]["kind"], "user");
    assert_eq!(keep["editable"], true);
    assert_eq!(keep["entry"]["env"]["HOME_DIR"], "${HOME:-/tmp}");
    let repo = item(&listed, "repo-srv");
    assert_eq!(repo["source"]["kind"], "file");
    assert_eq!(repo["editable"], false);
    assert!(repo.get("entry").is_none(), "{repo}");

    // Add: written as given, started, ready with its tools; the secret
    // the reference names is never in an answer.
    let entry = json!({"type": "stdio", "command": bin, "env": {"TOKEN": "${MCP_SECRET}"}});
    let (status, added) = server
        .call(
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "echo", "entry": entry})),
        )
        .await;
    assert_eq!(status, 201, "{added}");
    assert_eq!(added["state"], "ready", "{added}");
    assert!(tool_names(&added).contains(&"echo".to_owned()), "{added}");
    assert_eq!(added["entry"]["env"]["TOKEN"], "${MCP_SECRET}");
    assert!(!added.to_string().contains("s3cret-value-42"));
    let on_disk = std::fs::read_to_string(&user_file).unwrap();
    assert_eq!(
        member_text(&on_disk, "keep"),
        member_text(&user_text, "keep")
    );
    assert!(on_disk.starts_with("{\n  \"$schema\": \"https://example.com/mcp.schema.json\",\n"));
    let v: Value = serde_json::from_str(&on_disk).unwrap();
    assert_eq!(v["mcpServers"]["echo"], entry);
    let (_, listed) = server.call("GET", "/api/mcp/servers", None).await;
    assert!(!listed.to_string().contains("s3cret-value-42"));

    // Refusals, each coded, nothing written.
    let before = std::fs::read_to_string(&user_file).unwrap();
    for (method, path, body, want_status, code, field) in [
        (
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "bad", "entry": {"command": "two words"}})),
            422,
            "compile/connection-invalid",
            Some("entry.command"),
        ),
        (
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "web", "entry": {"type": "streamable-http", "url": "ftp://x"}})),
            422,
            "compile/connection-invalid",
            Some("entry.url"),
        ),
        (
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "Bad_Name", "entry": {"command": "x"}})),
            422,
            "discover/connection-name-invalid",
            Some("name"),
        ),
        (
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "repo-srv", "entry": {"command": "x"}})),
            409,
            "mcp/server-exists",
            Some("name"),
        ),
        (
            "POST",
            "/api/mcp/servers",
            Some(json!({"name": "echo", "entry": {"command": "x"}})),
            409,
            "mcp/server-exists",
            Some("name"),
        ),
        (
            "PUT",
            "/api/mcp/servers/repo-srv",
            Some(json!({"entry": {"command": "x"}})),
            403,
            "mcp/server-not-editable",
            None,
        ),
        (
            "DELETE",
            "/api/mcp/servers/repo-srv",
            None,
            403,
            "mcp/server-not-editable",
            None,
        ),
        (
            "PUT",
            "/api/mcp/servers/nope",
            Some(json!({"entry": {"command": "x"}})),
            404,
            "mcp/server-not-found",
            None,
        ),
        (
            "POST",
            "/api/mcp/servers/nope/restart",
            None,
            404,
            "mcp/server-not-found",
            None,
        ),
    ] {
        let (status, body) = server.call(method, path, body).await;
        assert_eq!(
            (status, body["code"].as_str(), body["field"].as_str()),
            (want_status, Some(code), field),
            "{method} {path}: {body}"
        );
    }
    let (_, refused) = server
        .call(
            "PUT",
            "/api/mcp/servers/repo-srv",
            Some(json!({"entry": {"command": "x"}})),
        )
        .await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains(".evoflux/mcp.json"),
        "{refused}"
    );
    assert_eq!(std::fs::read_to_string(&user_file).unwrap(), before);

    // Replace: restarted with the new arguments; `keep` untouched.
    let (status, replaced) = server
        .call(
            "PUT",
            "/api/mcp/servers/echo",
            Some(json!({"entry": {"command": bin, "args": ["--filler-tools", "2"]}})),
        )
        .await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(replaced["state"], "ready", "{replaced}");
    assert!(tool_names(&replaced).contains(&"filler_1".to_owned()));
    let on_disk = std::fs::read_to_string(&user_file).unwrap();
    assert_eq!(
        member_text(&on_disk, "keep"),
        member_text(&user_text, "keep")
    );
    // Restart: any server, by name.
    let (status, restarted) = server
        .call("POST", "/api/mcp/servers/keep/restart", None)
        .await;
    assert_eq!((status, &restarted["state"]), (200, &json!("ready")));
    assert_eq!(std::fs::read_to_string(&user_file).unwrap(), on_disk);
    // Remove: stopped and gone; the file is the original again.
    let (status, _) = server.call("DELETE", "/api/mcp/servers/echo", None).await;
    assert_eq!(status, 204);
    assert_eq!(std::fs::read_to_string(&user_file).unwrap(), user_text);
    let (status, gone) = server.call("GET", "/api/mcp/servers/echo", None).await;
    assert_eq!(
        (status, gone["code"].as_str()),
        (404, Some("mcp/server-not-found"))
    );
}

/// The row of the server `echo`.
const ROW: &str = "document.querySelector('tr[data-server=echo]')";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_is_added_edited_restarted_and_removed_in_the_settings() {
    let Some(bin) = common::mcp_test_server() else {
        return;
    };
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let user_file = s.config().join("mcp.json");
    let server = Server::start_with_env(&s, &[], &[("MCP_SECRET", "s3cret-value-42")]);
    browser.open_ui(&server, "settings/mcp").await;
    browser
        .wait("document.body.innerText.includes('No MCP servers')")
        .await;

    // Add, first with a command the validator refuses: the error is shown
    // under the command field and nothing is written.
    browser.click_text("Add server").await;
    browser
        .wait("document.querySelector('input[data-field=name]')")
        .await;
    browser.type_into("input[data-field=name]", "echo").await;
    browser
        .type_into("input[data-field=command]", "two words")
        .await;
    browser
        .type_into("textarea[data-field=env]", "TOKEN=${MCP_SECRET}")
        .await;
    browser.click_text("Save server").await;
    browser
        .wait("document.querySelector('#mcp-err-command').innerText.includes('compile/connection-invalid')")
        .await;
    assert!(!user_file.exists());
    let violations = browser.axe_violations().await;
    assert_eq!(violations, json!([]), "axe-core on the MCP editor");
    browser.clear("input[data-field=command]").await;
    browser
        .type_into("input[data-field=command]", bin.to_str().unwrap())
        .await;
    browser.click_text("Save server").await;
    browser
        .wait(&format!(
            "{ROW}?.innerText.includes('ready') && {ROW}.innerText.includes('echo')"
        ))
        .await;
    let row = browser
        .js(
            "return document.querySelector('tr[data-server=echo]').innerText",
            json!([]),
        )
        .await;
    assert!(row.as_str().unwrap().contains("your mcp.json"), "{row}");
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
    assert_eq!(
        on_disk,
        json!({"mcpServers": {"echo": {"type": "stdio", "command": bin, "env": {"TOKEN": "${MCP_SECRET}"}}}})
    );
    browser.screenshot("mcp-added").await;

    // Edit: the reference is shown as written, never its value.
    browser.click("button[aria-label='Edit echo']").await;
    browser
        .wait("document.querySelector('textarea[data-field=env]')")
        .await;
    let env_shown = browser
        .js(
            "return document.querySelector('textarea[data-field=env]').value",
            json!([]),
        )
        .await;
    assert_eq!(env_shown, "TOKEN=${MCP_SECRET}");
    let leaked = browser
        .js(
            "return document.documentElement.outerHTML.includes(arguments[0])",
            json!(["s3cret-value-42"]),
        )
        .await;
    assert_eq!(leaked, false);
    browser
        .type_into("textarea[data-field=args]", "--filler-tools\n2")
        .await;
    browser.click_text("Save server").await;
    browser
        .wait(&format!("{ROW}?.innerText.includes('filler_1')"))
        .await;
    let text = std::fs::read_to_string(&user_file).unwrap();
    let on_disk: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        on_disk["mcpServers"]["echo"]["args"],
        json!(["--filler-tools", "2"])
    );
    assert_eq!(
        on_disk["mcpServers"]["echo"]["env"]["TOKEN"],
        "${MCP_SECRET}"
    );

    // Restart: the server comes back ready; the file is not touched.
    browser.click("button[aria-label='Restart echo']").await;
    browser
        .wait("document.body.innerText.includes('Restarted echo: ready')")
        .await;
    assert_eq!(std::fs::read_to_string(&user_file).unwrap(), text);
    let violations = browser.axe_violations().await;
    assert_eq!(violations, json!([]), "axe-core on the MCP servers");

    // Remove, confirmed.
    browser.click("button[aria-label='Remove echo']").await;
    browser.wait("document.querySelector('dialog[open]')").await;
    browser.click("dialog[open] button[data-value='go']").await;
    browser
        .wait(&format!(
            "!{ROW} && document.body.innerText.includes('No MCP servers')"
        ))
        .await;
    let on_disk: Value =
        serde_json::from_str(&std::fs::read_to_string(&user_file).unwrap()).unwrap();
    assert_eq!(on_disk, json!({"mcpServers": {}}));
    let (_, listed) = server.call("GET", "/api/mcp/servers", None).await;
    assert_eq!(listed["items"], json!([]));
    browser.screenshot("mcp-removed").await;
}
