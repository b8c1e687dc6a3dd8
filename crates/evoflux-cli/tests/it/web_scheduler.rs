#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The Scheduler: `PATCH /api/scheduler/{name}` and `evoflux schedule
//! enable|disable` edit `enabled` in the schedule's file and nothing else;
//! the web UI's Scheduler view (Plugins beneath it in the menu) lists
//! schedules from real files, disables one on disk, runs one now with its
//! session linked, and passes axe-core — in Debian's chromium over
//! WebDriver against the real `evoflux serve`.

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script};
use serde_json::{Value, json};

/// Whether the menu's Plugins entry is nested in the Scheduler entry.
const PLUGINS_BENEATH_SCHEDULER: &str = "document.querySelector('.nav > li > a[data-nav=scheduler]')?.parentElement.querySelector(':scope > ul a[data-nav=plugins]')?.getAttribute('href') === '#/plugins'";

const REPORT: &str = "# My hourly report: this comment stays.\n\
                      every = \"1h\"   # hourly\n\
                      prompt = \"Write the report\"\n\
                      model = \"MODEL\"\n\
                      enabled = true # on for now\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_and_the_cli_switch_a_schedule_in_its_file_and_nothing_else() {
    let s = Sandbox::new();
    let file = s.user(
        "schedules/report.toml",
        &REPORT.replace("MODEL", "openai:gpt-4o"),
    );
    let json_file = s.user(
        "schedules/digest.json",
        "{\n  \"every\": \"1d\",\n  \"prompt\": \"Write the digest\"\n}\n",
    );
    // The administrator's schedules are not the user's to edit.
    common::write(
        &evoflux_app::testing::admin(s.tmp.path()).join("schedules/policy.toml"),
        "every = \"1d\"\nprompt = \"Check the policy\"\n",
    );
    let server = Server::start(&s, &[]);
    let (status, list) = server.call("GET", "/api/scheduler", None).await;
    assert_eq!(status, 200, "{list}");
    let item = |list: &Value, name: &str| -> Value {
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {list}"))
    };
    assert_eq!(item(&list, "report")["editable"], true);
    assert_eq!(item(&list, "digest")["editable"], true);
    assert_eq!(item(&list, "policy")["editable"], false);
    assert_eq!(
        list["folder"],
        s.config().join("schedules").to_str().unwrap()
    );

    let (status, changed) = server
        .call(
            "PATCH",
            "/api/scheduler/report",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(changed["changed"], true);
    assert_eq!(changed["schedule"]["enabled"], false);
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        REPORT
            .replace("MODEL", "openai:gpt-4o")
            .replace("enabled = true # on", "enabled = false # on"),
        "only the value of `enabled` changes"
    );
    // Again: nothing to write.
    let (status, again) = server
        .call(
            "PATCH",
            "/api/scheduler/report",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!((status, &again["changed"]), (200, &json!(false)), "{again}");
    // JSON: one member added, the layout kept.
    let (status, changed) = server
        .call(
            "PATCH",
            "/api/scheduler/digest",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, 200, "{changed}");
    assert_eq!(
        std::fs::read_to_string(&json_file).unwrap(),
        "{\n  \"every\": \"1d\",\n  \"prompt\": \"Write the digest\",\n  \"enabled\": false\n}\n"
    );
    // Refusals carry their codes; nothing is written.
    for (path, body, want, code) in [
        (
            "/api/scheduler/policy",
            json!({"enabled": false}),
            403,
            "schedule/not-editable",
        ),
        (
            "/api/scheduler/nosuch",
            json!({"enabled": false}),
            404,
            "schedule/not-found",
        ),
        (
            "/api/scheduler/report",
            json!({"enabled": "no"}),
            422,
            "server/body-invalid",
        ),
    ] {
        let (status, e) = server.call("PATCH", path, Some(body)).await;
        assert_eq!((status, e["code"].as_str()), (want, Some(code)), "{e}");
    }
    let (_, list) = server.call("GET", "/api/scheduler", None).await;
    assert_eq!(item(&list, "policy")["enabled"], true);
    assert_eq!(item(&list, "report")["enabled"], false);

    // The CLI calls the same edit.
    let on = s.json(&["schedule", "enable", "report", "--json"]);
    assert_eq!(on["change"]["changed"], true, "{on}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        REPORT.replace("MODEL", "openai:gpt-4o")
    );
    let out = s.run(&["schedule", "disable", "policy", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(common::stderr_codes(&out), ["schedule/not-editable"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_view_lists_disables_runs_links_and_passes_axe() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let model = script(
        &s,
        "report.yaml",
        "turns:\n  - reply: {text: REPORT-WRITTEN}\n",
    );
    let server = Server::start(&s, &[]);

    // No schedules: the page says where a file goes.
    browser.open_ui(&server, "scheduler").await;
    browser
        .wait("document.body.innerText.includes('No schedules yet')")
        .await;
    let folder = browser
        .js(
            "return document.querySelector('code.schedule-folder').textContent",
            json!([]),
        )
        .await;
    assert_eq!(folder, s.config().join("schedules").to_str().unwrap());
    assert_eq!(browser.wait(PLUGINS_BENEATH_SCHEDULER).await, true);
    assert_eq!(browser.axe_violations().await, json!([]), "axe: empty");
    browser.screenshot("scheduler-empty").await;

    // A real file is listed.
    let file = s.user("schedules/report.toml", &REPORT.replace("MODEL", &model));
    browser.refresh().await;
    let row = "tr[data-schedule=report]";
    browser
        .wait(&format!(
            "document.querySelector('{row} [data-state=enabled]')"
        ))
        .await;
    let text = browser
        .js(
            "return document.querySelector(arguments[0]).innerText",
            json!([row]),
        )
        .await;
    assert!(text.as_str().unwrap().contains("every 1 hour"), "{text}");
    assert!(text.as_str().unwrap().contains("never"), "{text}");

    // Disable flips the file on disk and the view shows it.
    browser.click_text("Disable").await;
    browser
        .wait(&format!(
            "document.querySelector('{row} [data-state=disabled]')"
        ))
        .await;
    let saved = std::fs::read_to_string(&file).unwrap();
    assert_eq!(
        saved,
        REPORT
            .replace("MODEL", &model)
            .replace("enabled = true # on", "enabled = false # on")
    );
    assert_eq!(
        browser
            .js(
                "return [...document.querySelectorAll(arguments[0] + ' button')].map(b => b.textContent)",
                json!([row]),
            )
            .await,
        json!(["Run now", "Enable"])
    );

    // Run now: the run ends and its session is linked.
    browser.click_text("Run now").await;
    let href = browser
        .wait(&format!(
            "document.querySelector('{row} [data-status=done]') && document.querySelector('{row} a.run-session')?.getAttribute('href')"
        ))
        .await;
    let (_, history) = server
        .call("GET", "/api/scheduler/report/history", None)
        .await;
    let session = history["runs"][0]["session_id"].as_str().unwrap();
    assert_eq!(href, format!("#/chat/{session}"));
    assert_eq!(history["runs"][0]["trigger"], "manual");
    assert_eq!(browser.axe_violations().await, json!([]), "axe: the list");
    browser.screenshot("scheduler-list").await;

    // The schedule's own page: its history with the same link.
    browser.click("tr[data-schedule=report] th a").await;
    browser
        .wait("document.querySelector('table.history a.run-session')")
        .await;
    assert_eq!(
        browser
            .js(
                "return document.querySelector('table.history a.run-session').getAttribute('href')",
                json!([]),
            )
            .await,
        format!("#/chat/{session}")
    );
    assert_eq!(browser.axe_violations().await, json!([]), "axe: history");
    browser.screenshot("scheduler-history").await;
    // The link opens the run's session.
    browser.click("table.history a.run-session").await;
    browser
        .wait("document.querySelector('main').innerText.includes('REPORT-WRITTEN')")
        .await;

    // Plugins stays beneath Scheduler in Coding mode, at its own route.
    browser.click("button[data-mode=coding]").await;
    assert_eq!(browser.wait(PLUGINS_BENEATH_SCHEDULER).await, true);
    browser.click(".nav a[data-nav=plugins]").await;
    browser
        .wait("location.hash === '#/plugins' && document.querySelector('main h1')?.textContent === 'Plugins'")
        .await;
}
