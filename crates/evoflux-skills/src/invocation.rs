//! Explicit invocation: `$skill-name` and `/skill:<name>` in a user message.
//!
//! Only the first line that is not a quote is read (quoted text is often
//! pasted from elsewhere and must not trigger skills). Only valid,
//! user-invocable skills available in the session's mode can be picked;
//! unknown names are ignored silently because `$HOME` or `$5` in prose is
//! not a mistake. A pick suppresses the implicit resolver for the turn.

use evoflux_core::AppMode;
use serde::Serialize;

use crate::bundle::SkillRecord;

/// How a skill was named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MentionSyntax {
    /// `$name` anywhere in the line.
    Dollar,
    /// `/skill:name` at the start of the line.
    SlashSkill,
}

/// A syntactic mention; `parent:child` is already mapped to `parent/child`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mention {
    pub name: String,
    pub syntax: MentionSyntax,
}

/// The first line that is neither blank nor a `>` quote.
pub fn first_instruction_line(message: &str) -> Option<&str> {
    message.lines().find(|line| {
        let t = line.trim();
        !(t.is_empty() || t == ">" || t.starts_with("> "))
    })
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphanumeric()
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => c.is_whitespace() || matches!(c, '.' | ',' | '!' | '?' | ';' | ':'),
    }
}

/// Reads `name[:segment]` at the start of `s`; returns the mapped name and
/// the rest of the text.
fn take_name(s: &str) -> Option<(String, &str)> {
    let first = s.chars().next()?;
    if !is_name_start(first) {
        return None;
    }
    let end = s.find(|c: char| !is_name_char(c)).unwrap_or(s.len());
    let mut name = s[..end].to_owned();
    let mut rest = &s[end..];
    if let Some(after) = rest.strip_prefix(':')
        && after.chars().next().is_some_and(is_name_start)
    {
        let seg_end = after
            .find(|c: char| !is_name_char(c))
            .unwrap_or(after.len());
        name.push('/');
        name.push_str(&after[..seg_end]);
        rest = &after[seg_end..];
    }
    // A sentence's full stop is not part of the name: "use $review."
    while name.ends_with('.') {
        name.pop();
    }
    Some((name, rest))
}

/// Every mention on the first instruction line, in order, each name once.
pub fn parse_mentions(message: &str) -> Vec<Mention> {
    let Some(line) = first_instruction_line(message) else {
        return Vec::new();
    };
    let mut out: Vec<Mention> = Vec::new();
    let mut push = |m: Mention| {
        if !out.iter().any(|o| o.name == m.name) {
            out.push(m);
        }
    };
    let trimmed = line.trim_start();
    if let Some(after) = trimmed.strip_prefix("/skill:")
        && let Some((name, rest)) = take_name(after)
        && is_terminator(rest.chars().next())
        && !name.is_empty()
    {
        push(Mention {
            name,
            syntax: MentionSyntax::SlashSkill,
        });
    }
    let mut prev: Option<char> = None;
    for (i, c) in line.char_indices() {
        if c == '$'
            && !prev.is_some_and(|p| p.is_ascii_alphanumeric() || p == '_' || p == '$')
            && let Some((name, rest)) = take_name(&line[i + 1..])
        {
            // Terminator check on the raw text after the match, so a
            // name followed by a stripped full stop still counts.
            if !name.is_empty() && is_terminator(rest.chars().next()) {
                push(Mention {
                    name,
                    syntax: MentionSyntax::Dollar,
                });
            }
        }
        prev = Some(c);
    }
    out
}

/// The skills the user picked explicitly this turn.
#[derive(Debug, Clone, Default)]
pub struct ExplicitSelection<'a> {
    pub skills: Vec<(&'a SkillRecord, MentionSyntax)>,
}

impl ExplicitSelection<'_> {
    /// Whether the implicit resolver must not run this turn.
    pub fn suppresses_resolver(&self) -> bool {
        !self.skills.is_empty()
    }
}

/// Resolves the mentions in `message` against the session's records.
pub fn select_explicit<'a>(
    message: &str,
    records: &[&'a SkillRecord],
    mode: AppMode,
) -> ExplicitSelection<'a> {
    let mut skills: Vec<(&'a SkillRecord, MentionSyntax)> = Vec::new();
    for mention in parse_mentions(message) {
        let found = records
            .iter()
            .copied()
            .find(|r| r.name == mention.name && r.is_user_invocable_in(mode));
        if let Some(r) = found
            && !skills.iter().any(|(s, _)| std::ptr::eq(*s, r))
        {
            skills.push((r, mention.syntax));
        }
    }
    ExplicitSelection { skills }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(message: &str) -> Vec<String> {
        parse_mentions(message)
            .into_iter()
            .map(|m| m.name)
            .collect()
    }

    #[test]
    fn dollar_and_slash_forms() {
        assert_eq!(names("please use $review now"), ["review"]);
        assert_eq!(names("$review."), ["review"]);
        assert_eq!(names("$review, then $pdf-tools!"), ["review", "pdf-tools"]);
        assert_eq!(names("/skill:review fix it"), ["review"]);
        assert_eq!(names("  /skill:parent:child"), ["parent/child"]);
        assert_eq!(names("use $parent:child now"), ["parent/child"]);
        assert_eq!(names("$review $review"), ["review"]);
    }

    #[test]
    fn non_mentions() {
        assert!(names("costs US$5 or a$b or $$x").is_empty());
        assert!(names("price: $review)").is_empty());
        assert!(
            names("run /skill:review").is_empty(),
            "slash form must start the line"
        );
        assert!(names("$-x $").is_empty());
    }

    #[test]
    fn only_the_first_non_quote_line_counts() {
        assert_eq!(names("\n> quoted $old\n>\n  \nuse $new\n$later"), ["new"]);
        assert!(names("> only quotes $x").is_empty());
        assert!(names("").is_empty());
    }
}
