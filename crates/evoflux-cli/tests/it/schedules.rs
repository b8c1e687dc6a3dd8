//! `schedules/<name>.toml` through the real binary: compiled and listed
//! with their provenance, refused with a code naming the file and field,
//! withheld in an untrusted repository, and run on demand as a session
//! whose run the history keeps.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use common::{Sandbox, json};
use serde_json::Value;

fn schedule<'a>(list: &'a Value, name: &str) -> &'a Value {
    list["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no schedule {name} in {list}"))
}

#[test]
fn schedules_are_listed_with_their_trigger_and_source() {
    let s = Sandbox::new();
    s.user(
        "schedules/digest.toml",
        "cron = \"0 9 * * 1-5\"\ntimezone = \"Europe/Berlin\"\nprompt = \"Write the digest\"\n",
    );
    s.project(
        "schedules/tests.toml",
        "every = \"30m\"\nprompt = \"Run the tests\"\nmode = \"coding\"\noverlap = \"queue\"\n",
    );
    s.trust();
    let list = s.json(&["schedule", "list", "--json"]);
    let digest = schedule(&list, "digest");
    assert_eq!(digest["trigger"]["kind"], "cron");
    assert_eq!(digest["trigger"]["timezone"], "Europe/Berlin");
    assert_eq!(digest["mode"], "work");
    assert!(
        digest["file"]
            .as_str()
            .unwrap()
            .ends_with("schedules/digest.toml")
    );
    assert!(
        digest.get("next_run_at").is_none(),
        "no scheduler has seen it yet"
    );
    let tests = schedule(&list, "tests");
    assert_eq!(
        tests["trigger"],
        serde_json::json!({"kind": "every", "seconds": 1800})
    );
    assert_eq!(tests["overlap"], "queue");
    assert_eq!(
        tests["workspace"],
        s.repo().canonicalize().unwrap().display().to_string(),
        "a repository's Coding schedule works in that repository"
    );
    let info = s.json(&["info", "--json"]);
    let names: Vec<&str> = info["schedules"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["digest", "tests"]);
    assert_eq!(
        info["schedules"]["entries"][1]["source"]["layer"],
        "project"
    );
}

#[test]
fn a_broken_schedule_names_its_file_and_field_and_an_untrusted_one_waits() {
    let s = Sandbox::new();
    let file = s.user(
        "schedules/bad.toml",
        "cron = \"0 25 * * *\"\nprompt = \"p\"\n",
    );
    let out = s.run(&["info", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let info = json(&out);
    let d = info["diagnostics"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["code"] == "schedule/cron-invalid")
        .unwrap_or_else(|| panic!("{info}"));
    assert_eq!(d["locator"]["field"], "cron");
    assert_eq!(d["locator"]["file"], file.display().to_string());
    std::fs::remove_file(&file).unwrap();
    s.project("schedules/nightly.toml", "every = \"1d\"\nprompt = \"p\"\n");
    let info = s.json(&["info", "--json"]);
    let waiting: Vec<&str> = info["awaiting_trust"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["slot"].as_str().unwrap())
        .collect();
    assert_eq!(waiting, ["schedules/nightly"]);
    assert_eq!(info["schedules"]["total"], 0);
}

#[test]
fn run_now_runs_the_task_as_a_session_and_history_keeps_it() {
    let s = Sandbox::new();
    let model = common::script(
        &s,
        "digest.yaml",
        "turns:\n  - reply: {text: digest written}\n",
    );
    s.user(
        "schedules/digest.toml",
        &format!(
            "every = \"1h\"\nprompt = \"Write the digest\"\nmodel = \"{model}\"\nenabled = false\n"
        ),
    );
    let r = s.json(&["schedule", "run-now", "digest", "--json"]);
    let run = &r["run"];
    assert_eq!(run["status"], "done", "{r}");
    assert_eq!(run["trigger"], "manual");
    let session = run["session_id"].as_str().unwrap().to_owned();
    let sessions = s.json(&["sessions", "list", "--json"]);
    assert!(
        sessions.to_string().contains(&session),
        "the run's session is a session like any other: {sessions}"
    );
    let history = s.json(&["schedule", "history", "digest", "--json"]);
    assert_eq!(history["runs"].as_array().unwrap().len(), 1);
    assert_eq!(history["runs"][0]["session_id"], session.as_str());
    let show = s.json(&["schedule", "show", "digest", "--json"]);
    assert_eq!(show["schedule"]["last_run"]["status"], "done");
    // A task that fails is recorded failed, and the exit says so.
    let broken = common::script(&s, "broken.yaml", "turns: []\n");
    s.user(
        "schedules/broken.toml",
        &format!("every = \"1h\"\nprompt = \"p\"\nmodel = \"{broken}\"\n"),
    );
    let out = s.run(&["schedule", "run-now", "broken", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json(&out)["run"]["status"], "failed");
    // An unknown name is refused, naming it.
    let out = s.run(&["schedule", "run-now", "nosuch"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuch"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_lists_schedules_and_runs_one_on_demand() {
    let s = Sandbox::new();
    let model = common::script(&s, "api.yaml", "turns:\n  - reply: {text: done}\n");
    s.user(
        "schedules/report.toml",
        &format!("every = \"1h\"\nprompt = \"Write the report\"\nmodel = \"{model}\"\n"),
    );
    let server = common::server::Server::start(&s, &[]);
    let (status, list) = server.call("GET", "/api/scheduler", None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["items"][0]["name"], "report");
    let (status, _) = server.call("GET", "/api/scheduler/nosuch", None).await;
    assert_eq!(status, 404);
    let (status, started) = server.call("POST", "/api/scheduler/report/run", None).await;
    assert_eq!(status, 202, "{started}");
    assert_eq!(started["run"]["status"], "running");
    // The run ends on its own; the history says how.
    let mut done = Value::Null;
    for _ in 0..100 {
        let (_, history) = server
            .call("GET", "/api/scheduler/report/history?limit=5", None)
            .await;
        if history["runs"][0]["status"] != "running" {
            done = history["runs"][0].clone();
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(done["status"], "done", "{done}");
    assert_eq!(done["trigger"], "manual");
    let session = done["session_id"].as_str().unwrap();
    let (status, _) = server
        .call("GET", &format!("/api/sessions/{session}"), None)
        .await;
    assert_eq!(status, 200, "the run's session is served like any other");
    let (status, _) = server
        .call("GET", "/api/scheduler/report/history?limit=0", None)
        .await;
    assert_eq!(status, 400);
}

#[test]
fn schedule_task_creates_a_schedule_the_user_allowed_and_sees() {
    let s = Sandbox::new();
    let script = "turns:\n  - reply:\n      tool_calls:\n        - {name: schedule_task, arguments: {action: create, name: standup, every: 1d, prompt: Post the standup}}\n  - reply: {text: scheduled}\n";
    // Nobody is there to approve: the call is denied and nothing is written.
    let model = common::script(&s, "denied.yaml", script);
    let out = common::run(&s, &["--json", "run", "--model", &model, "schedule it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ended = common::of_type(&common::events(&out), "tool_ended")[0].clone();
    assert_eq!(ended["tool"], "schedule_task");
    assert_eq!(ended["is_error"], true, "{ended}");
    assert!(!s.config().join("schedules/standup.toml").exists());
    // The user allows it in config.toml: it becomes one of their schedules.
    s.user("config.toml", "[approval]\nschedule_task = \"never\"\n");
    let model = common::script(&s, "allowed.yaml", script);
    let out = common::run(&s, &["--json", "run", "--model", &model, "schedule it"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ended = common::of_type(&common::events(&out), "tool_ended")[0].clone();
    assert_eq!(ended["is_error"], false, "{ended}");
    let list = s.json(&["schedule", "list", "--json"]);
    let standup = schedule(&list, "standup");
    assert_eq!(standup["trigger"]["seconds"], 86_400);
    assert_eq!(standup["prompt"], "Post the standup");
}
