#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The repository trust prompt of `evoflux serve` (`/api/trust` and the
//! web UI's prompt), round-tripping through the real trust file that
//! `evoflux trust` reads and writes: what a served repository's trust
//! grants is listed as the CLI lists it, Trust records exactly that, a
//! repository that changed since its review was shown is refused with
//! `trust/review-stale`, and a trusted repository that changed shows what
//! is new.

use std::path::{Path, PathBuf};

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use evoflux_core::trust::{TrustList, TrustState};
use serde_json::{Value, json};

const DEPLOY: &str = "description = \"Deploy.\"\nargv = [\"./deploy.sh\", \"--prod\"]\nenv = [\"DEPLOY_TARGET\"]\ninput_schema = { type = \"object\" }\n";
const RELEASE: &str =
    "description = \"Release.\"\nargv = [\"./release.sh\"]\ninput_schema = { type = \"object\" }\n";

/// A repository with a command tool and an MCP server (Claude Code's
/// `.mcp.json`).
fn repository_with_a_tool_and_a_server(s: &Sandbox) {
    s.project("tools/deploy.toml", DEPLOY);
    s.write(
        s.repo().join(".mcp.json"),
        &json!({"mcpServers": {"db": {"command": "db-server", "args": ["--read-only"]}}})
            .to_string(),
    );
}

fn repo(s: &Sandbox) -> PathBuf {
    s.repo().canonicalize().unwrap()
}

/// The trust list on disk, where `evoflux trust` keeps it.
fn trust_file(s: &Sandbox) -> TrustList {
    let path = TrustList::path_in(evoflux_app::testing::dirs(s.tmp.path()).data_dir());
    TrustList::load(&path).unwrap()
}

fn granted_slots(s: &Sandbox, repo: &Path) -> Vec<String> {
    let list = trust_file(s);
    let mut slots: Vec<String> = list
        .granted(repo)
        .unwrap_or_default()
        .iter()
        .map(|g| g.slot.clone())
        .collect();
    slots.sort();
    slots
}

fn trust_path(repo: &Path) -> String {
    format!("/api/trust?path={}", url_escape(repo.to_str().unwrap()))
}

fn url_escape(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The item of `slot` in a shown review, with its group.
fn item(shown: &Value, slot: &str) -> (String, Value) {
    for g in shown["groups"].as_array().unwrap() {
        for i in g["items"].as_array().unwrap() {
            if i["slot"] == slot {
                return (g["group"].as_str().unwrap().to_owned(), i.clone());
            }
        }
    }
    panic!("{slot} not in {shown:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_api_lists_grants_refuses_a_stale_review_and_revokes() {
    let s = Sandbox::new();
    repository_with_a_tool_and_a_server(&s);
    let repo = repo(&s);
    let server = Server::start(&s, &[]);

    // What trusting grants, grouped, each line as `evoflux trust` words it.
    let (status, shown) = server.call("GET", &trust_path(&repo), None).await;
    assert_eq!(status, 200, "{shown}");
    assert_eq!(shown["repository"], repo.to_str().unwrap());
    assert_eq!(shown["trust"]["state"], "untrusted");
    assert_eq!(shown["grants_anything_new"], true);
    assert_eq!(shown["changed_since_trust"], false);
    let (group, deploy) = item(&shown, "tools/deploy");
    assert_eq!(group, "command-tools");
    assert_eq!(
        deploy["text"],
        "run the command tool `deploy`: ./deploy.sh --prod (given DEPLOY_TARGET)"
    );
    assert_eq!(deploy["source"], ".evoflux/tools/deploy.toml");
    assert_eq!(deploy["status"], "added");
    let (group, db) = item(&shown, "connections/db");
    assert_eq!(group, "mcp-servers");
    assert_eq!(
        db["text"],
        "start the MCP server `db` (stdio): db-server --read-only"
    );
    assert_eq!(db["source"], ".mcp.json#db");
    // The same lines `evoflux trust` prints.
    let cli = String::from_utf8(s.run(&["trust"]).stdout).unwrap();
    for text in [&deploy["text"], &db["text"]] {
        assert!(cli.contains(text.as_str().unwrap()), "{text} not in {cli}");
    }

    // Only what the server serves.
    let elsewhere = s.tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let (status, err) = server.call("GET", &trust_path(&elsewhere), None).await;
    assert_eq!(
        (status, err["code"].as_str(), err["field"].as_str()),
        (403, Some("server/workspace-not-served"), Some("path")),
        "{err}"
    );
    let (status, err) = server
        .call("GET", &trust_path(&repo.join("no-such-dir")), None)
        .await;
    assert_eq!(
        (status, err["code"].as_str()),
        (422, Some("server/workspace-invalid")),
        "{err}"
    );
    let (status, err) = server
        .call("GET", &trust_path(&repo.join(".mcp.json")), None)
        .await;
    assert_eq!(
        (status, err["code"].as_str()),
        (422, Some("trust/not-a-directory")),
        "{err}"
    );
    let (status, err) = server.call("GET", "/api/trust", None).await;
    assert_eq!(
        (status, err["code"].as_str()),
        (400, Some("trust/query-invalid"))
    );
    let (status, err) = server
        .call("POST", "/api/trust", Some(json!({"path": repo})))
        .await;
    assert_eq!(
        (status, err["code"].as_str()),
        (422, Some("server/body-invalid"))
    );
    let (status, err) = server
        .call(
            "POST",
            "/api/trust",
            Some(json!({"path": elsewhere, "review": shown["review"]})),
        )
        .await;
    assert_eq!(
        (status, err["code"].as_str()),
        (403, Some("server/workspace-not-served"))
    );

    // The repository changes after its review was shown: refused, nothing
    // written.
    s.project("tools/deploy.toml", &DEPLOY.replace("--prod", "--staging"));
    let (status, err) = server
        .call(
            "POST",
            "/api/trust",
            Some(json!({"path": repo, "review": shown["review"]})),
        )
        .await;
    assert_eq!(
        (status, err["code"].as_str(), err["field"].as_str()),
        (409, Some("trust/review-stale"), Some("review")),
        "{err}"
    );
    assert_eq!(trust_file(&s).state(&repo), TrustState::Untrusted);

    // The review as it is now is granted: written to the trust file the
    // CLI reads.
    let (_, shown) = server.call("GET", &trust_path(&repo), None).await;
    assert!(
        item(&shown, "tools/deploy").1["text"]
            .as_str()
            .unwrap()
            .contains("--staging")
    );
    let (status, now) = server
        .call(
            "POST",
            "/api/trust",
            Some(json!({"path": repo, "review": shown["review"]})),
        )
        .await;
    assert_eq!(status, 200, "{now}");
    assert_eq!(now["trust"]["state"], "trusted");
    assert_eq!(now["grants_anything_new"], false);
    assert_eq!(trust_file(&s).state(&repo), TrustState::Trusted);
    assert_eq!(granted_slots(&s, &repo), ["connections/db", "tools/deploy"]);
    let listed = s.json(&["--json", "trust", "--list"]);
    assert_eq!(listed[0]["path"], repo.to_str().unwrap());
    assert_eq!(listed[0]["trust"]["state"], "trusted");
    assert_eq!(listed[0]["changed"], Value::Null);

    // A source added since: changed since trust, the new one marked, and
    // the review granted before no longer grants.
    s.project("tools/release.toml", RELEASE);
    let (_, changed) = server.call("GET", &trust_path(&repo), None).await;
    assert_eq!(changed["trust"]["state"], "trusted");
    assert_eq!(changed["changed_since_trust"], true);
    assert_eq!(changed["grants_anything_new"], true);
    assert_eq!(item(&changed, "tools/release").1["status"], "added");
    assert_eq!(item(&changed, "tools/deploy").1["status"], "granted");
    let (status, err) = server
        .call(
            "POST",
            "/api/trust",
            Some(json!({"path": repo, "review": shown["review"]})),
        )
        .await;
    assert_eq!(
        (status, err["code"].as_str()),
        (409, Some("trust/review-stale"))
    );
    assert_eq!(granted_slots(&s, &repo), ["connections/db", "tools/deploy"]);

    // Revoked as `evoflux trust --revoke` does.
    let (status, now) = server.call("DELETE", &trust_path(&repo), None).await;
    assert_eq!(status, 200, "{now}");
    assert_eq!(now["trust"]["state"], "untrusted");
    assert_eq!(trust_file(&s).state(&repo), TrustState::Untrusted);
    assert_eq!(s.json(&["--json", "trust", "--list"]), json!([]));
}

async fn text_of(browser: &Browser, css: &str) -> String {
    browser
        .wait(&format!("document.querySelector({css:?})?.innerText"))
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_prompt_lists_what_trust_grants_records_it_and_shows_what_changed() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    repository_with_a_tool_and_a_server(&s);
    let repo = repo(&s);
    let server = Server::start(&s, &[]);

    // A Coding session being started in the untrusted repository: the
    // prompt lists the command tool and the MCP server.
    browser.open_ui(&server, "chat").await;
    browser.click("button[data-mode=coding]").await;
    let prompt = text_of(&browser, "form .trust-prompt").await;
    for shown in [
        "is not trusted",
        "Command tools",
        "run the command tool `deploy`: ./deploy.sh --prod (given DEPLOY_TARGET)",
        ".evoflux/tools/deploy.toml",
        "MCP servers",
        "start the MCP server `db` (stdio): db-server --read-only",
        ".mcp.json#db",
    ] {
        assert!(
            prompt.contains(shown),
            "{shown} not in the prompt:\n{prompt}"
        );
    }
    browser.screenshot("trust-prompt-new-session").await;
    assert_eq!(
        browser.axe_violations().await,
        json!([]),
        "axe-core on the prompt"
    );
    // "Not now" dismisses it; the repository stays untrusted.
    browser.click_text("Not now").await;
    browser
        .wait("!document.querySelector('form .trust-prompt')")
        .await;
    assert_eq!(trust_file(&s).state(&repo), TrustState::Untrusted);

    // A session open in it asks too; Trust writes the real trust file.
    let model = script(&s, "idle.yaml", "turns: []\n");
    let (status, created) = server
        .call(
            "POST",
            "/api/sessions",
            Some(json!({"mode": "coding", "model": model})),
        )
        .await;
    assert_eq!(status, 201, "{created}");
    let id = created["session_id"].as_str().unwrap();
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    let prompt = text_of(&browser, "main > .trust-prompt").await;
    assert!(prompt.contains("run the command tool `deploy`"), "{prompt}");
    assert!(prompt.contains("start the MCP server `db`"), "{prompt}");
    assert_eq!(
        browser.axe_violations().await,
        json!([]),
        "axe-core on a session with the prompt"
    );
    browser.click_text("Trust this repository").await;
    browser
        .wait("document.querySelector('main > .trust-prompt [role=status]')?.innerText.includes('Trusted')")
        .await;
    assert_eq!(trust_file(&s).state(&repo), TrustState::Trusted);
    assert_eq!(granted_slots(&s, &repo), ["connections/db", "tools/deploy"]);
    let listed = s.json(&["--json", "trust", "--list"]);
    assert_eq!(listed[0]["trust"]["state"], "trusted");
    // Trusted: nothing to ask any more.
    browser.refresh().await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let asked = browser
        .js(
            "return !!document.querySelector('.trust-prompt')",
            json!([]),
        )
        .await;
    assert_eq!(asked, false);

    // Changed since trust: Settings lists it so, and its prompt says what
    // is new.
    s.project("tools/release.toml", RELEASE);
    browser
        .goto(&format!("{}/#/settings/repositories", server.url))
        .await;
    let row = text_of(&browser, "table.trust-list tbody tr").await;
    assert!(row.contains("trusted; changed since"), "{row}");
    browser.click_text("Review and trust").await;
    let prompt = text_of(&browser, ".trust-prompt").await;
    assert!(prompt.contains("changed since you trusted it"), "{prompt}");
    let new_items = browser
        .js(
            "return [...document.querySelectorAll('.trust-prompt li[data-status=added]')].map(l => l.dataset.slot)",
            json!([]),
        )
        .await;
    assert_eq!(new_items, json!(["tools/release"]));
    assert!(
        prompt.contains("new since you trusted it run the command tool `release`"),
        "{prompt}"
    );
    browser.screenshot("trust-prompt-changed").await;
    assert_eq!(
        browser.axe_violations().await,
        json!([]),
        "axe-core on Settings › Repositories"
    );

    // It changes again while the prompt is shown: Trust is refused with
    // the code, nothing is written, and what it grants now is shown.
    s.project("tools/rollback.toml", RELEASE);
    browser.click_text("Trust this repository").await;
    let prompt = browser
        .wait("document.querySelector('.trust-prompt [role=alert]')?.innerText.includes('trust/review-stale') && document.querySelector('.trust-prompt').innerText")
        .await;
    assert!(prompt.as_str().unwrap().contains("`rollback`"), "{prompt}");
    assert_eq!(granted_slots(&s, &repo), ["connections/db", "tools/deploy"]);
    // Trusting what is shown now records it.
    browser.click_text("Trust this repository").await;
    browser
        .wait("document.querySelector('table.trust-list tbody tr')?.innerText.includes('trusted') && !document.querySelector('table.trust-list tbody tr').innerText.includes('changed since')")
        .await;
    assert_eq!(
        granted_slots(&s, &repo),
        [
            "connections/db",
            "tools/deploy",
            "tools/release",
            "tools/rollback"
        ]
    );
    // Revoke from the same list.
    browser.click_text("Revoke trust").await;
    browser
        .wait(
            "document.querySelector('table.trust-list tbody tr')?.innerText.includes('untrusted')",
        )
        .await;
    assert_eq!(trust_file(&s).state(&repo), TrustState::Untrusted);
}
