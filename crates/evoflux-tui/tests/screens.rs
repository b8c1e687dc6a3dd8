#![allow(clippy::unwrap_used, clippy::expect_used)]

//! The chat screen in each of its states, drawn on ratatui's `TestBackend`
//! and compared as text (insta); and what keys ask of the session in each.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use evoflux_graph::tool::{FRAMEWORK_TOOLS, framework_tool};
use evoflux_protocol::events::{DecidedBy, DecisionKind, ToolStatus, TurnStatus};
use evoflux_protocol::metadata::{FileChange, ResultMetadata};
use evoflux_protocol::{Event, Message, Usage};
use evoflux_tui::app::{
    Action, ApprovalAnswer, ApprovalPrompt, ApprovalSubject, PickerKind, Remembers, screen_text,
};
use evoflux_tui::picker::PickerItem;
use evoflux_tui::tools::ToolShapes;
use evoflux_tui::{App, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use serde_json::json;

fn shapes() -> ToolShapes {
    let defs: Vec<_> = FRAMEWORK_TOOLS
        .iter()
        .filter_map(|name| framework_tool(name))
        .collect();
    ToolShapes::new(&defs)
}

fn app() -> App {
    let mut app = App::new(Theme::plain());
    app.open_session(shapes(), &[], Usage::default());
    let s = app.status();
    s.session_id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into();
    s.mode = "coding".into();
    s.lead = "coder".into();
    s.model = "openai:gpt-5".into();
    app
}

/// The screen as text; the spinner's frame and running clocks, which
/// depend on the time the test took, are masked.
fn screen(app: &mut App, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|f| app.draw(f)).unwrap();
    let rows = screen_text(terminal.backend().buffer());
    let text = rows.join("\n");
    let masked: String = text
        .chars()
        .map(|c| match c {
            '⠋' | '⠙' | '⠹' | '⠸' | '⠼' | '⠴' | '⠦' | '⠧' | '⠇' | '⠏' => '*',
            c => c,
        })
        .collect();
    regex_lite_mask(&masked)
}

/// `working 3s` and `(2 s)` read `working Ns` and `(N s)`.
fn regex_lite_mask(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("working ") {
        out.push_str(&rest[..i + "working ".len()]);
        rest = &rest[i + "working ".len()..];
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 {
            out.push('N');
            rest = &rest[digits..];
        }
    }
    out.push_str(rest);
    out
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

fn type_text(app: &mut App, text: &str) -> Vec<Action> {
    text.chars()
        .filter_map(|c| app.key(key(KeyCode::Char(c))))
        .collect()
}

fn turn_started(app: &mut App, input: &str) {
    app.turn_started();
    app.apply(&Event::TurnStarted {
        session_id: "s".into(),
        input: Some(input.into()),
        after_entry: None,
    });
}

fn delta(app: &mut App, text: &str) {
    app.apply(&Event::MessageDelta { text: text.into() });
}

fn completed(app: &mut App) -> Option<String> {
    app.apply(&Event::TurnCompleted {
        status: TurnStatus::Completed,
        text: String::new(),
        output: None,
        usage: Usage::default(),
        session_usage: Usage {
            requests: 2,
            input_tokens: 2_400,
            output_tokens: 120,
            ..Usage::default()
        },
    });
    app.turn_ended()
}

fn started(app: &mut App, id: &str, tool: &str, args: serde_json::Value) {
    app.apply(&Event::ToolStarted {
        call_id: id.into(),
        tool: tool.into(),
        arguments: args,
    });
}

fn ended(app: &mut App, id: &str, tool: &str, content: &str, metadata: Option<ResultMetadata>) {
    app.apply(&Event::ToolEnded {
        call_id: id.into(),
        tool: tool.into(),
        status: ToolStatus::Completed,
        is_error: false,
        content: content.into(),
        metadata,
        media: Vec::new(),
    });
}

#[test]
fn an_empty_chat_is_the_composer_and_the_status_line() {
    let mut app = app();
    insta::assert_snapshot!(screen(&mut app, 80, 8));
}

#[test]
fn while_an_answer_streams_the_composer_stays_last_and_keeps_typed_text() {
    let mut app = app();
    assert_eq!(
        type_text(&mut app, "explain"),
        Vec::<Action>::new(),
        "typing sends nothing"
    );
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Some(Action::Submit("explain".into()))
    );
    turn_started(&mut app, "explain");
    delta(&mut app, "The parser reads **tokens** and ");
    // Typed while the answer streams: in the composer, not in the answer.
    assert!(type_text(&mut app, "and then?").is_empty());
    delta(&mut app, "builds a tree.");
    let text = screen(&mut app, 60, 12);
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.last().unwrap(), &"› and then?");
    assert!(rows[rows.len() - 2].contains("working"));
    assert!(!text.contains("tokens and and then"));
    insta::assert_snapshot!(text);
}

#[test]
fn enter_during_a_turn_queues_and_the_end_of_the_turn_hands_it_back() {
    let mut app = app();
    turn_started(&mut app, "first");
    type_text(&mut app, "second");
    assert_eq!(app.key(key(KeyCode::Enter)), None, "queued, not sent");
    type_text(&mut app, "third");
    assert_eq!(app.key(key(KeyCode::Enter)), None);
    let text = screen(&mut app, 60, 10);
    assert!(text.contains("queued › second"), "{text}");
    assert!(text.contains("queued › third"), "{text}");
    insta::assert_snapshot!(text);
    assert_eq!(completed(&mut app), Some("second".into()));
    app.turn_started();
    assert_eq!(completed(&mut app), Some("third".into()));
    assert_eq!(completed(&mut app), None);
}

#[test]
fn esc_and_ctrl_c_cancel_a_running_turn_and_ctrl_c_twice_ends_an_idle_chat() {
    let mut app = app();
    turn_started(&mut app, "go");
    assert_eq!(app.key(key(KeyCode::Esc)), Some(Action::Cancel));
    assert_eq!(app.key(ctrl('c')), Some(Action::Cancel));
    completed(&mut app);
    type_text(&mut app, "draft");
    assert_eq!(app.key(ctrl('c')), None, "clears the draft");
    assert!(!screen(&mut app, 60, 6).contains("draft"));
    assert_eq!(app.key(ctrl('c')), None, "arms");
    assert!(screen(&mut app, 60, 6).contains("Ctrl-C again"));
    assert_eq!(app.key(ctrl('c')), Some(Action::Quit));
    let mut app = self::app();
    assert_eq!(app.key(ctrl('d')), Some(Action::Quit));
}

fn shell_prompt(remembers: Remembers) -> ApprovalPrompt {
    ApprovalPrompt {
        call_id: "c1".into(),
        tool: "shell".into(),
        arguments: json!({"command": "cargo test --workspace", "workdir": "crates/core"}),
        subject: ApprovalSubject::Call,
        workdir: Some("/repo/crates/core".into()),
        remembers,
    }
}

#[test]
fn an_approval_shows_the_command_and_its_folder_and_y_alone_approves() {
    let mut app = app();
    turn_started(&mut app, "test it");
    started(
        &mut app,
        "c1",
        "shell",
        json!({"command": "cargo test --workspace", "workdir": "crates/core"}),
    );
    app.apply(&Event::ApprovalRequested {
        call_id: "c1".into(),
        tool: "shell".into(),
        outside_sandbox: None,
        control: None,
        workdir: None,
        sampling: None,
    });
    app.ask_approval(shell_prompt(Remembers::SessionOrWorkspace));
    let text = screen(&mut app, 80, 16);
    assert!(text.contains("cargo test --workspace"), "{text}");
    assert!(text.contains("in /repo/crates/core"), "{text}");
    insta::assert_snapshot!(text);
    assert_eq!(
        app.key(key(KeyCode::Char('y'))),
        Some(Action::Decide {
            call_id: "c1".into(),
            answer: ApprovalAnswer::Once
        })
    );
    assert!(!screen(&mut app, 80, 16).contains("[y] yes"));
}

#[test]
fn approval_keys_offer_only_what_the_subject_allows() {
    let mut app = app();
    app.ask_approval(shell_prompt(Remembers::Never));
    assert!(!screen(&mut app, 80, 12).contains("[a]"));
    assert_eq!(app.key(key(KeyCode::Char('a'))), None);
    assert_eq!(app.key(key(KeyCode::Char('w'))), None);
    app.ask_approval(shell_prompt(Remembers::SessionOrWorkspace));
    assert_eq!(
        app.key(key(KeyCode::Char('w'))),
        Some(Action::Decide {
            call_id: "c1".into(),
            answer: ApprovalAnswer::ForWorkspace
        })
    );
    app.ask_approval(shell_prompt(Remembers::Session));
    assert_eq!(
        app.key(key(KeyCode::Char('a'))),
        Some(Action::Decide {
            call_id: "c1".into(),
            answer: ApprovalAnswer::ForSession
        })
    );
    app.ask_approval(shell_prompt(Remembers::Session));
    assert_eq!(
        app.key(key(KeyCode::Esc)),
        Some(Action::Decide {
            call_id: "c1".into(),
            answer: ApprovalAnswer::Cancel
        })
    );
}

#[test]
fn n_asks_why_and_enter_sends_the_reason() {
    let mut app = app();
    app.ask_approval(shell_prompt(Remembers::SessionOrWorkspace));
    assert_eq!(app.key(key(KeyCode::Char('n'))), None);
    type_text(&mut app, "use nextest");
    let text = screen(&mut app, 80, 12);
    assert!(text.contains("why not? use nextest"), "{text}");
    insta::assert_snapshot!(text);
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Some(Action::Decide {
            call_id: "c1".into(),
            answer: ApprovalAnswer::Deny(Some("use nextest".into()))
        })
    );
    app.ask_approval(shell_prompt(Remembers::SessionOrWorkspace));
    app.key(key(KeyCode::Char('n')));
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Some(Action::Decide {
            call_id: "c1".into(),
            answer: ApprovalAnswer::Deny(None)
        })
    );
}

fn edit_change() -> ResultMetadata {
    ResultMetadata {
        change: Some(Box::new(FileChange {
            path: "src/lib.rs".into(),
            created: false,
            diff: "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n fn parse() {\n-    todo!()\n+    tokens().collect()\n }\n".into(),
            added: 1,
            removed: 1,
            truncated: false,
        })),
        ..ResultMetadata::default()
    }
}

#[test]
fn tool_calls_read_as_one_line_each_with_the_diff_of_an_edit() {
    let mut app = app();
    turn_started(&mut app, "fix the parser");
    started(
        &mut app,
        "r",
        "read",
        json!({"path": "src/lib.rs", "offset": 1, "limit": 120}),
    );
    ended(
        &mut app,
        "r",
        "read",
        "fn parse() {\n    todo!()\n}\n",
        None,
    );
    started(
        &mut app,
        "g",
        "grep",
        json!({"pattern": "todo!", "path": "src"}),
    );
    ended(&mut app, "g", "grep", "src/lib.rs:2:    todo!()", None);
    started(
        &mut app,
        "e",
        "edit",
        json!({"path": "src/lib.rs", "old_string": "todo!()", "new_string": "tokens().collect()"}),
    );
    ended(
        &mut app,
        "e",
        "edit",
        "Edited src/lib.rs",
        Some(edit_change()),
    );
    delta(&mut app, "Fixed.");
    completed(&mut app);
    let text = screen(&mut app, 80, 20);
    assert!(text.contains("read src/lib.rs (1–120)"), "{text}");
    assert!(text.contains("+    tokens().collect()"), "{text}");
    assert!(!text.contains("{\"path\""), "no raw JSON: {text}");
    insta::assert_snapshot!(text);
}

#[test]
fn ctrl_o_and_show_expand_a_call_s_whole_output() {
    let mut app = app();
    started(&mut app, "r", "read", json!({"path": "notes.txt"}));
    let content: String = (1..=12).map(|i| format!("line {i}\n")).collect();
    ended(&mut app, "r", "read", &content, None);
    let collapsed = screen(&mut app, 60, 20);
    assert!(!collapsed.contains("line 12"), "{collapsed}");
    app.key(ctrl('o'));
    let expanded = screen(&mut app, 60, 20);
    assert!(expanded.contains("line 12"), "{expanded}");
    app.key(ctrl('o'));
    assert!(app.transcript().expand(Some(1)));
    assert!(screen(&mut app, 60, 20).contains("line 12"));
}

#[test]
fn a_delegated_child_is_nested_under_its_call_with_its_own_status() {
    let mut app = app();
    turn_started(&mut app, "review it");
    started(
        &mut app,
        "d",
        "delegate",
        json!({"agent": "reviewer", "task": "review src/lib.rs"}),
    );
    app.apply(&Event::DispatchStarted {
        call_id: "d".into(),
        agent: "reviewer".into(),
        child_session_id: "child".into(),
        parent_session_id: "lead".into(),
        depth: 1,
    });
    app.apply(&Event::Child {
        call_id: "d".into(),
        event: Box::new(Event::ToolStarted {
            call_id: "x".into(),
            tool: "read".into(),
            arguments: json!({"path": "src/lib.rs"}),
        }),
    });
    app.apply(&Event::Child {
        call_id: "d".into(),
        event: Box::new(Event::ToolEnded {
            call_id: "x".into(),
            tool: "read".into(),
            status: ToolStatus::Completed,
            is_error: false,
            content: "fn parse() {}".into(),
            metadata: None,
            media: Vec::new(),
        }),
    });
    app.apply(&Event::Child {
        call_id: "d".into(),
        event: Box::new(Event::MessageDelta {
            text: "Looks good.".into(),
        }),
    });
    app.apply(&Event::DispatchEnded {
        call_id: "d".into(),
        agent: "reviewer".into(),
        child_session_id: "child".into(),
        parent_session_id: "lead".into(),
        depth: 1,
        status: TurnStatus::Completed,
        is_error: false,
        contract: None,
        repairs: 0,
    });
    let text = screen(&mut app, 80, 14);
    assert!(text.contains("↳ reviewer (done)"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn a_question_from_ask_user_is_a_picker_and_choosing_sends_the_answer() {
    let mut app = app();
    turn_started(&mut app, "plan the offsite");
    app.apply(&Event::InputRequested {
        call_id: "q".into(),
        question: "Which city?".into(),
        options: vec!["Lisbon".into(), "Porto".into()],
    });
    app.apply(&Event::TurnCompleted {
        status: TurnStatus::WaitingForInput,
        text: String::new(),
        output: None,
        usage: Usage::default(),
        session_usage: Usage::default(),
    });
    assert_eq!(app.turn_ended(), None);
    let text = screen(&mut app, 60, 16);
    assert!(text.contains("Lisbon"), "{text}");
    insta::assert_snapshot!(text);
    app.key(key(KeyCode::Down));
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Some(Action::Submit("Porto".into()))
    );
}

#[test]
fn resume_lists_sessions_in_a_searchable_picker() {
    let mut app = app();
    app.pick(
        PickerKind::Session,
        "Resume a session",
        vec![
            PickerItem {
                label: "Fix the parser".into(),
                detail: "2026-12-06 20:14 · coding · $0.0123 · 3f4a5b01".into(),
                value: "id-1".into(),
            },
            PickerItem {
                label: "Lisbon offsite".into(),
                detail: "2026-12-05 09:02 · work · $0.0040 · 9a8b7c6d".into(),
                value: "id-2".into(),
            },
        ],
    );
    insta::assert_snapshot!(screen(&mut app, 80, 14));
    type_text(&mut app, "lisbon");
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Some(Action::Picked {
            kind: PickerKind::Session,
            value: "id-2".into()
        })
    );
}

#[test]
fn a_resumed_conversation_fits_80_by_24_and_scrolls() {
    let mut app = App::new(Theme::plain());
    let mut messages = Vec::new();
    for i in 0..40 {
        messages.push(Message::user(format!("question {i}")));
        messages.push(Message::Assistant {
            content: format!("Answer {i}: a sentence long enough to wrap once the terminal is narrow enough for it."),
            tool_calls: Vec::new(),
            provider_items: Vec::new(),
        });
    }
    app.open_session(shapes(), &messages, Usage::default());
    let text = screen(&mut app, 80, 24);
    assert!(text.contains("Answer 39"), "{text}");
    assert!(!text.contains("question 30\n"), "{text}");
    insta::assert_snapshot!(text);
    app.key(key(KeyCode::PageUp));
    let up = screen(&mut app, 80, 24);
    assert!(!up.contains("Answer 39"), "{up}");
    assert!(up.contains("rows below"), "{up}");
    // New output while scrolled up does not move what is read.
    let before: Vec<String> = up.lines().take(5).map(str::to_owned).collect();
    turn_started(&mut app, "more");
    delta(&mut app, "Another answer.");
    let after = screen(&mut app, 80, 24);
    let after: Vec<String> = after.lines().take(5).map(str::to_owned).collect();
    assert_eq!(before, after);
    app.key(key(KeyCode::End));
    assert!(screen(&mut app, 80, 24).contains("Another answer."));
    // The mouse wheel scrolls too.
    app.mouse(MouseEvent {
        kind: MouseEventKind::ScrollUp,
        column: 0,
        row: 0,
        modifiers: KeyModifiers::NONE,
    });
    assert!(screen(&mut app, 80, 24).contains("rows below"));
}

#[test]
fn a_narrow_terminal_wraps_at_words_and_keeps_the_composer_last() {
    let mut app = app();
    turn_started(&mut app, "hi");
    delta(
        &mut app,
        "A paragraph of several words that must wrap at word boundaries on a narrow terminal.",
    );
    let text = screen(&mut app, 24, 12);
    for row in text.lines() {
        assert!(row.chars().count() <= 24, "{row}");
    }
    assert!(text.lines().last().unwrap().starts_with('›'));
    assert!(!text.contains("bou\nndaries"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn ctrl_f_finds_text_in_the_transcript() {
    let mut app = App::new(Theme::plain());
    let messages: Vec<Message> = (0..60)
        .map(|i| Message::user(format!("message number {i}")))
        .collect();
    app.open_session(shapes(), &messages, Usage::default());
    screen(&mut app, 60, 12);
    app.key(ctrl('f'));
    type_text(&mut app, "number 7");
    let text = screen(&mut app, 60, 12);
    assert!(text.contains("message number 7\n"), "{text}");
    assert!(text.contains("search: number 7"), "{text}");
    app.key(key(KeyCode::Esc));
    assert!(!screen(&mut app, 60, 12).contains("search:"));
}

#[test]
fn completion_pops_up_for_commands_files_and_skills() {
    let mut app = app();
    app.set_completer(Box::new(|line: &str, pos: usize| {
        let word_start = line[..pos].rfind(' ').map_or(0, |i| i + 1);
        let word = &line[word_start..pos];
        let all = [
            ("/resume [ID]", "/resume "),
            ("/review", "/review "),
            ("@src/main.rs", "@src/main.rs"),
            ("$release-notes", "$release-notes"),
        ];
        let found = all
            .iter()
            .filter(|(_, r)| r.starts_with(word))
            .map(|(s, r)| ((*s).to_owned(), (*r).to_owned()))
            .collect();
        (word_start, found)
    }));
    type_text(&mut app, "/re");
    let text = screen(&mut app, 60, 10);
    assert!(
        text.contains("/resume [ID]") && text.contains("/review"),
        "{text}"
    );
    insta::assert_snapshot!(text);
    app.key(key(KeyCode::Tab));
    assert!(screen(&mut app, 60, 10).ends_with("› /resume"));
    type_text(&mut app, "x @sr");
    app.key(key(KeyCode::Tab));
    assert!(screen(&mut app, 60, 10).contains("@src/main.rs"));
}

#[test]
fn no_color_draws_without_colours_and_a_dark_theme_with_them() {
    let colours = |theme: Theme| {
        let mut app = App::new(theme);
        app.open_session(shapes(), &[], Usage::default());
        started(&mut app, "e", "edit", json!({"path": "src/lib.rs"}));
        ended(&mut app, "e", "edit", "ok", Some(edit_change()));
        app.notice(evoflux_tui::transcript::NoticeKind::Error, "it broke");
        let mut terminal = Terminal::new(TestBackend::new(60, 12)).unwrap();
        terminal.draw(|f| app.draw(f)).unwrap();
        let buffer = terminal.backend().buffer().clone();
        buffer
            .content()
            .iter()
            .filter(|c| c.fg != Color::Reset)
            .count()
    };
    assert_eq!(colours(Theme::from_env(true, None)), 0);
    assert!(colours(Theme::dark()) > 0);
}

#[test]
fn a_denied_call_reads_denied_with_the_reason() {
    let mut app = app();
    started(&mut app, "c", "shell", json!({"command": "rm -rf build"}));
    app.apply(&Event::ApprovalDecided {
        call_id: "c".into(),
        decision: DecisionKind::Denied,
        reason: Some("The user denied `shell`: keep the build".into()),
        by: DecidedBy::User,
    });
    let text = screen(&mut app, 80, 6);
    assert!(
        text.contains("denied: The user denied `shell`: keep the build"),
        "{text}"
    );
}

#[test]
fn an_mcp_calls_progress_is_on_its_line_and_a_servers_warning_is_a_notice() {
    let mut app = app();
    turn_started(&mut app, "Index it.");
    started(&mut app, "c1", "mcp__idx__build", json!({}));
    app.apply(&Event::ToolProgress {
        call_id: "c1".into(),
        progress: 2.0,
        total: Some(5.0),
        message: Some("indexing".into()),
    });
    app.apply(&Event::ToolLog {
        call_id: "c1".into(),
        server: "idx".into(),
        level: evoflux_protocol::events::ServerLogLevel::Warning,
        logger: Some("db".into()),
        message: "disk almost full".into(),
    });
    // Below a warning: the event stream and the web UI only.
    app.apply(&Event::ToolLog {
        call_id: "c1".into(),
        server: "idx".into(),
        level: evoflux_protocol::events::ServerLogLevel::Info,
        logger: None,
        message: "chunk 7 done".into(),
    });
    let text = screen(&mut app, 100, 12);
    assert!(text.contains("2/5 (40%): indexing"), "{text}");
    assert!(
        text.contains("MCP server idx/db (warning): disk almost full"),
        "{text}"
    );
    assert!(!text.contains("chunk 7 done"), "{text}");
}

#[test]
fn a_sampling_request_is_asked_with_its_server_and_preview_and_once_only() {
    let mut app = app();
    turn_started(&mut app, "Summarize.");
    started(&mut app, "c1", "mcp__every__summarize", json!({}));
    app.ask_approval(ApprovalPrompt {
        call_id: "c1:sampling-1".into(),
        tool: "mcp__every__summarize".into(),
        arguments: json!({}),
        subject: ApprovalSubject::Sampling {
            server: "every".into(),
            preview: "system: Be brief.\nuser: Summarize the report".into(),
            max_tokens: 100,
        },
        workdir: None,
        remembers: Remembers::Never,
    });
    let text = screen(&mut app, 100, 20);
    assert!(
        text.contains("every asks, for at most 100 tokens"),
        "{text}"
    );
    assert!(text.contains("user: Summarize the report"), "{text}");
    assert!(!text.contains("always this session"), "{text}");
    assert_eq!(
        app.key(key(KeyCode::Char('y'))),
        Some(Action::Decide {
            call_id: "c1:sampling-1".into(),
            answer: ApprovalAnswer::Once
        })
    );
}

#[test]
fn a_form_field_is_answered_in_the_composer_even_while_a_turn_runs() {
    let mut app = app();
    turn_started(&mut app, "Sign me up.");
    app.ask_field("Name * — Your full name: ");
    let actions = type_text(&mut app, "Ada");
    assert!(actions.is_empty());
    assert_eq!(
        app.key(key(KeyCode::Enter)),
        Some(Action::FormAnswer("Ada".into()))
    );
    let text = screen(&mut app, 80, 12);
    assert!(text.contains("Name * — Your full name:"), "{text}");
    // The next field, cancelled with Esc: the form, not the turn.
    app.ask_field("Age (a whole number): ");
    assert_eq!(app.key(key(KeyCode::Esc)), Some(Action::FormCancel));
    // With no field asked, Esc cancels the running turn again.
    assert_eq!(app.key(key(KeyCode::Esc)), Some(Action::Cancel));
}
