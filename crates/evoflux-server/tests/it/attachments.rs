//! Files attached to a Work session land in its folder under their name,
//! never over another file (issue #48); a Coding session refuses them.

use crate::common;

use serde_json::{Value, json};

async fn upload(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    name: &str,
    body: &[u8],
) -> (u16, Value) {
    let r = client
        .post(format!(
            "{url}/api/sessions/{id}/attachments?name={}",
            name.replace('/', "%2F")
        ))
        .bearer_auth(common::TOKEN)
        .body(body.to_vec())
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attachments_land_in_the_work_folder_under_a_free_name() {
    let (tmp, app) = common::setup();
    let server = common::start(&app, |_| {}).await;
    let url = server.url();
    let client = reqwest::Client::new();
    let script = tmp.path().join("s.yaml");
    std::fs::write(&script, "turns:\n  - reply: {text: Hi.}\n").unwrap();
    let created: Value = client
        .post(format!("{url}/api/sessions"))
        .bearer_auth(common::TOKEN)
        .json(&json!({"mode": "work", "model": format!("scripted:{}", script.display())}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"].as_str().unwrap();
    let (status, first) = upload(&client, &url, id, "report.csv", b"a,b\n1,2\n").await;
    assert_eq!(status, 201, "{first}");
    assert_eq!(first["name"], "report.csv");
    let (_, second) = upload(&client, &url, id, "report.csv", b"other").await;
    assert_eq!(second["name"], "report (2).csv");
    let folder = std::path::PathBuf::from(first["path"].as_str().unwrap());
    assert_eq!(std::fs::read(&folder).unwrap(), b"a,b\n1,2\n");
    let (status, bad) = upload(&client, &url, id, "../escape.txt", b"x").await;
    assert_eq!(
        (status, bad["code"].as_str()),
        (400, Some("attach/name-invalid")),
        "{bad}"
    );
    assert!(
        !folder
            .parent()
            .unwrap()
            .parent()
            .unwrap()
            .join("escape.txt")
            .exists()
    );

    let coding: Value = client
        .post(format!("{url}/api/sessions"))
        .bearer_auth(common::TOKEN)
        .json(&json!({"mode": "coding", "model": format!("scripted:{}", script.display())}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let coding = coding["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{coding}"));
    let (status, refused) = upload(&client, &url, coding, "a.txt", b"x").await;
    assert_eq!(
        (status, refused["code"].as_str()),
        (409, Some("attach/not-work-session")),
        "{refused}"
    );
    server.stop().await;
}
