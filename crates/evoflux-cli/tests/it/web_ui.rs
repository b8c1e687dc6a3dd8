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

/// How often `text` appears in the visible text of the element `css`.
async fn count_in(browser: &Browser, css: &str, text: &str) -> u64 {
    browser
        .js(
            "return document.querySelector(arguments[0]).innerText.split(arguments[1]).length - 1",
            json!([css, text]),
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
    browser.open_ui(&server, "chat").await;
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
    // Nothing lost, nothing twice: the whole conversation once (in the
    // conversation: the sidebar and the page's heading title the session
    // by its first message too).
    for text in [
        "plan a trip",
        "Which city?",
        "Day one",
        "Day three",
        "END-OF-PLAN",
    ] {
        assert_eq!(count_in(&browser, "#conversation", text).await, 1, "{text}");
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

    browser.open_ui(&server, "plugins").await;
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
    browser.open_ui(&server, "settings/agents/researcher").await;
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
    browser.open_ui(&server, &format!("chat/{id}")).await;
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

/// Creates a session through the API and returns its id.
async fn create_session(server: &Server, body: Value) -> String {
    let created: Value = server
        .post("/api/sessions", body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    created["session_id"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_owned()
}

/// Whether the element `css` names lies wholly above the composer and
/// inside the window (nothing of it hidden under the sticky composer).
async fn above_the_composer(browser: &Browser, css: &str) -> Value {
    browser
        .js(
            "const e = document.querySelector(arguments[0]); const c = document.querySelector('.composer'); \
             if (!e || !c) return 'missing'; const r = e.getBoundingClientRect(); const k = c.getBoundingClientRect(); \
             return r.height > 0 && r.top >= 0 && r.bottom <= k.top + 1 && k.bottom <= innerHeight + 1 \
               ? true : `element ${r.top}..${r.bottom}, composer ${k.top}..${k.bottom}, window ${innerHeight}`;",
            json!([css]),
        )
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn markdown_renders_gfm_with_copy_buttons_and_the_composer_covers_nothing() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    // A long answer, so the page must scroll to show its tail.
    let filler: String = (1..=40)
        .map(|n| format!("Paragraph {n} of the answer.\\n\\n"))
        .collect();
    let model = script(
        &s,
        "gfm.yaml",
        &format!(
            r#"
turns:
  - reply:
      text: "| City | Days |\n| :--- | ---: |\n| Lisbon | 3 |\n| Porto | 2 |\n\n- outer\n  - inner one\n  - inner two\n- [x] booked\n- [ ] packed\n\n~~cancelled~~ and https://example.com/x and <mailto:a@example.com>\n\n<img src=x onerror=alert(1)> [bad](javascript:alert(1))\n\n```sh\necho hello\n```\n\n{filler}TAIL-OF-THE-ANSWER"
"#
        ),
    );
    let server = Server::start(&s, &[]);
    let id = create_session(
        &server,
        json!({"mode": "work", "model": model, "message": "show me"}),
    )
    .await;
    browser.open_ui(&server, &format!("chat/{id}")).await;
    browser
        .wait("document.body.innerText.includes('TAIL-OF-THE-ANSWER') && document.querySelector('.msg.assistant button.copy')")
        .await;
    // A GFM table is a <table>, with its alignment.
    let table = browser
        .js(
            "const t = document.querySelector('.msg.assistant table'); return t && [[...t.querySelectorAll('th')].map(c => c.textContent), [...t.querySelectorAll('tbody tr')].map(r => [...r.cells].map(c => c.textContent).join('/')), t.querySelector('td.align-right')?.textContent]",
            json!([]),
        )
        .await;
    assert_eq!(
        table,
        json!([["City", "Days"], ["Lisbon/3", "Porto/2"], "3"]),
        "{table}"
    );
    // Nested and task lists, strikethrough, autolinks, fenced code.
    let shape = browser
        .js(
            "const m = document.querySelector('.msg.assistant'); return { \
               nested: [...m.querySelectorAll('li > ul > li')].map(l => l.textContent), \
               tasks: [...m.querySelectorAll('li.task input[type=checkbox]')].map(c => c.checked), \
               del: m.querySelector('del')?.textContent, \
               links: [...m.querySelectorAll('a')].map(a => a.getAttribute('href')), \
               code: m.querySelector('.code-block pre code')?.textContent, \
               images: m.querySelectorAll('img').length, \
               raw: m.innerText.includes('| City') }",
            json!([]),
        )
        .await;
    assert_eq!(
        shape["nested"],
        json!(["inner one", "inner two"]),
        "{shape}"
    );
    assert_eq!(shape["tasks"], json!([true, false]), "{shape}");
    assert_eq!(shape["del"], "cancelled", "{shape}");
    assert_eq!(
        shape["links"],
        json!(["https://example.com/x", "mailto:a@example.com"]),
        "{shape}"
    );
    assert_eq!(shape["code"], "echo hello", "{shape}");
    assert_eq!(shape["images"], 0, "model HTML became markup: {shape}");
    assert_eq!(shape["raw"], false, "the table shows as source: {shape}");
    // The transcript's end is above the composer, not under it.
    let tail = "(() => { const ps = document.querySelectorAll('.msg.assistant .md > p'); ps[ps.length - 1].id = 'tail'; return true; })()";
    browser.wait(tail).await;
    let shown = above_the_composer(&browser, "#tail").await;
    assert_eq!(shown, true, "{shown}");
    // Copy on the code block and on the message.
    browser
        .js(
            "window.copied = []; Object.defineProperty(navigator, 'clipboard', {value: {writeText: (t) => { window.copied.push(t); return Promise.resolve(); }}, configurable: true});",
            json!([]),
        )
        .await;
    browser.click(".code-block button.copy").await;
    browser.click(".msg.assistant .who button.copy").await;
    browser.wait("window.copied.length === 2").await;
    let copied = browser.js("return window.copied", json!([])).await;
    assert_eq!(copied[0], "echo hello");
    assert!(
        copied[1].as_str().unwrap().starts_with("| City | Days |")
            && copied[1].as_str().unwrap().ends_with("TAIL-OF-THE-ANSWER"),
        "{copied}"
    );
    browser.screenshot("chat-gfm").await;
    let violations = browser.axe_violations().await;
    assert_eq!(violations, json!([]), "axe-core on the rendered Markdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decided_approvals_have_no_live_buttons_after_a_reload_or_in_a_second_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let Some(second) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let model = script(
        &s,
        "approve.yaml",
        r#"
turns:
  - reply:
      tool_calls:
        - {name: shell, arguments: {command: "touch approved.txt"}}
  - expect: {tool_result: {contains: ""}}
    reply: {text: "APPROVED-AND-DONE"}
"#,
    );
    let server = Server::start(&s, &[]);
    let id = create_session(
        &server,
        json!({"mode": "work", "model": model, "message": "go"}),
    )
    .await;
    let live = "[...document.querySelectorAll('.prompt button')].map(b => b.textContent)";
    browser.open_ui(&server, &format!("chat/{id}")).await;
    second.open_ui(&server, &format!("chat/{id}")).await;
    for b in [&browser, &second] {
        b.wait(&format!("{live}.length === 4")).await;
    }
    // All four decisions are offered, above the composer.
    let offered = browser.js(&format!("return {live}"), json!([])).await;
    assert_eq!(
        offered,
        json!([
            "Approve",
            "Approve for this session",
            "Approve for this workspace",
            "Deny"
        ])
    );
    // The prompt and the command it is about are above the composer.
    let shown = above_the_composer(&browser, ".prompt").await;
    assert_eq!(shown, true, "{shown}");
    let shown = above_the_composer(&browser, "details.tool .body > pre").await;
    assert_eq!(shown, true, "{shown}");
    let command = browser
        .js(
            "return document.querySelector('details.tool .body > pre').textContent",
            json!([]),
        )
        .await;
    assert!(
        command.as_str().unwrap().contains("touch approved.txt"),
        "{command}"
    );
    browser.screenshot("chat-approval").await;
    browser.click_text("Approve for this workspace").await;
    // Decided: the call ran, and neither browser offers a decision.
    for b in [&browser, &second] {
        b.wait("document.body.innerText.includes('APPROVED-AND-DONE')")
            .await;
        assert_eq!(b.js(&format!("return {live}"), json!([])).await, json!([]));
        assert_eq!(count(b, "Approved for this workspace.").await, 1);
    }
    let ended = browser
        .js(
            "return document.querySelector('details.tool .badge')?.textContent",
            json!([]),
        )
        .await;
    assert_eq!(ended, "done");
    // After a reload the decision is history, not a prompt.
    browser.refresh().await;
    browser
        .wait("document.body.innerText.includes('APPROVED-AND-DONE')")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        browser.js(&format!("return {live}"), json!([])).await,
        json!([])
    );
    // A second browser opening it now sees no live buttons either.
    second.refresh().await;
    second
        .wait("document.body.innerText.includes('APPROVED-AND-DONE')")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(
        second.js(&format!("return {live}"), json!([])).await,
        json!([])
    );
    browser.screenshot("chat-approval-decided").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_is_labelled_as_such_and_a_failed_turn_ends_with_its_error_and_a_retry() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    // After its second turn the script has nothing more: the next model
    // call fails.
    let model = script(
        &s,
        "ask.yaml",
        r#"
turns:
  - expect: {user: {contains: "plan a trip"}}
    reply:
      tool_calls:
        - {name: ask_user, arguments: {question: "Which city?", options: [Lisbon, Porto]}}
  - expect: {tool_result: {contains: "Lisbon"}}
    reply: {text: "LISBON-IT-IS"}
"#,
    );
    let server = Server::start(&s, &[]);
    let id = create_session(
        &server,
        json!({"mode": "work", "model": model, "message": "plan a trip"}),
    )
    .await;
    browser.open_ui(&server, &format!("chat/{id}")).await;
    browser
        .wait("[...document.querySelectorAll('form.question button')].some(b => b.textContent === 'Lisbon')")
        .await;
    // The question's options are above the composer.
    let shown = above_the_composer(&browser, "form.question").await;
    assert_eq!(shown, true, "{shown}");
    // Answered at once: the page waits for the asking turn's end.
    browser.click_text("Lisbon").await;
    browser
        .wait("document.body.innerText.includes('LISBON-IT-IS')")
        .await;
    browser.type_into(".composer textarea", "and then?\n").await;
    // The failed turn ends visibly, with its error and a Retry.
    browser
        .wait("document.querySelector('.turn-failed button')")
        .await;
    let labels = browser
        .js(
            "return [...document.querySelectorAll('.msg.user .who')].map(w => w.firstChild.textContent)",
            json!([]),
        )
        .await;
    assert_eq!(labels, json!(["You", "You answered", "You"]), "{labels}");
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('#toast .toast.error').length",
                json!([]),
            )
            .await,
        0,
        "an error was shown (the answer posted while the turn ran?)"
    );
    let failed = browser
        .js(
            "return document.querySelector('.turn-failed').innerText",
            json!([]),
        )
        .await;
    assert!(
        failed.as_str().unwrap().contains("The turn failed"),
        "{failed}"
    );
    assert!(
        count(&browser, "The turn failed").await >= 1
            && browser
                .js(
                    "return document.querySelectorAll('p.error').length",
                    json!([])
                )
                .await
                .as_u64()
                .unwrap()
                >= 2,
        "the error is not shown"
    );
    browser.screenshot("chat-turn-failed").await;
    // Retry sends the last message again (and fails again: the script is
    // spent).
    browser.click_text("Retry").await;
    browser
        .wait("[...document.querySelectorAll('.msg.user .body')].filter(b => b.textContent === 'and then?').length === 2 && document.querySelector('.turn-failed button')")
        .await;
    assert_eq!(
        browser
            .js(
                "return document.querySelectorAll('.turn-failed').length",
                json!([])
            )
            .await,
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_375_px_the_sidebar_folds_away_and_the_composer_is_on_screen() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let model = script(&s, "idle.yaml", "turns: []\n");
    let server = Server::start(&s, &[]);
    let id = create_session(&server, json!({"mode": "work", "model": model})).await;
    browser.resize(375, 812).await;
    browser.open_ui(&server, &format!("chat/{id}")).await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    let width = browser.js("return innerWidth", json!([])).await;
    assert!(width.as_u64().unwrap() <= 400, "window {width}");
    // The composer is visible without scrolling; the sidebar is folded.
    let composer = browser
        .js(
            "const r = document.querySelector('.composer').getBoundingClientRect(); return scrollY === 0 && r.top >= 0 && r.bottom <= innerHeight + 1 ? true : `${r.top}..${r.bottom} of ${innerHeight}, scrolled ${scrollY}`",
            json!([]),
        )
        .await;
    assert_eq!(composer, true, "{composer}");
    let toggle = "document.getElementById('nav-toggle')";
    assert_eq!(
        browser
            .js(
                &format!("return [{toggle}.getAttribute('aria-label'), {toggle}.getAttribute('aria-expanded'), getComputedStyle(document.getElementById('sidebar')).display === 'none']"),
                json!([]),
            )
            .await,
        json!(["Open navigation", "false", true])
    );
    browser.screenshot("phone-chat").await;
    // The button opens it; navigating closes it.
    browser.click("#nav-toggle").await;
    browser
        .wait("getComputedStyle(document.getElementById('sidebar')).display !== 'none'")
        .await;
    assert_eq!(
        browser
            .js(
                &format!("return {toggle}.getAttribute('aria-expanded')"),
                json!([])
            )
            .await,
        "true"
    );
    browser.screenshot("phone-navigation").await;
    let violations = browser.axe_violations().await;
    assert_eq!(violations, json!([]), "axe-core with the navigation open");
    browser.click("a[data-nav=settings]").await;
    browser
        .wait("getComputedStyle(document.getElementById('sidebar')).display === 'none' && location.hash.startsWith('#/settings')")
        .await;
    // Every page fits the width (wide tables scroll inside themselves).
    for route in [
        "chat".to_owned(),
        format!("chat/{id}"),
        "plugins".to_owned(),
        "settings/agents".to_owned(),
        "settings/agents/evoflux".to_owned(),
        "settings/skills/writing".to_owned(),
        "settings/mcp".to_owned(),
        "provenance".to_owned(),
        format!("files/{id}/0"),
    ] {
        browser.goto(&format!("{}/#/{route}", server.url)).await;
        browser.wait("document.querySelector('main h1')").await;
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        let overflow = browser
            .js(
                "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
                json!([]),
            )
            .await;
        assert!(
            overflow.as_i64().unwrap() <= 1,
            "{route} is {overflow} px wider than the window"
        );
        browser
            .screenshot(&format!("phone-{}", route.replace('/', "-")))
            .await;
    }
    let violations = browser.axe_violations().await;
    assert_eq!(violations, json!([]), "axe-core at 375 px");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_small_defects_stay_fixed() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    s.trust();
    let model = script(&s, "idle.yaml", "turns: []\n");
    let server = Server::start(&s, &[]);
    let id = create_session(&server, json!({"mode": "coding", "model": model})).await;
    browser.open_ui(&server, "settings/skills/writing").await;
    browser
        .wait("document.querySelector('.skill-detail h2')")
        .await;
    // No literal "null" under a skill's or an agent's name.
    let nulls = "[...document.querySelectorAll('main *')].filter(e => [...e.childNodes].some(n => n.nodeType === 3 && /^(null|undefined)$/.test(n.textContent.trim()))).length";
    assert_eq!(browser.js(&format!("return {nulls}"), json!([])).await, 0);
    s.user(
        "agents/scout.md",
        "---\nname: scout\nrole: member\ndescription: Looks ahead.\n---\nLook.\n",
    );
    browser
        .goto(&format!("{}/#/settings/agents/scout", server.url))
        .await;
    browser
        .wait("document.querySelector('.agent-editor h2')?.textContent === 'scout'")
        .await;
    assert_eq!(browser.js(&format!("return {nulls}"), json!([])).await, 0);
    // The sidebar follows the open session's mode (a Coding session
    // opened while the page was on Work).
    browser.goto(&format!("{}/#/chat/{id}", server.url)).await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    browser
        .js("localStorage.setItem('evoflux.mode', 'work')", json!([]))
        .await;
    browser.refresh().await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    browser
        .wait("document.querySelector('button[data-mode=coding]').getAttribute('aria-checked') === 'true'")
        .await;
    // Loading a session's page asks for the session list once.
    browser.refresh().await;
    browser
        .wait("document.querySelector('.composer textarea')")
        .await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let lists = browser
        .js(
            "return performance.getEntriesByType('resource').filter(e => /\\/api\\/sessions(\\?|$)/.test(new URL(e.name).pathname + new URL(e.name).search)).length",
            json!([]),
        )
        .await;
    assert_eq!(lists, 1, "GET /api/sessions on load");
    // The viewer's progress line gives way to its error.
    browser
        .goto(&format!("{}/#/viewer/{id}/0/missing.docx", server.url))
        .await;
    browser.wait("document.querySelector('main .error')").await;
    assert_eq!(count(&browser, "Rendering").await, 0);
    // Log out: the page forgets the token and asks for one.
    browser.click_text("Log out").await;
    browser
        .wait("document.body.innerText.includes('Connect to evoflux')")
        .await;
    assert_eq!(
        browser
            .js("return localStorage.getItem('evoflux.token')", json!([]))
            .await,
        Value::Null
    );
}

/// The titles of the sidebar's top-level sessions, in order.
async fn sidebar_titles(browser: &Browser) -> Value {
    browser
        .js(
            "return [...document.querySelectorAll('#session-list > li.session > .session-row .session-title')].map(e => e.textContent)",
            json!([]),
        )
        .await
}

/// Sessions can be found (issue #48): three sessions with different first
/// messages have three titles, the latest active first; a child session
/// sits under its parent, not beside it; a search finds a session by a
/// word of its messages; a rename shows; delete (confirmed) removes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_have_titles_nest_their_children_are_searched_and_deleted() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    let s = Sandbox::new();
    let server = Server::start(&s, &[]);
    let mut ids = Vec::new();
    for (file, message, reply) in [
        ("a.yaml", "Plan the Lisbon offsite", "Book the Alfama venue"),
        (
            "b.yaml",
            "Refactor the tokenizer",
            "Use a PEG grammar instead",
        ),
        (
            "c.yaml",
            "Draft the quarterly report",
            "Revenue grew nicely",
        ),
    ] {
        let model = script(
            &s,
            file,
            &format!("turns:\n  - reply: {{text: \"{reply}\"}}\n"),
        );
        let id = create_session(
            &server,
            json!({"mode": "work", "model": model, "message": message}),
        )
        .await;
        // Each turn ends before the next session starts: distinct activity.
        for _ in 0..200 {
            let shown: Value = server
                .get(&format!("/api/sessions/{id}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if shown["transcript"].as_array().is_some_and(|t| t.len() >= 2) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        ids.push(id);
    }
    // A child the first session delegated to (seeded in the store, as a
    // dispatch would open it).
    let store = {
        let dirs = evoflux_app::testing::dirs(s.tmp.path());
        evoflux_store::Store::open(dirs.data_dir()).await.unwrap()
    };
    let child = store
        .create_session(evoflux_store::NewSession {
            workspace: evoflux_store::WorkspaceRequest::Work,
            lead: Some("researcher".into()),
            model: None,
            graph_hash: None,
            parent: Some(evoflux_store::SessionParent {
                session_id: ids[0].parse().unwrap(),
                call_id: "call_1".into(),
            }),
        })
        .await
        .unwrap();
    store
        .append_message(
            child.id,
            &evoflux_store::Message::user("Compare flights to Porto"),
        )
        .await
        .unwrap();
    let child = child.id.to_string();

    browser.open_ui(&server, "chat").await;
    browser
        .wait("document.querySelectorAll('#session-list > li.session').length === 3")
        .await;
    // Latest activity first; a child's activity counts as its parent's
    // (the Lisbon session's delegated child spoke last).
    assert_eq!(
        sidebar_titles(&browser).await,
        json!([
            "Plan the Lisbon offsite",
            "Draft the quarterly report",
            "Refactor the tokenizer"
        ])
    );
    // The child is nested under its parent, folded until opened.
    let nested = format!(
        "#session-list > li[data-session='{}'] ul.children > li[data-session='{child}']",
        ids[0]
    );
    assert_eq!(
        browser
            .js(
                "return !!document.querySelector(arguments[0]) && document.querySelector(arguments[0]).closest('ul').hidden",
                json!([nested]),
            )
            .await,
        true
    );
    browser
        .click(&format!(
            "#session-list > li[data-session='{}'] .twisty",
            ids[0]
        ))
        .await;
    browser
        .wait(&format!(
            "document.querySelector(\"{nested}\")?.offsetParent !== null && document.querySelector(\"{nested}\").innerText.includes('Compare flights to Porto')"
        ))
        .await;
    browser.screenshot("sessions-nested").await;
    assert_eq!(browser.axe_violations().await, json!([]));

    // A word only the model said finds its session, and only it.
    browser.type_into("#session-search", "grammar").await;
    browser
        .wait("document.querySelectorAll('#session-list > li.session').length === 1")
        .await;
    assert_eq!(
        sidebar_titles(&browser).await,
        json!(["Refactor the tokenizer"])
    );
    // A search reaches into children too.
    browser
        .js(
            "const b = document.getElementById('session-search'); b.value = 'porto'; b.dispatchEvent(new Event('input'));",
            json!([]),
        )
        .await;
    browser
        .wait(&format!(
            "document.querySelectorAll('#session-list > li.session').length === 1 && !!document.querySelector(\"#session-list > li[data-session='{child}']\")"
        ))
        .await;
    browser
        .js(
            "const b = document.getElementById('session-search'); b.value = ''; b.dispatchEvent(new Event('input'));",
            json!([]),
        )
        .await;
    browser
        .wait("document.querySelectorAll('#session-list > li.session').length === 3")
        .await;

    // Rename.
    browser
        .js(
            "document.querySelector(`#session-list li[data-session='${arguments[0]}'] button[aria-label^='Rename']`).click()",
            json!([ids[2]]),
        )
        .await;
    browser.wait("document.querySelector('dialog input')").await;
    browser
        .js(
            "document.querySelector('dialog input').value = 'Q3 report'",
            json!([]),
        )
        .await;
    browser.click("dialog button[data-value='rename']").await;
    browser
        .wait("[...document.querySelectorAll('#session-list .session-title')].some(e => e.textContent === 'Q3 report')")
        .await;

    // Delete, confirmed: the session leaves the list and the store.
    browser
        .js(
            "document.querySelector(`#session-list li[data-session='${arguments[0]}'] button[aria-label^='Delete']`).click()",
            json!([ids[1]]),
        )
        .await;
    browser.wait("document.querySelector('dialog')").await;
    browser.click("dialog button[data-value='delete']").await;
    browser
        .wait("document.querySelectorAll('#session-list > li.session').length === 2")
        .await;
    // A rename is not activity: the order stays by what was said last.
    assert_eq!(
        sidebar_titles(&browser).await,
        json!(["Plan the Lisbon offsite", "Q3 report"])
    );
    let gone = server
        .get(&format!("/api/sessions/{}", ids[1]))
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), 404);
    browser.screenshot("sessions-after-delete").await;
}
