//! The full-screen `evoflux chat` as a person sees it: the real binary in
//! a real terminal emulator (tmux, [`common::tmux`]), with the scripted
//! provider, its screen read back as rows of text. The screen's pieces
//! have their own buffer tests in evoflux-tui; these prove the whole
//! program keeps its promises at a terminal: the composer stays at the
//! bottom while an answer streams, typing ahead queues, one key approves,
//! Ctrl-C stops a running command, a resize redraws, Ctrl-D restores the
//! terminal and says how to continue.

use std::ffi::OsStr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::common::tmux::{Screen, Tmux};
use crate::common::{self, Sandbox, script};

/// The terminal every test starts in.
const SIZE: (u16, u16) = (100, 30);
/// The composer's text while nothing runs.
const IDLE: &str = "message the agent";

/// `evoflux chat --mode coding --model MODEL` in tmux, in the sandbox's
/// repository, with only the sandbox's environment (and the test's PATH,
/// so commands find their programs). `None` when tmux is missing outside
/// CI (the test is skipped, saying so).
fn chat(s: &Sandbox, model: &str) -> Option<Tmux> {
    if !Tmux::available() {
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let sandbox_env = evoflux_app::testing::env(s.tmp.path());
    let mut env: Vec<(&str, &OsStr)> = vec![
        ("PATH", path.as_os_str()),
        ("TERM", OsStr::new("xterm-256color")),
    ];
    env.extend(sandbox_env.iter().map(|(k, v)| (*k, v.as_os_str())));
    let t = Tmux::start(
        s.tmp.path(),
        SIZE,
        &s.repo(),
        &env,
        &common::evoflux_bin(),
        &["chat", "--mode", "coding", "--model", model],
    );
    t.wait("the chat's composer", |screen| {
        composer(screen).contains(IDLE)
    });
    Some(t)
}

/// The composer's row: the last row that is not blank.
fn composer(screen: &Screen) -> &str {
    screen.last_filled().1
}

/// The status row: the one right above the composer.
fn status(screen: &Screen) -> &str {
    let (row, _) = screen.last_filled();
    row.checked_sub(1)
        .map_or("", |above| screen.rows[above].as_str())
}

/// The composer is the screen's last row, holding the `› ` prompt.
fn assert_composer_at_the_bottom(screen: &Screen) {
    let (row, text) = screen.last_filled();
    assert_eq!(
        row,
        screen.rows.len() - 1,
        "the composer is not the last row:\n{screen}"
    );
    assert!(
        text.starts_with("› "),
        "the last row is not the composer:\n{screen}"
    );
}

/// Whether the status row says a turn runs.
fn working(screen: &Screen) -> bool {
    status(screen).contains("working")
}

/// Whether the turn has ended: the composer waits for a message.
fn idle(screen: &Screen) -> bool {
    composer(screen).contains(IDLE) && !working(screen)
}

/// A notice row saying exactly `text` (after its glyph).
fn notice(screen: &Screen, text: &str) -> bool {
    screen.rows.iter().any(|r| {
        r.trim()
            .trim_start_matches(|c: char| !c.is_alphanumeric())
            .trim()
            == text
    })
}

/// `count` distinct words `stemNN`: no word is a prefix of another.
fn words(stem: &str, count: usize) -> Vec<String> {
    (0..count).map(|i| format!("{stem}{i:02}")).collect()
}

/// A scripted turn: check the last message, then reply.
fn turn(expect: &str, reply: &str) -> String {
    format!("  - expect: {expect}\n    reply: {reply}\n")
}

/// `{user: TEXT}` / `{text: TEXT}` as YAML flow mappings.
fn yaml_pair(key: &str, text: &str) -> String {
    format!("{{{key}: {}}}", serde_json::Value::String(text.to_owned()))
}

/// A reply streamed a word every `delay_ms`.
fn slow_reply(text: &str, delay_ms: u64) -> String {
    format!(
        "{{text: {}, word_delay_ms: {delay_ms}}}",
        serde_json::Value::String(text.to_owned())
    )
}

/// A reply that calls `shell` with `command`.
fn shell_call(command: &str) -> String {
    let call = serde_json::json!({"name": "shell", "arguments": {"command": command}});
    format!("{{tool_calls: [{call}]}}")
}

#[test]
fn while_an_answer_streams_the_composer_is_the_last_row_under_a_working_status() {
    let s = Sandbox::new();
    let answer = words("streamed", 48);
    let model = script(
        &s,
        "stream.yaml",
        &format!(
            "turns:\n{}",
            turn(&yaml_pair("user", "go"), &slow_reply(&answer.join(" "), 80))
        ),
    );
    let Some(t) = chat(&s, &model) else { return };
    assert_composer_at_the_bottom(&t.screen());
    t.type_text("go");
    t.keys(&["Enter"]);
    let last = answer.last().unwrap();
    t.wait("the answer to begin", |screen| screen.contains(&answer[0]));
    // Look while it streams, each time the layout must hold.
    let mut looked = 0;
    loop {
        let screen = t.screen();
        if screen.contains(last) {
            break;
        }
        assert_composer_at_the_bottom(&screen);
        assert!(
            working(&screen),
            "no working status above the composer:\n{screen}"
        );
        let spinner = status(&screen).chars().next().unwrap_or(' ');
        assert!(
            ('\u{2800}'..='\u{28ff}').contains(&spinner),
            "the status row does not start with a spinner:\n{screen}"
        );
        looked += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(looked >= 3, "looked only {looked} times during the stream");
    let done = t.wait("the turn to end", idle);
    assert_composer_at_the_bottom(&done);
    let answered = done.find(&answer[0]).unwrap();
    assert!(
        done.find(last).unwrap() < done.rows.len() - 2,
        "the answer runs into the status row:\n{done}"
    );
    assert!(done.find("› go").unwrap() < answered, "{done}");
}

#[test]
fn text_typed_during_a_stream_stays_in_the_composer_and_enter_queues_it_as_the_next_message() {
    let s = Sandbox::new();
    let typed = "typed while streaming";
    let answer = words("answer", 48);
    let model = script(
        &s,
        "queue.yaml",
        &format!(
            "turns:\n{}{}",
            turn(&yaml_pair("user", "go"), &slow_reply(&answer.join(" "), 80)),
            turn(
                &yaml_pair("user", typed),
                &yaml_pair("text", "Second answer.")
            )
        ),
    );
    let Some(t) = chat(&s, &model) else { return };
    t.type_text("go");
    t.keys(&["Enter"]);
    let last = answer.last().unwrap();
    t.wait("the answer to begin", |screen| screen.contains(&answer[2]));
    t.type_text(typed);
    let screen = t.wait("the typed text in the composer", |screen| {
        composer(screen) == format!("› {typed}")
    });
    assert!(
        !screen.contains(last),
        "the answer ended before the test typed:\n{screen}"
    );
    let holding: Vec<_> = screen.filled().filter(|(_, r)| r.contains(typed)).collect();
    assert_eq!(
        holding.len(),
        1,
        "the typed text is outside the composer:\n{screen}"
    );
    assert!(working(&screen), "{screen}");

    t.keys(&["Enter"]);
    let queued = format!("queued › {typed}");
    let screen = t.wait("the queued row", |screen| screen.contains(&queued));
    assert!(
        !screen.contains(last),
        "the answer ended before Enter:\n{screen}"
    );
    assert!(
        !composer(&screen).contains(typed),
        "the composer still holds the queued text:\n{screen}"
    );
    assert!(
        screen.find(&queued).unwrap() < screen.rows.len() - 2,
        "the queued row is not above the status row:\n{screen}"
    );
    assert_composer_at_the_bottom(&screen);

    // After the answer it is sent, exactly as typed: the script's second
    // turn checks the message the model received.
    let done = t.wait("the second answer", |screen| {
        screen.contains("Second answer.") && idle(screen)
    });
    let sent = format!("› {typed}");
    let ended = done.find(last).unwrap();
    let user = done
        .rows
        .iter()
        .position(|r| r.trim_end() == sent)
        .unwrap_or_else(|| panic!("no user cell {sent:?}:\n{done}"));
    assert!(
        ended < user && user < done.find("Second answer.").unwrap(),
        "{done}"
    );
    assert!(!done.contains("queued ›"), "{done}");
    assert!(!done.contains("script-diverged"), "{done}");
}

#[test]
fn y_alone_approves_a_call_and_n_with_a_reason_denies_it_telling_the_model_why() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let reason = "not on a Friday";
    let model = script(
        &s,
        "approve.yaml",
        &format!(
            "turns:\n{}{}{}{}",
            turn(
                &yaml_pair("user", "go"),
                &shell_call("touch approved.txt && echo approved-run")
            ),
            turn(
                "{tool_result: {contains: approved-run}}",
                &yaml_pair("text", "Ran it.")
            ),
            turn(&yaml_pair("user", "again"), &shell_call("touch denied.txt")),
            turn(
                &format!("{{tool_result: {}}}", yaml_pair("contains", reason)),
                &yaml_pair("text", "Understood.")
            ),
        ),
    );
    let Some(t) = chat(&s, &model) else { return };
    t.type_text("go");
    t.keys(&["Enter"]);
    let asked = t.wait("the approval box", |screen| {
        screen.contains("[y] yes, once") && screen.contains("touch approved.txt")
    });
    let title = asked.find("Allow: ").expect("the box says what it allows");
    assert!(
        asked.rows[title].contains("touch approved.txt && echo approved-run"),
        "the box shows the whole command:\n{asked}"
    );
    assert_composer_at_the_bottom(&asked);

    // `y`, no Enter.
    t.keys(&["y"]);
    let done = t.wait("the approved call's answer", |screen| {
        screen.contains("Ran it.") && idle(screen)
    });
    assert!(
        done.contains("✓ shell touch approved.txt"),
        "no ✓ line for the call:\n{done}"
    );
    assert!(s.repo().join("approved.txt").exists());
    assert!(!done.contains("Allow: "), "the box stayed:\n{done}");
    assert!(
        composer(&done).contains(IDLE),
        "the `y` reached the composer:\n{done}"
    );

    // `n`, a reason, Enter: the model reads the reason.
    t.type_text("again");
    t.keys(&["Enter"]);
    t.wait("the second approval box", |screen| {
        screen.contains("[y] yes, once") && screen.contains("touch denied.txt")
    });
    t.keys(&["n"]);
    t.wait("the reason prompt", |screen| screen.contains("why not?"));
    t.type_text(reason);
    t.wait("the reason being typed", |screen| {
        screen.contains(&format!("why not? {reason}"))
    });
    t.keys(&["Enter"]);
    let done = t.wait("the answer to the denial", |screen| {
        screen.contains("Understood.") && idle(screen)
    });
    assert!(!s.repo().join("denied.txt").exists());
    let line = done.find("shell touch denied.txt").unwrap();
    assert!(
        done.rows[line].contains("denied"),
        "the call's line does not say it was denied:\n{done}"
    );
    assert!(!done.contains("script-diverged"), "{done}");
}

/// Whether a process runs `sleep SECONDS` with this exact argument.
fn sleeping(seconds: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            args.len() >= 2 && args[0].ends_with(b"sleep") && args[1] == seconds.as_bytes()
        })
    })
}

/// A `sleep` argument no other test (or process) uses: 30.<pid><n>.
fn unique_seconds() -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "30.{}{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

#[test]
fn ctrl_c_cancels_the_turn_stops_its_command_and_the_chat_takes_the_next_message() {
    let s = Sandbox::new();
    let seconds = unique_seconds();
    let model = script(
        &s,
        "cancel.yaml",
        &format!(
            "turns:\n{}{}",
            turn(
                &yaml_pair("user", "wait"),
                &shell_call(&format!("sleep {seconds}; echo never"))
            ),
            turn(
                &yaml_pair("user", "still there?"),
                &yaml_pair("text", "Still here.")
            ),
        ),
    );
    let Some(t) = chat(&s, &model) else { return };
    t.type_text("wait");
    t.keys(&["Enter"]);
    let running = format!("shell sleep {seconds}");
    t.wait("the command's running line", |screen| {
        screen.contains(&running) && working(screen)
    });
    let started = std::time::Instant::now();
    while !sleeping(&seconds) {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the command never started:\n{}",
            t.screen()
        );
        std::thread::sleep(Duration::from_millis(20));
    }

    t.keys(&["C-c"]);
    let cancelled = t.wait_for(Duration::from_secs(5), "a `cancelled` notice", |screen| {
        notice(screen, "cancelled")
    });
    assert!(
        !cancelled.rows.iter().any(|r| r.trim() == "never"),
        "the command finished:\n{cancelled}"
    );
    let started = std::time::Instant::now();
    while sleeping(&seconds) {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "`sleep {seconds}` still runs after the cancel"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let screen = t.wait("the composer to take a message", idle);
    assert_composer_at_the_bottom(&screen);
    assert!(!t.exited(), "Ctrl-C during a turn ended the chat");

    t.type_text("still there?");
    t.keys(&["Enter"]);
    let done = t.wait("the next answer", |screen| {
        screen.contains("Still here.") && idle(screen)
    });
    assert!(!done.contains("script-diverged"), "{done}");
}

/// Every word of `words`, in order, in the screen's rows read top down.
fn assert_words_in_order(screen: &Screen, words: &[String]) {
    let text: Vec<&str> = screen
        .rows
        .iter()
        .flat_map(|r| r.split_whitespace())
        .collect();
    let mut at = 0;
    for word in words {
        match text[at..].iter().position(|w| w == word) {
            Some(i) => at += i + 1,
            None => panic!("{word} is missing or out of order (cut by the resize?):\n{screen}"),
        }
    }
}

#[test]
fn a_resize_redraws_the_layout_the_composer_stays_last_and_the_answer_rewraps() {
    let s = Sandbox::new();
    let answer = words("resized", 48);
    let model = script(
        &s,
        "resize.yaml",
        &format!(
            "turns:\n{}",
            turn(&yaml_pair("user", "go"), &slow_reply(&answer.join(" "), 60))
        ),
    );
    let Some(t) = chat(&s, &model) else { return };
    t.type_text("go");
    t.keys(&["Enter"]);
    let last = answer.last().unwrap();
    let wide = t.wait("the answer to fill a row", |screen| {
        screen.contains(&answer[12])
    });
    assert!(!wide.contains(last), "the answer ended too soon:\n{wide}");

    // Narrower and shorter during the stream.
    t.resize(60, 20);
    let narrow = t.wait("the end of the answer, 60 columns wide", |screen| {
        screen.rows.len() == 20 && screen.contains(last) && idle(screen)
    });
    assert_composer_at_the_bottom(&narrow);
    assert!(narrow.widest() <= 60, "{narrow}");
    assert_words_in_order(&narrow, &answer);
    let first = narrow.find(&answer[0]).unwrap();
    let end = narrow.find(last).unwrap();
    // 480 characters need at least 8 rows of 60 columns.
    assert!(end - first >= 7, "the answer did not re-wrap:\n{narrow}");

    // Wider and taller after the turn: everything moves down with the
    // composer.
    t.resize(90, 28);
    let grown = t.wait("the screen redrawn at 90×28", |screen| {
        screen.rows.len() == 28 && screen.last_filled().0 == 27
    });
    assert_composer_at_the_bottom(&grown);
    assert!(composer(&grown).contains(IDLE), "{grown}");
    assert!(grown.widest() <= 90, "{grown}");
    assert_words_in_order(&grown, &answer);
    let end = grown.find(last).unwrap();
    assert!(end >= grown.rows.len() - 4, "{grown}");
}

#[test]
fn ctrl_d_on_an_empty_composer_restores_the_terminal_and_says_how_to_continue() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "bye.yaml",
        &format!(
            "turns:\n{}",
            turn(&yaml_pair("user", "hi"), &yaml_pair("text", "Hello there."))
        ),
    );
    let Some(t) = chat(&s, &model) else { return };
    t.type_text("hi");
    t.keys(&["Enter"]);
    t.wait("the answer", |screen| {
        screen.contains("Hello there.") && idle(screen)
    });

    // Not while the composer holds a draft: the draft stays.
    t.type_text("draft");
    t.wait("the draft", |screen| composer(screen) == "› draft");
    t.keys(&["C-d"]);
    t.type_text("y");
    t.wait("the draft, still there", |screen| {
        composer(screen) == "› drafty"
    });
    assert!(!t.exited(), "Ctrl-D with a draft ended the chat");
    for _ in 0.."drafty".len() {
        t.keys(&["BSpace"]);
    }
    t.wait("the empty composer", |screen| {
        composer(screen).contains(IDLE)
    });

    t.keys(&["C-d"]);
    let status = t.wait_exit(Duration::from_secs(10));
    assert_eq!(status, 0, "{}", t.scrollback());
    let after = t.scrollback();
    assert!(
        after.contains("saved; continue it with `evoflux chat --session "),
        "{after}"
    );
    // The full screen is gone: the terminal shows what was there before
    // (nothing) and the line after.
    let screen = t.screen();
    assert!(
        !screen.contains(IDLE) && !screen.contains("Hello there."),
        "the chat's screen was left behind:\n{screen}"
    );
}
