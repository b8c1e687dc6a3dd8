//! Tab completion in the chat's editor: `/commands` (the chat's own and
//! the session's prompt commands) at the start of a line, `$skill` and
//! `/skill:` names from the session's catalog, `@path` files of the
//! session's first workspace root and `@server:uri` MCP resources.

use std::path::{Path, PathBuf};

use evoflux_harness::prompt_commands::PromptCommand;

use super::slash::COMMANDS;

/// What completion knows about the session; replaced when the chat opens
/// another session.
#[derive(Debug, Clone, Default)]
pub struct Completions {
    /// Skills the user may invoke here.
    pub skills: Vec<String>,
    /// Where `@path` completes from.
    pub root: Option<PathBuf>,
    /// The session's prompt commands (Claude Code commands, codex
    /// prompts, MCP prompts).
    pub prompts: Vec<PromptCommand>,
    /// MCP resources as `server:uri`.
    pub resources: Vec<String>,
}

/// Most `@path` candidates listed at once.
const MAX_PATHS: usize = 200;

/// The start of the word being completed and its candidates
/// (`(display, replacement)`).
pub fn complete(line: &str, pos: usize, data: &Completions) -> (usize, Vec<(String, String)>) {
    let pos = pos.min(line.len());
    let head = &line[..pos];
    let start = head.rfind(char::is_whitespace).map_or(0, |i| {
        i + head[i..].chars().next().map_or(1, char::len_utf8)
    });
    let word = &head[start..];
    if let Some(prefix) = word.strip_prefix("/skill:") {
        return (start, skills(&data.skills, "/skill:", prefix));
    }
    if let Some(prefix) = word.strip_prefix('$') {
        return (start, skills(&data.skills, "$", prefix));
    }
    if let Some(prefix) = word.strip_prefix('@') {
        let mut out: Vec<(String, String)> = data
            .resources
            .iter()
            .filter(|r| r.starts_with(prefix))
            .map(|r| (r.clone(), format!("@{r} ")))
            .collect();
        if let Some(root) = &data.root {
            out.extend(paths(root, prefix));
        }
        return (start, out);
    }
    if start == 0 && word.starts_with('/') {
        let mut out: Vec<(String, String)> = COMMANDS
            .iter()
            .filter(|(name, _, _)| name.starts_with(word))
            .map(|(name, arg, _)| {
                let display = if arg.is_empty() {
                    (*name).to_owned()
                } else {
                    format!("{name} {arg}")
                };
                let replacement = if arg.is_empty() {
                    (*name).to_owned()
                } else {
                    format!("{name} ")
                };
                (display, replacement)
            })
            .collect();
        if "/skill:".starts_with(word) {
            out.push(("/skill:NAME".to_owned(), "/skill:".to_owned()));
        }
        out.extend(
            data.prompts
                .iter()
                .filter(|p| format!("/{}", p.name).starts_with(word))
                .map(|p| {
                    let display = match &p.argument_hint {
                        Some(hint) => format!("/{} {hint}", p.name),
                        None => format!("/{}", p.name),
                    };
                    (display, format!("/{} ", p.name))
                }),
        );
        return (0, out);
    }
    (start, Vec::new())
}

fn skills(names: &[String], sigil: &str, prefix: &str) -> Vec<(String, String)> {
    names
        .iter()
        .filter(|n| n.starts_with(prefix))
        .map(|n| (format!("{sigil}{n}"), format!("{sigil}{n} ")))
        .collect()
}

/// Entries of the folder `prefix` names (relative to `root`, never above
/// it) whose names start with its last part; folders end with `/`.
fn paths(root: &Path, prefix: &str) -> Vec<(String, String)> {
    let (dir, part) = match prefix.rfind('/') {
        Some(i) => (&prefix[..=i], &prefix[i + 1..]),
        None => ("", prefix),
    };
    let relative = Path::new(dir);
    if relative.is_absolute()
        || relative
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(root.join(relative)) else {
        return Vec::new();
    };
    let mut out: Vec<(String, String)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            if !name.starts_with(part) || (name.starts_with('.') && !part.starts_with('.')) {
                return None;
            }
            let is_dir = e.file_type().is_ok_and(|t| t.is_dir());
            let path = format!("{dir}{name}{}", if is_dir { "/" } else { "" });
            Some((path.clone(), format!("@{path}")))
        })
        .collect();
    out.sort();
    out.truncate(MAX_PATHS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(root: Option<PathBuf>) -> Completions {
        Completions {
            skills: vec!["review".into(), "release-notes".into(), "pdf".into()],
            root,
            prompts: vec![PromptCommand {
                name: "mcp__everything__args-prompt".into(),
                description: "A prompt with two arguments".into(),
                argument_hint: Some("<city> [state]".into()),
                source: evoflux_harness::prompt_commands::PromptSource::McpPrompt {
                    server: "everything".into(),
                    prompt: "args-prompt".into(),
                },
            }],
            resources: vec!["everything:demo://resource/static/document/features.md".into()],
        }
    }

    fn replacements(r: (usize, Vec<(String, String)>)) -> (usize, Vec<String>) {
        (r.0, r.1.into_iter().map(|(_, rep)| rep).collect())
    }

    #[test]
    fn commands_complete_at_the_start_of_a_line_only() {
        let (start, got) = replacements(complete("/re", 3, &data(None)));
        assert_eq!(start, 0);
        assert_eq!(got, vec!["/resume "]);
        let (_, got) = replacements(complete("/s", 2, &data(None)));
        assert!(got.contains(&"/sessions".to_owned()));
        assert!(got.contains(&"/skill:".to_owned()));
        assert!(complete("see /re", 7, &data(None)).1.is_empty());
    }

    #[test]
    fn prompt_commands_and_resources_complete() {
        let r = complete("/mcp__ev", 8, &data(None));
        assert_eq!(
            r.1,
            vec![(
                "/mcp__everything__args-prompt <city> [state]".to_owned(),
                "/mcp__everything__args-prompt ".to_owned()
            )]
        );
        let (start, got) = replacements(complete("read @every", 11, &data(None)));
        assert_eq!(start, 5);
        assert_eq!(
            got,
            vec!["@everything:demo://resource/static/document/features.md "]
        );
    }

    #[test]
    fn skills_complete_after_a_dollar_or_skill_colon() {
        let (start, got) = replacements(complete("use $re", 7, &data(None)));
        assert_eq!(start, 4);
        assert_eq!(got, vec!["$review ", "$release-notes "]);
        let (start, got) = replacements(complete("/skill:p", 8, &data(None)));
        assert_eq!(start, 0);
        assert_eq!(got, vec!["/skill:pdf "]);
    }

    #[test]
    fn paths_complete_inside_the_root_and_never_above_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/main.rs"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        std::fs::write(dir.path().join(".hidden"), "").unwrap();
        let d = Completions {
            resources: Vec::new(),
            ..data(Some(dir.path().to_path_buf()))
        };
        let (_, got) = replacements(complete("look at @", 9, &d));
        assert_eq!(got, vec!["@README.md", "@src/"]);
        let (start, got) = replacements(complete("look at @src/m", 14, &d));
        assert_eq!(start, 8);
        assert_eq!(got, vec!["@src/main.rs"]);
        assert!(complete("@../", 4, &d).1.is_empty());
        assert!(complete("@/etc/", 6, &d).1.is_empty());
        let (_, got) = replacements(complete("@.h", 3, &d));
        assert_eq!(got, vec!["@.hidden"]);
    }
}
