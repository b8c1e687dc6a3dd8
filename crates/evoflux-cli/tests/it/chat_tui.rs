#![allow(clippy::unwrap_used, clippy::expect_used)]

//! `evoflux chat` at a real terminal: the binary runs in a pseudo-terminal
//! that is its controlling terminal (so Ctrl-C is a real SIGINT during a
//! turn and a key at the prompt), with the scripted provider.

use crate::common;

use std::time::Duration;

use common::{Sandbox, script};
use rexpect::session::PtySession;

const ENTER: &str = "\r";
const UP: &str = "\x1b[A";

/// `evoflux chat ARGS` in a pseudo-terminal, in the sandbox.
fn chat_tty(s: &Sandbox, args: &[&str], env: &[(&str, &str)]) -> PtySession {
    let mut all = vec!["chat", "--plain"];
    all.extend_from_slice(args);
    let mut command = s.command(&all);
    command
        .env("PATH", std::env::var("PATH").unwrap())
        .env("TERM", "xterm-256color");
    for (k, v) in env {
        command.env(k, v);
    }
    rexpect::session::spawn_command(command, Some(20_000)).unwrap()
}

/// Waits for `needle`, returning what came before it. rexpect reads the
/// terminal a byte per `char`; needles and text are converted both ways.
fn expect(p: &mut PtySession, needle: &str) -> String {
    let raw: String = needle.bytes().map(char::from).collect();
    decode(&p.exp_string(&raw).unwrap())
}

fn decode(raw: &str) -> String {
    let bytes: Vec<u8> = raw.chars().map(|c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Waits for the prompt, returning what came before it.
fn prompt(p: &mut PtySession) -> String {
    expect(p, "› ")
}

fn send(p: &mut PtySession, keys: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
}

/// Ends the chat with Ctrl-D and returns the rest of its output.
fn finish(mut p: PtySession) -> String {
    send(&mut p, "\x04");
    let rest = decode(&p.exp_eof().unwrap());
    assert!(rest.contains("saved; continue it with"), "{rest}");
    rest
}

fn user_turn(user: &str, reply: &str) -> String {
    format!(
        "  - expect: {{user: {}}}\n    reply: {{text: {}}}\n",
        serde_json::Value::String(user.to_owned()),
        serde_json::Value::String(reply.to_owned())
    )
}

#[test]
fn up_recalls_history_across_chats_and_a_pasted_block_is_one_message() {
    let s = Sandbox::new();
    let pasted = "line one\nline two\n\nline four";
    let model = script(
        &s,
        "history.yaml",
        &format!(
            "turns:\n{}{}{}",
            user_turn("first message", "One."),
            user_turn("first message", "Again."),
            user_turn(pasted, "Pasted.")
        ),
    );
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("first message{ENTER}"));
    expect(&mut p, "One.");
    prompt(&mut p);
    // Up recalls it.
    send(&mut p, &format!("{UP}{ENTER}"));
    expect(&mut p, "Again.");
    prompt(&mut p);
    // A bracketed paste: four lines, a blank one among them, one message.
    send(&mut p, &format!("\x1b[200~{pasted}\x1b[201~{ENTER}"));
    expect(&mut p, "Pasted.");
    prompt(&mut p);
    finish(p);

    // A new chat in the same repository recalls the pasted block, whole,
    // from the history file.
    let model = script(
        &s,
        "next.yaml",
        &format!("turns:\n{}", user_turn(pasted, "Remembered.")),
    );
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("{UP}{ENTER}"));
    expect(&mut p, "Remembered.");
    prompt(&mut p);
    finish(p);
}

/// Whether any process runs `sleep SECONDS` with this exact argument.
fn sleeping(seconds: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline")).is_ok_and(|c| {
            let args: Vec<&[u8]> = c.split(|b| *b == 0).collect();
            args.len() >= 2 && args[0].ends_with(b"sleep") && args[1] == seconds.as_bytes()
        })
    })
}

#[test]
fn ctrl_c_mid_turn_cancels_it_stops_its_command_and_the_session_goes_on() {
    let s = Sandbox::new();
    let call = serde_json::json!({"name": "shell", "arguments": {"command": "sleep 313"}});
    let model = script(
        &s,
        "cancel.yaml",
        &format!(
            "turns:\n  - expect: {{user: wait}}\n    reply:\n      tool_calls:\n        - {call}\n{}",
            user_turn("still there?", "Still here.")
        ),
    );
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("wait{ENTER}"));
    expect(&mut p, "→ shell");
    let started = std::time::Instant::now();
    while !sleeping("313") {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the command never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Ctrl-C: the terminal's interrupt character, a SIGINT to evoflux.
    send(&mut p, "\x03");
    expect(&mut p, "turn cancelled");
    prompt(&mut p);
    assert!(!sleeping("313"), "the cancelled turn's command is gone");
    // The session is still usable, and the chat did not exit.
    send(&mut p, &format!("still there?{ENTER}"));
    expect(&mut p, "Still here.");
    prompt(&mut p);
    finish(p);
}

#[test]
fn always_for_this_session_is_not_asked_again_and_show_expands_a_tool_output() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let first = serde_json::json!({"name": "shell", "arguments": {"command": "printf 'alpha\\nbeta\\ngamma\\ndelta\\n'"}});
    let second =
        serde_json::json!({"name": "shell", "arguments": {"command": "printf 'epsilon\\n'"}});
    let model = script(
        &s,
        "approve.yaml",
        &format!(
            "turns:\n  - expect: {{user: first}}\n    reply:\n      tool_calls:\n        - {first}\n  - expect: {{tool_result: {{contains: delta}}}}\n    reply: {{text: Listed.}}\n  - expect: {{user: second}}\n    reply:\n      tool_calls:\n        - {second}\n  - expect: {{tool_result: {{contains: epsilon}}}}\n    reply: {{text: Printed again.}}\n"
        ),
    );
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("first{ENTER}"));
    expect(&mut p, "approve `shell`");
    expect(&mut p, "approve? ");
    send(&mut p, &format!("s{ENTER}"));
    // The tool line is a summary with the number that expands it.
    let line = without_sgr(&expect(&mut p, "/show 1"));
    assert!(line.contains("✓ shell · [Succeeded] (+"), "{line:?}");
    let summary = line.rsplit('✓').next().unwrap_or_default();
    assert!(
        !summary.contains("delta"),
        "the output waits for /show: {line:?}"
    );
    expect(&mut p, "Listed.");
    prompt(&mut p);
    send(&mut p, &format!("second{ENTER}"));
    let between = expect(&mut p, "Printed again.");
    assert!(
        !between.contains("approve `shell`"),
        "asked again: {between}"
    );
    prompt(&mut p);
    send(&mut p, &format!("/show 1{ENTER}"));
    let shown = prompt(&mut p);
    for word in ["alpha", "beta", "gamma", "delta"] {
        assert!(shown.contains(word), "{shown}");
    }
    finish(p);
}

#[test]
fn a_resumed_chat_replays_its_conversation_before_the_prompt() {
    let s = Sandbox::new();
    let model = script(
        &s,
        "resume.yaml",
        &format!(
            "turns:\n{}{}",
            user_turn("hello there", "General Kenobi."),
            user_turn("and again", "Back again.")
        ),
    );
    let ran = common::run(
        &s,
        &[
            "--json",
            "run",
            "--mode",
            "coding",
            "--model",
            &model,
            "hello there",
        ],
    );
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let id = common::session_id(&common::events(&ran));
    // The chat is a new process: its script starts where the session goes on.
    let model = script(
        &s,
        "resumed.yaml",
        &format!("turns:\n{}", user_turn("and again", "Back again.")),
    );
    let mut p = chat_tty(&s, &["--session", &id, "--model", &model], &[]);
    let before = prompt(&mut p);
    let asked = before
        .find("hello there")
        .expect("the user's message is replayed");
    let answered = before
        .find("General Kenobi.")
        .expect("the answer is replayed");
    assert!(asked < answered, "{before}");
    send(&mut p, &format!("and again{ENTER}"));
    expect(&mut p, "Back again.");
    prompt(&mut p);
    finish(p);
}

/// `text` without its SGR sequences.
fn without_sgr(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        match after.find(|c: char| !(c.is_ascii_digit() || c == ';')) {
            Some(j) if after[j..].starts_with('m') => rest = &after[j + 1..],
            _ => {
                out.push_str("\x1b[");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Select Graphic Rendition sequences (`ESC [ … m`): what styles text.
fn has_sgr(text: &str) -> bool {
    text.match_indices("\x1b[").any(|(i, _)| {
        text[i + 2..]
            .chars()
            .find(|c| !(c.is_ascii_digit() || *c == ';'))
            == Some('m')
    })
}

#[test]
fn markdown_is_styled_at_a_terminal_and_no_color_turns_every_style_off() {
    let reply = "# Title\\n\\nSome **bold** and `code`.\\n\\n```rust\\nfn main() {}\\n```\\n";
    let yaml = format!("turns:\n  - reply: {{text: \"{reply}\"}}\n");
    for no_color in [false, true] {
        let s = Sandbox::new();
        let model = script(&s, "md.yaml", &yaml);
        let env: &[(&str, &str)] = if no_color { &[("NO_COLOR", "1")] } else { &[] };
        let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], env);
        prompt(&mut p);
        send(&mut p, &format!("render{ENTER}"));
        let shown = prompt(&mut p);
        assert!(shown.contains("Title"), "{shown:?}");
        assert!(shown.contains("main"), "{shown:?}");
        if no_color {
            assert!(!has_sgr(&shown), "NO_COLOR output is styled: {shown:?}");
            assert!(
                shown.contains("**bold**"),
                "plain text is the Markdown: {shown:?}"
            );
        } else {
            assert!(shown.contains("\x1b[1;36m# Title"), "{shown:?}");
            assert!(
                shown.contains("\x1b[34mfn"),
                "code is highlighted: {shown:?}"
            );
        }
        let rest = finish(p);
        if no_color {
            assert!(!has_sgr(&rest), "{rest:?}");
        }
    }
}

#[test]
fn slash_commands_are_the_terminal_s_not_the_model_s() {
    let s = Sandbox::new();
    // A script with no turns: any message reaching the model would fail.
    let model = script(&s, "none.yaml", "turns: []\n");
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("/help{ENTER}"));
    let help = prompt(&mut p);
    for command in ["/exit", "/new", "/resume", "/model", "/show", "/diff"] {
        assert!(help.contains(command), "{help}");
    }
    send(&mut p, &format!("/frobnicate{ENTER}"));
    assert!(prompt(&mut p).contains("unknown command /frobnicate"));
    send(&mut p, &format!("/tools{ENTER}"));
    assert!(prompt(&mut p).contains("shell"));
    send(&mut p, &format!("/cost{ENTER}"));
    assert!(prompt(&mut p).contains("0 model calls"));
    send(&mut p, &format!("/compact{ENTER}"));
    assert!(prompt(&mut p).contains("summarized at the next model call"));
    send(&mut p, &format!("/sessions{ENTER}"));
    assert!(prompt(&mut p).contains("/resume ID"));
    // Ctrl-C at the prompt asks for a second one; /exit ends the chat.
    send(&mut p, "\x03");
    assert!(prompt(&mut p).contains("Ctrl-C again"));
    send(&mut p, &format!("/exit{ENTER}"));
    let rest = decode(&p.exp_eof().unwrap());
    assert!(rest.contains("saved; continue it with"), "{rest}");
}

#[test]
fn ctrl_c_at_an_approval_denies_the_call_and_cancels_the_turn_not_the_chat() {
    let s = Sandbox::new();
    s.user("config.toml", "[approval]\nshell = \"always\"\n");
    let touch = serde_json::json!({"name": "shell", "arguments": {"command": "touch never.txt"}});
    let model = script(
        &s,
        "deny.yaml",
        &format!(
            "turns:\n  - expect: {{user: go}}\n    reply:\n      tool_calls:\n        - {touch}\n{}",
            user_turn("after", "Still chatting.")
        ),
    );
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("go{ENTER}"));
    expect(&mut p, "approve? ");
    send(&mut p, "\x03");
    expect(&mut p, "turn cancelled");
    prompt(&mut p);
    assert!(!s.repo().join("never.txt").exists());
    send(&mut p, &format!("after{ENTER}"));
    expect(&mut p, "Still chatting.");
    prompt(&mut p);
    finish(p);
}

/// The current session's row of `/sessions`: id, mode, lead, roots.
fn current_row(p: &mut PtySession) -> String {
    send(p, &format!("/sessions{ENTER}"));
    let listed = without_sgr(&prompt(p));
    listed
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("* "))
        .unwrap_or_else(|| panic!("no current session in {listed:?}"))
        .trim()
        .to_owned()
}

/// The full id of the current session.
fn current_session(p: &mut PtySession) -> String {
    current_row(p)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn new_resume_and_model_switch_from_the_prompt() {
    let s = Sandbox::new();
    // Every session opens the script anew: one reply, whatever was asked.
    let model = script(&s, "hello.yaml", "turns:\n  - reply: {text: Hello.}\n");
    let other = script(&s, "other.yaml", "turns:\n  - reply: {text: Switched.}\n");
    let mut p = chat_tty(&s, &["--mode", "coding", "--model", &model], &[]);
    prompt(&mut p);
    send(&mut p, &format!("first session{ENTER}"));
    expect(&mut p, "Hello.");
    prompt(&mut p);
    let first = current_session(&mut p);
    send(&mut p, &format!("/new{ENTER}"));
    expect(&mut p, "new session");
    prompt(&mut p);
    // A new session like the current one: Coding, on the same repository.
    let row = current_row(&mut p);
    assert!(row.contains("coding"), "{row}");
    assert!(
        row.ends_with(s.repo().file_name().unwrap().to_str().unwrap()),
        "{row}"
    );
    let second = current_session(&mut p);
    assert_ne!(first, second);
    send(&mut p, &format!("second session{ENTER}"));
    expect(&mut p, "Hello.");
    prompt(&mut p);
    // Back to the first: its conversation is replayed.
    send(&mut p, &format!("/resume {first}{ENTER}"));
    let replayed = prompt(&mut p);
    assert!(replayed.contains("first session"), "{replayed}");
    assert!(!replayed.contains("second session"), "{replayed}");
    assert_eq!(current_session(&mut p), first);
    // A model switch is recorded and used from the next message.
    send(&mut p, &format!("/model {other}{ENTER}"));
    expect(&mut p, "model switched");
    prompt(&mut p);
    send(&mut p, &format!("again{ENTER}"));
    expect(&mut p, "Switched.");
    prompt(&mut p);
    // A session that cannot be opened leaves the current one in place.
    send(&mut p, &format!("/resume not-a-session{ENTER}"));
    expect(&mut p, "still in session");
    prompt(&mut p);
    assert_eq!(current_session(&mut p), first);
    finish(p);
}

#[test]
fn diff_shows_the_working_tree_of_the_session_s_repository() {
    let s = Sandbox::new();
    let repo = s.repo();
    std::fs::remove_dir_all(repo.join(".git")).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["init", "-q"]);
    std::fs::write(repo.join("notes.txt"), "old line\n").unwrap();
    git(&["add", "notes.txt"]);
    git(&["commit", "-qm", "init"]);
    std::fs::write(repo.join("notes.txt"), "new line\n").unwrap();
    let model = script(&s, "none.yaml", "turns: []\n");
    let mut p = chat_tty(
        &s,
        &["--mode", "coding", "--model", &model],
        &[("NO_COLOR", "1")],
    );
    prompt(&mut p);
    send(&mut p, &format!("/diff{ENTER}"));
    let diff = prompt(&mut p);
    assert!(diff.contains("M notes.txt"), "{diff}");
    assert!(
        diff.contains("-old line") && diff.contains("+new line"),
        "{diff}"
    );
    finish(p);
}
