#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The chat screen's own costs, without a terminal: the first frame of a
//! resumed 2,000-message session, a frame while an answer streams into
//! it, and a key's handling and redraw. Prints figures; asserts nothing.
//! `cargo bench -p evoflux-tui --bench screen`.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use evoflux_graph::tool::{FRAMEWORK_TOOLS, framework_tool};
use evoflux_protocol::events::ToolStatus;
use evoflux_protocol::message::ToolCall;
use evoflux_protocol::{Event, Message, Usage};
use evoflux_tui::tools::ToolShapes;
use evoflux_tui::{App, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use serde_json::json;

/// 2,000 messages as a long coding session has them: questions, answers
/// in Markdown with code, reads and their results.
fn conversation() -> Vec<Message> {
    let mut out = Vec::new();
    for i in 0..400 {
        out.push(Message::user(format!(
            "Step {i}: look at module {i} and fix what is wrong"
        )));
        out.push(Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("r{i}"),
                name: "read".into(),
                arguments: json!({"path": format!("src/m{i}.rs"), "offset": 1, "limit": 80}),
            }],
            provider_items: Vec::new(),
        });
        out.push(Message::Tool {
            tool_call_id: format!("r{i}"),
            content: "fn f() {}\n".repeat(40),
            is_error: false,
            media: Vec::new(),
        });
        out.push(Message::Assistant {
            content: String::new(),
            tool_calls: vec![ToolCall {
                id: format!("s{i}"),
                name: "shell".into(),
                arguments: json!({"command": "cargo test -q"}),
            }],
            provider_items: Vec::new(),
        });
        out.push(Message::Assistant {
            content: format!(
                "## Module {i}\n\nThe **parser** in `m{i}.rs` drops the last token. A fix:\n\n\
                 ```rust\nfn parse(tokens: &[Token]) -> Tree {{\n    tokens.iter().fold(Tree::new(), Tree::push)\n}}\n```\n\n\
                 - it keeps the last token\n- it needs no allocation\n\n| case | before | after |\n|---|---|---|\n| empty | ok | ok |\n| one | lost | kept |\n"
            ),
            tool_calls: Vec::new(),
            provider_items: Vec::new(),
        });
    }
    out
}

fn shapes() -> ToolShapes {
    let defs: Vec<_> = FRAMEWORK_TOOLS
        .iter()
        .filter_map(|name| framework_tool(name))
        .collect();
    ToolShapes::new(&defs)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn p95(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[(v.len() * 95 / 100).min(v.len() - 1)]
}

fn main() {
    let messages = conversation();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();

    // Resume: build the screen from the stored messages and draw it.
    let started = Instant::now();
    let mut app = App::new(Theme::dark());
    app.open_session(shapes(), &messages, Usage::default());
    let opened = started.elapsed();
    terminal.draw(|f| app.draw(f)).unwrap();
    let first_frame = started.elapsed();
    println!(
        "resume of {} messages: open {:.1} ms, first frame at {:.1} ms",
        messages.len(),
        opened.as_secs_f64() * 1e3,
        first_frame.as_secs_f64() * 1e3
    );

    // Streaming into it: a token, then a frame, as the chat draws at most
    // one frame per 16 ms (here every token gets one: the worst case).
    app.turn_started();
    app.apply(&Event::TurnStarted {
        session_id: "s".into(),
        input: Some("next".into()),
        after_entry: None,
    });
    let answer = "The change keeps **every** token and passes `cargo test`; ".repeat(20);
    let mut frames = Vec::new();
    let cpu = Instant::now();
    let tokens: Vec<&str> = answer.split_inclusive(' ').collect();
    for token in &tokens {
        let t = Instant::now();
        app.apply(&Event::MessageDelta {
            text: (*token).to_owned(),
        });
        terminal.draw(|f| app.draw(f)).unwrap();
        frames.push(t.elapsed());
    }
    let per_token = cpu.elapsed() / tokens.len() as u32;
    println!(
        "streaming {} tokens into it: frame median {:.2} ms, p95 {:.2} ms; {:.2} ms per token (token + frame)",
        tokens.len(),
        median(frames.clone()).as_secs_f64() * 1e3,
        p95(frames).as_secs_f64() * 1e3,
        per_token.as_secs_f64() * 1e3
    );

    // A call that runs: its clock redraws its cell every frame.
    app.apply(&Event::ToolStarted {
        call_id: "x".into(),
        tool: "shell".into(),
        arguments: json!({"command": "cargo build"}),
    });
    let mut ticks = Vec::new();
    for _ in 0..50 {
        let t = Instant::now();
        terminal.draw(|f| app.draw(f)).unwrap();
        ticks.push(t.elapsed());
    }
    println!(
        "a tick while a call runs: median {:.2} ms",
        median(ticks).as_secs_f64() * 1e3
    );
    app.apply(&Event::ToolEnded {
        call_id: "x".into(),
        tool: "shell".into(),
        status: ToolStatus::Completed,
        is_error: false,
        content: "ok".into(),
        metadata: None,
        media: Vec::new(),
    });

    // A key typed while the answer streams: handled, then drawn.
    let mut keys = Vec::new();
    for i in 0..200 {
        let c = char::from(b'a' + (i % 26) as u8);
        let t = Instant::now();
        app.key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        terminal.draw(|f| app.draw(f)).unwrap();
        keys.push(t.elapsed());
    }
    println!(
        "keystroke to frame (in process): median {:.3} ms, p95 {:.3} ms",
        median(keys.clone()).as_secs_f64() * 1e3,
        p95(keys).as_secs_f64() * 1e3
    );
}
