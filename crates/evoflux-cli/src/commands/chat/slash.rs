//! The chat's slash commands: what a line starting with `/` asks of the
//! terminal UI rather than of the model.
//!
//! `/skill:name …` is not a command: it invokes a skill, so it goes to the
//! model as typed. `//text` sends `/text` as a message.

use evoflux_core::AppMode;

/// One parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SlashCommand {
    Help,
    Exit,
    New,
    Sessions,
    /// Continue session ID; without one, pick from the recent sessions.
    Resume(Option<String>),
    /// Switch to model; without one, pick from the configured ones.
    Model(Option<String>),
    Mode(AppMode),
    Lead(String),
    Skills,
    Tools,
    Cost,
    Compact,
    Diff,
    /// The full observation of tool call N (the last one without N).
    Show(Option<usize>),
    /// The whole conversation so far.
    History,
    /// Tag this session for the browser surface (WebBridge) or back to the
    /// standard one; without an argument, say which it is and what it hides.
    Surface(Option<evoflux_harness::SessionSurface>),
}

/// Every command with its argument and what it does, for `/help` and
/// completion; the order `/help` prints.
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("/help", "", "this list"),
    ("/exit", "", "end the chat (Ctrl-D does too)"),
    (
        "/new",
        "",
        "start a new session (with /mode and /lead chosen before)",
    ),
    ("/sessions", "", "recent sessions"),
    (
        "/resume",
        "[ID]",
        "continue another session, replaying its conversation (a list without ID)",
    ),
    (
        "/model",
        "[PROVIDER:MODEL]",
        "switch this session's model, kept for later resumes (a list without one)",
    ),
    (
        "/mode",
        "work|coding",
        "the mode of the next session (a session's mode is fixed)",
    ),
    (
        "/lead",
        "NAME",
        "the lead of the next session (a session's lead is fixed)",
    ),
    (
        "/skills",
        "",
        "skills you can invoke here with $name or /skill:name",
    ),
    ("/tools", "", "tools the model sees now"),
    ("/cost", "", "this session's model calls and tokens"),
    (
        "/compact",
        "",
        "summarize older turns at the next model call",
    ),
    (
        "/diff",
        "",
        "Coding: the working-tree diff of the session's repositories",
    ),
    (
        "/show",
        "[N]",
        "a tool call's full output (the last one without N)",
    ),
    ("/history", "", "the whole conversation of this session"),
    (
        "/surface",
        "[standard|webbridge]",
        "tag this session for the browser surface (only webbridge-safe MCP servers), kept for resumes",
    ),
];

/// What a typed line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A message for the model (or the answer to its question).
    Message(String),
    Command(SlashCommand),
}

/// A line that looks like a command but is not one, with the words that
/// say what to type instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlashError(pub String);

impl std::fmt::Display for SlashError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Parses a typed line.
pub fn parse(line: &str) -> Result<Input, SlashError> {
    let Some(rest) = line.strip_prefix('/') else {
        return Ok(Input::Message(line.to_owned()));
    };
    if let Some(message) = rest.strip_prefix('/') {
        return Ok(Input::Message(format!("/{message}")));
    }
    if rest.starts_with("skill:") {
        return Ok(Input::Message(line.to_owned()));
    }
    let (name, arg) = match rest.split_once(char::is_whitespace) {
        Some((n, a)) => (n, a.trim()),
        None => (rest.trim_end(), ""),
    };
    let needs = |what: &str| SlashError(format!("/{name} needs {what}; /help lists the commands"));
    let none = |cmd: SlashCommand| {
        if arg.is_empty() {
            Ok(cmd)
        } else {
            Err(SlashError(format!(
                "/{name} takes no argument (got `{arg}`)"
            )))
        }
    };
    let command = match name {
        "help" | "?" => none(SlashCommand::Help)?,
        "exit" | "quit" => none(SlashCommand::Exit)?,
        "new" => none(SlashCommand::New)?,
        "sessions" => none(SlashCommand::Sessions)?,
        "skills" => none(SlashCommand::Skills)?,
        "tools" => none(SlashCommand::Tools)?,
        "cost" => none(SlashCommand::Cost)?,
        "compact" => none(SlashCommand::Compact)?,
        "diff" => none(SlashCommand::Diff)?,
        "history" => none(SlashCommand::History)?,
        "surface" if arg.is_empty() => SlashCommand::Surface(None),
        "surface" => match arg.parse() {
            Ok(surface) => SlashCommand::Surface(Some(surface)),
            Err(e) => return Err(SlashError(format!("/surface: {e}"))),
        },
        "resume" => SlashCommand::Resume(Some(arg.to_owned()).filter(|a| !a.is_empty())),
        "model" => SlashCommand::Model(Some(arg.to_owned()).filter(|a| !a.is_empty())),
        "lead" if arg.is_empty() => return Err(needs("an agent name")),
        "lead" => SlashCommand::Lead(arg.to_owned()),
        "mode" => match arg {
            "work" => SlashCommand::Mode(AppMode::Work),
            "coding" => SlashCommand::Mode(AppMode::Coding),
            _ => return Err(needs("`work` or `coding`")),
        },
        "show" if arg.is_empty() => SlashCommand::Show(None),
        "show" => match arg.trim_start_matches('#').parse::<usize>() {
            Ok(n) => SlashCommand::Show(Some(n)),
            Err(_) => {
                return Err(SlashError(format!(
                    "/show takes the number a tool line shows (`/show 3`), not `{arg}`"
                )));
            }
        },
        _ => {
            return Err(SlashError(format!(
                "unknown command /{name}; /help lists the commands (start the line with // to send it as a message)"
            )));
        }
    };
    Ok(Input::Command(command))
}

/// The `/help` text of the line mode.
pub fn help() -> String {
    let mut text = commands_help();
    text.push_str(
        "Keys: Enter sends · Alt-Enter inserts a newline (a pasted block is one message) · \
         Up/Down history · Tab completes /commands, $skills, /skill: and @paths · \
         Ctrl-C cancels a turn or clears the line · Ctrl-D or Ctrl-C twice exits\n\
         `!command` runs a shell command in the session's workspace.\n",
    );
    text
}

/// The session's prompt commands for both chats' `/help`: what typing
/// `/name args` sends (empty when there are none).
pub fn prompts_help(prompts: &[evoflux_harness::prompt_commands::PromptCommand]) -> String {
    use evoflux_harness::prompt_commands::PromptSource;
    if prompts.is_empty() {
        return String::new();
    }
    let mut text = String::from("Prompt commands (sent to the model expanded):\n");
    for p in prompts {
        let usage = match &p.argument_hint {
            Some(hint) => format!("/{} {hint}", p.name),
            None => format!("/{}", p.name),
        };
        let from = match &p.source {
            PromptSource::ClaudeCommand { .. } => "Claude Code command".to_owned(),
            PromptSource::CodexPrompt { .. } => "codex prompt".to_owned(),
            PromptSource::McpPrompt { server, .. } => format!("MCP prompt of {server}"),
        };
        let first = p.description.lines().next().unwrap_or_default();
        text.push_str(&format!("  {usage:<26} {first} ({from})\n"));
    }
    text.push_str("`@server:uri` in a message attaches an MCP resource.\n");
    text
}

/// Every command with what it does, for both chats' `/help`.
pub fn commands_help() -> String {
    let mut text = String::from("Commands:\n");
    for (name, arg, what) in COMMANDS {
        let usage = if arg.is_empty() {
            (*name).to_owned()
        } else {
            format!("{name} {arg}")
        };
        text.push_str(&format!("  {usage:<26} {what}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(parse("/help"), Ok(Input::Command(SlashCommand::Help)));
        assert_eq!(parse("/exit"), Ok(Input::Command(SlashCommand::Exit)));
        assert_eq!(
            parse("/resume 0190abcd"),
            Ok(Input::Command(SlashCommand::Resume(Some(
                "0190abcd".into()
            ))))
        );
        assert_eq!(
            parse("/model scripted:demo.yaml"),
            Ok(Input::Command(SlashCommand::Model(Some(
                "scripted:demo.yaml".into()
            ))))
        );
        assert_eq!(
            parse("/mode coding"),
            Ok(Input::Command(SlashCommand::Mode(AppMode::Coding)))
        );
        assert_eq!(
            parse("/show 3"),
            Ok(Input::Command(SlashCommand::Show(Some(3))))
        );
        assert_eq!(parse("/show"), Ok(Input::Command(SlashCommand::Show(None))));
    }

    #[test]
    fn messages_skills_and_escapes_go_to_the_model() {
        assert_eq!(parse("hello"), Ok(Input::Message("hello".into())));
        assert_eq!(
            parse("/skill:review the diff"),
            Ok(Input::Message("/skill:review the diff".into()))
        );
        assert_eq!(
            parse("//etc/hosts is odd"),
            Ok(Input::Message("/etc/hosts is odd".into()))
        );
    }

    #[test]
    fn mistakes_say_what_to_type() {
        assert!(parse("/frobnicate").unwrap_err().0.contains("/help"));
        assert_eq!(
            parse("/resume"),
            Ok(Input::Command(SlashCommand::Resume(None)))
        );
        assert_eq!(
            parse("/model"),
            Ok(Input::Command(SlashCommand::Model(None)))
        );
        assert!(
            parse("/mode fast")
                .unwrap_err()
                .0
                .contains("`work` or `coding`")
        );
        assert!(
            parse("/help me")
                .unwrap_err()
                .0
                .contains("takes no argument")
        );
        assert!(parse("/show x").unwrap_err().0.contains("/show 3"));
    }

    #[test]
    fn the_help_lists_the_sessions_prompt_commands_with_their_sources() {
        use evoflux_harness::prompt_commands::{PromptCommand, PromptSource};
        assert_eq!(prompts_help(&[]), "");
        let text = prompts_help(&[
            PromptCommand {
                name: "review".into(),
                description: "Review a change\nmore".into(),
                argument_hint: Some("[file]".into()),
                source: PromptSource::ClaudeCommand {
                    path: "/r/.claude/commands/review.md".into(),
                },
            },
            PromptCommand {
                name: "mcp__everything__simple-prompt".into(),
                description: "A prompt".into(),
                argument_hint: None,
                source: PromptSource::McpPrompt {
                    server: "everything".into(),
                    prompt: "simple-prompt".into(),
                },
            },
        ]);
        assert!(
            text.contains("/review [file]")
                && text.contains("Review a change (Claude Code command)"),
            "{text}"
        );
        assert!(!text.contains("more"), "{text}");
        assert!(
            text.contains("A prompt (MCP prompt of everything)"),
            "{text}"
        );
    }

    #[test]
    fn surface_takes_a_known_surface_or_none() {
        assert_eq!(
            parse("/surface webbridge"),
            Ok(Input::Command(SlashCommand::Surface(Some(
                evoflux_harness::SessionSurface::WebBridge
            ))))
        );
        assert_eq!(
            parse("/surface"),
            Ok(Input::Command(SlashCommand::Surface(None)))
        );
        let e = parse("/surface browser").unwrap_err();
        assert!(e.0.contains("`browser`"), "{e}");
    }

    #[test]
    fn every_command_is_in_the_help_and_parses() {
        let help = help();
        for (name, arg, _) in COMMANDS {
            assert!(help.contains(name));
            let line = match *arg {
                "" | "[N]" => (*name).to_owned(),
                "work|coding" => format!("{name} work"),
                "[standard|webbridge]" => format!("{name} webbridge"),
                _ => format!("{name} x"),
            };
            assert!(
                matches!(parse(&line), Ok(Input::Command(_))),
                "{line} parses as a command"
            );
        }
    }
}
