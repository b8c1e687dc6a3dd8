#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The web UI in a real browser: Debian's chromium over WebDriver against
//! the real `evoflux serve` on a loopback port, with the scripted provider.
//! Each test saves screenshots under `target/ui-screenshots/`; the last
//! check of the chat, Plugin Center and Settings pages runs axe-core.

use crate::common;

use common::server::Server;
use common::webdriver::Browser;
use common::{Sandbox, script, write};
use serde_json::{Value, json};

/// Opens the UI with the server's token in the address's fragment.
async fn open(browser: &Browser, server: &Server, route: &str) {
    browser
        .goto(&format!("{}/#token={}", server.url, server.token))
        .await;
    browser.wait("document.querySelector('main h1')").await;
    browser.goto(&format!("{}/#/{route}", server.url)).await;
}

/// Whether `text` appears in the page's visible text, and how often.
async fn count(browser: &Browser, text: &str) -> u64 {
    browser
        .js(
            "return document.body.innerText.split(arguments[0]).length - 1",
            json!([text]),
        )
        .await
        .as_u64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_streams_runs_a_tool_asks_and_survives_a_reload() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let model = script(
        &s,
        "trip.yaml",
        r#"
turns:
  - expect: {user: {contains: "plan a trip"}}
    reply:
      tool_calls:
        - {name: grep, arguments: {pattern: lisbon}}
  - expect: {tool_result: {contains: ""}}
    reply:
      tool_calls:
        - {name: ask_user, arguments: {question: "Which city?"}}
  - expect: {tool_result: {contains: "Lisbon"}}
    reply:
      word_delay_ms: 60
      text: "**Lisbon** it is. Day one: the Alfama and its miradouros. Day two: Belém, the tower and the monastery. Day three: a train to Sintra and back by the coast. Pack light shoes for the hills. END-OF-PLAN"
"#,
    );
    let server = Server::start(&s, &[]);
    open(&browser, &server, "chat").await;
    browser
        .type_into("main form input[type=text]", &model)
        .await;
    browser.type_into("main form textarea", "plan a trip").await;
    browser.click_text("Start").await;
    // The question is asked in the page and answered there.
    browser
        .wait("document.querySelector('form.question input')")
        .await;
    assert_eq!(count(&browser, "Which city?").await, 1);
    assert!(
        browser
            .wait("document.querySelector('details.tool strong')?.textContent === 'grep'")
            .await
            == true
    );
    browser.type_into("form.question input", "Lisbon").await;
    browser.click_text("Answer").await;
    // Mid-stream: part of the answer is shown, not all of it.
    browser
        .wait("document.body.innerText.includes('Day one') && !document.body.innerText.includes('END-OF-PLAN')")
        .await;
    browser.screenshot("chat-mid-stream").await;
    browser.refresh().await;
    browser
        .wait("document.body.innerText.includes('END-OF-PLAN')")
        .await;
    // Nothing lost, nothing twice: the whole conversation once.
    for text in [
        "plan a trip",
        "Which city?",
        "Day one",
        "Day three",
        "END-OF-PLAN",
    ] {
        assert_eq!(count(&browser, text).await, 1, "{text}");
    }
    // Markdown is rendered, not shown as source.
    let bold = browser
        .js(
            "return document.querySelector('.msg.assistant strong')?.textContent",
            json!([]),
        )
        .await;
    assert_eq!(bold, "Lisbon");
    browser.screenshot("chat-after-reload").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plugin_center_imports_reviews_enables_and_keeps_secrets_out_of_the_page() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let server = Server::start(&s, &[]);
    // A package with a credentials declaration, packed by the API.
    let pkg = s.tmp.path().join("work/svc");
    write(
        &pkg.join("plugin.json"),
        &json!({
            "$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json",
            "name": "svc",
            "version": "1.0.0",
            "description": "A service with a token.",
            "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
                {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
                {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true}
            ]}}
        })
        .to_string(),
    );
    write(
        &pkg.join("skills/svc-notes/SKILL.md"),
        "---\nname: svc-notes\ndescription: Notes about the service.\n---\nCall the service.\n",
    );
    let archive = s.tmp.path().join("work/svc.evoplugin");
    let packed = server
        .post("/api/plugins/pack", json!({"path": pkg, "output": archive}))
        .send()
        .await
        .unwrap();
    assert_eq!(packed.status(), 200, "{}", packed.text().await.unwrap());

    open(&browser, &server, "plugins").await;
    browser
        .wait("document.body.innerText.includes('No plugins yet')")
        .await;
    browser.screenshot("plugins-empty").await;
    browser
        .type_into("input[type=file]", archive.to_str().unwrap())
        .await;
    browser
        .wait("document.querySelector('section.plugin[aria-label=svc]')")
        .await;
    // Turning it on opens the trust review first.
    browser
        .click("section.plugin[aria-label=svc] input[role=switch]")
        .await;
    browser.wait("document.querySelector('dialog[open]')").await;
    let review = browser
        .js(
            "return document.querySelector('dialog[open]').innerText",
            json!([]),
        )
        .await;
    assert!(review.as_str().unwrap().contains("SERVICE_URL"), "{review}");
    browser.screenshot("plugins-trust-review").await;
    browser.click_text("Trust and enable").await;
    browser
        .wait("document.querySelector('section.plugin[aria-label=svc] input[role=switch]')?.checked === true")
        .await;
    // Credentials: typed in the form, saved, never shown again.
    let secret = "tok-0123-SECRET";
    browser.click_text("Credentials").await;
    browser
        .wait("document.querySelector('dialog[open] input[type=url]')")
        .await;
    browser
        .type_into("dialog[open] input[type=url]", "https://svc.example/api")
        .await;
    browser
        .type_into("dialog[open] input[type=password]", secret)
        .await;
    browser.click_text("Save").await;
    browser
        .wait("document.body.innerText.includes('credentials set')")
        .await;
    browser.click_text("Credentials").await;
    browser
        .wait("document.querySelector('dialog[open] input[type=password]')")
        .await;
    let leaked = browser
        .js(
            "return document.documentElement.outerHTML.includes(arguments[0]) || [...document.querySelectorAll('input')].some(i => i.value.includes(arguments[0]))",
            json!([secret]),
        )
        .await;
    assert_eq!(leaked, false, "the secret is in the page");
    browser.screenshot("plugins-credentials").await;
    browser.click_text("Cancel").await;
    // No answer of the API carries it either.
    let listed: Value = server
        .get("/api/plugins")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["installation"]["name"] == "svc")
        .unwrap()["installation"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for path in [
        "/api/plugins".to_owned(),
        format!("/api/plugins/{id}"),
        format!("/api/plugins/{id}/credentials"),
    ] {
        let text = server
            .get(&path)
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert!(!text.contains(secret), "{path}");
    }
    // The package editor edits a file of the installed copy.
    browser.click_text("Edit plugin").await;
    browser
        .click("button[data-path='skills/svc-notes/SKILL.md']")
        .await;
    browser
        .wait("document.querySelector('.editor textarea').value.includes('Call the service.')")
        .await;
    browser.clear(".editor textarea").await;
    browser
        .type_into(
            ".editor textarea",
            "---\nname: svc-notes\ndescription: Notes about the service.\n---\nCall the service politely.\n",
        )
        .await;
    browser.click_text("Save").await;
    browser
        .wait("document.body.innerText.includes('The package is valid.')")
        .await;
    let shown: Value = server
        .get(&format!("/api/plugins/{id}"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let root = std::path::PathBuf::from(shown["installation"]["root"].as_str().unwrap());
    let text = std::fs::read_to_string(root.join("skills/svc-notes/SKILL.md")).unwrap();
    assert!(text.contains("politely"), "{text}");
    browser.screenshot("plugins-editor").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_editor_keeps_unknown_keys_across_form_and_raw() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let file = s.user(
        "agents/researcher.md",
        "---\nname: researcher\nrole: member\ndescription: Finds things.\ncolour: teal # my note\n---\nFind.\n",
    );
    let server = Server::start(&s, &[]);
    open(&browser, &server, "settings/agents/researcher").await;
    browser
        .wait("document.querySelector('.agent-editor')")
        .await;
    let description = "(() => { const l = [...document.querySelectorAll('.agent-editor label')].find(l => l.textContent === 'Description'); return document.getElementById(l.htmlFor); })()";
    browser
        .wait(&format!("{description}.value === 'Finds things.'"))
        .await;
    browser
        .js(
            &format!("const i = {description}; i.focus(); i.select();"),
            json!([]),
        )
        .await;
    let id = browser
        .js(&format!("return {description}.id"), json!([]))
        .await;
    browser.clear(&format!("#{}", id.as_str().unwrap())).await;
    browser
        .type_into(&format!("#{}", id.as_str().unwrap()), "Finds sources.")
        .await;
    browser.click_text("Raw").await;
    browser.wait("document.querySelector('textarea.raw')").await;
    let raw = browser
        .js(
            "return document.querySelector('textarea.raw').value",
            json!([]),
        )
        .await;
    let raw = raw.as_str().unwrap();
    assert!(raw.contains("colour: teal # my note"), "{raw}");
    assert!(raw.contains("Finds sources."), "{raw}");
    browser.screenshot("agent-editor-raw").await;
    browser.click_text("Form").await;
    browser
        .wait(&format!("{description}.value === 'Finds sources.'"))
        .await;
    browser.screenshot("agent-editor-form").await;
    browser.click_text("Save").await;
    browser
        .wait("document.body.innerText.includes('Saved researcher.')")
        .await;
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(saved.contains("colour: teal # my note"), "{saved}");
    assert!(saved.contains("description: Finds sources."), "{saved}");
    assert!(saved.ends_with("Find.\n"), "{saved}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skill_turned_off_for_coding_leaves_the_coding_composer_and_the_pages_pass_axe() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    s.trust();
    s.user(
        "skills/trip-notes/SKILL.md",
        "---\nname: trip-notes\ndescription: Notes for planning trips.\n---\nPack light.\n",
    );
    let model = script(&s, "idle.yaml", "turns: []\n");
    let server = Server::start(&s, &[]);
    let created: Value = server
        .post("/api/sessions", json!({"mode": "coding", "model": model}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let id = created["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned();
    open(&browser, &server, &format!("chat/{id}")).await;
    browser.click("button[data-mode=coding]").await;
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    let composer = ".composer textarea";
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    // Wait for the catalog, then ask for suggestions.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    browser.type_into(composer, "$trip").await;
    browser
        .wait("[...document.querySelectorAll('#skill-suggestions li')].some(l => l.textContent.startsWith('trip-notes'))")
        .await;
    browser.screenshot("composer-suggestions").await;
    // Settings: available in Work only.
    browser
        .goto(&format!("{}/#/settings/skills/trip-notes", server.url))
        .await;
    browser
        .wait("document.querySelector('.skill-detail select')")
        .await;
    browser
        .js(
            "const s = document.querySelector('.skill-detail select'); s.value = 'work'; s.dispatchEvent(new Event('change'));",
            json!([]),
        )
        .await;
    browser
        .wait("document.body.innerText.includes('Preferences saved.')")
        .await;
    browser.screenshot("settings-skill").await;
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    browser.type_into(composer, "$trip").await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let offered = browser
        .js(
            "return [...document.querySelectorAll('#skill-suggestions li')].some(l => l.textContent.startsWith('trip-notes'))",
            json!([]),
        )
        .await;
    assert_eq!(
        offered, false,
        "trip-notes is still suggested in Coding mode"
    );

    // Accessibility: no serious or critical axe-core violations.
    let Some(axe) = std::env::var_os("EVOFLUX_TEST_AXE") else {
        eprintln!("axe-core check skipped: EVOFLUX_TEST_AXE names no axe.min.js");
        return;
    };
    let axe = std::fs::read_to_string(axe).unwrap();
    for route in [
        format!("chat/{id}"),
        "plugins".to_owned(),
        "settings/skills/trip-notes".to_owned(),
        "settings/agents".to_owned(),
    ] {
        browser.goto(&format!("{}/#/{route}", server.url)).await;
        browser.wait("document.querySelector('main h1')").await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        browser.js(&axe, json!([])).await;
        let violations = browser
            .js_async(
                "const done = arguments[arguments.length - 1]; axe.run(document).then(r => done(r.violations.filter(v => v.impact === 'serious' || v.impact === 'critical').map(v => ({id: v.id, nodes: v.nodes.map(n => n.target.join(' ')).slice(0, 5)}))));",
                json!([]),
            )
            .await;
        assert_eq!(violations, json!([]), "axe-core on {route}");
    }
}
