//! The status line above the composer: the running turn's spinner and
//! clock, then the session (title or id, mode, lead, model) and what it
//! has used (tokens, cost). On a narrow terminal the least needed parts
//! go first.

use std::time::Instant;

use evoflux_protocol::{Event, Usage};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr as _;

use crate::theme::{Role, Theme};
use crate::transcript::spinner_frame;

/// What the status line knows about the session.
#[derive(Debug, Clone, Default)]
pub struct Status {
    pub session_id: String,
    pub title: Option<String>,
    pub mode: String,
    pub lead: String,
    pub model: String,
    /// The session's usage, its children included.
    pub usage: Usage,
    /// When the running turn started.
    pub turn_started: Option<Instant>,
}

impl Status {
    /// Follows the session's events: its start, its model, its title, each
    /// model call's tokens and the totals a turn's end reports.
    pub fn apply(&mut self, event: &Event) {
        match event {
            Event::SessionStarted {
                session_id,
                mode,
                lead,
                model,
                ..
            } => {
                self.session_id.clone_from(session_id);
                self.mode = mode.to_string();
                self.lead.clone_from(lead);
                self.model.clone_from(model);
            }
            Event::TurnStarted { .. } => self.turn_started = Some(Instant::now()),
            Event::ModelCallCompleted { usage, .. } => self.usage = self.usage.plus(usage),
            Event::Child { event, .. } => {
                if let Event::ModelCallCompleted { usage, .. } = event.as_ref() {
                    self.usage = self.usage.plus(usage);
                }
            }
            Event::TurnCompleted { session_usage, .. }
            | Event::TurnFailed { session_usage, .. } => {
                self.usage = *session_usage;
                self.turn_started = None;
            }
            Event::TurnCancelled { .. } => self.turn_started = None,
            Event::ModelSwitched { to, .. } => self.model.clone_from(to),
            Event::SessionTitled { title } => self.title = Some(title.clone()),
            _ => {}
        }
    }

    /// The line at `width` cells. `hint` (what a key just did, what the
    /// next key does) comes right after the clock.
    pub fn line(&self, width: usize, theme: &Theme, hint: Option<&str>) -> Line<'static> {
        let mut parts: Vec<(u8, Span<'static>)> = Vec::new();
        if let Some(started) = self.turn_started {
            let secs = started.elapsed().as_secs();
            let clock = if secs >= 60 {
                format!("{}m {:02}s", secs / 60, secs % 60)
            } else {
                format!("{secs}s")
            };
            parts.push((
                0,
                Span::styled(
                    format!("{} working {clock}", spinner_frame(started)),
                    theme.style(Role::Accent),
                ),
            ));
            if hint.is_none() {
                parts.push((1, Span::styled("Esc cancels", theme.style(Role::Dim))));
            }
        }
        if let Some(hint) = hint {
            parts.push((0, Span::styled(hint.to_owned(), theme.style(Role::Warning))));
        }
        let name = match &self.title {
            Some(t) => t.clone(),
            None => short_id(&self.session_id).to_owned(),
        };
        let dim = theme.style(Role::Dim);
        if !name.is_empty() {
            parts.push((2, Span::styled(name, dim)));
        }
        if !self.mode.is_empty() {
            parts.push((4, Span::styled(self.mode.clone(), dim)));
        }
        if !self.lead.is_empty() {
            parts.push((5, Span::styled(self.lead.clone(), dim)));
        }
        if !self.model.is_empty() {
            parts.push((3, Span::styled(self.model.clone(), dim)));
        }
        let u = &self.usage;
        if u.requests > 0 {
            parts.push((
                3,
                Span::styled(
                    format!(
                        "{} in · {} out",
                        tokens(u.input_tokens),
                        tokens(u.output_tokens)
                    ),
                    dim,
                ),
            ));
            parts.push((2, Span::styled(u.cost_label(), dim)));
        }
        // Drop the least needed parts until the line fits.
        let fits = |parts: &[(u8, Span<'static>)]| {
            let sep = parts.len().saturating_sub(1) * 3;
            parts.iter().map(|(_, s)| s.content.width()).sum::<usize>() + sep <= width
        };
        while !fits(&parts) {
            let Some(worst) = parts
                .iter()
                .enumerate()
                .filter(|(_, (p, _))| *p > 0)
                .max_by_key(|(i, (p, _))| (*p, *i))
                .map(|(i, _)| i)
            else {
                break;
            };
            parts.remove(worst);
        }
        let mut spans = Vec::new();
        for (i, (_, span)) in parts.into_iter().enumerate() {
            if i > 0 {
                spans.push(Span::styled(" · ", dim));
            }
            spans.push(span);
        }
        Line::from(spans)
    }
}

/// The last eight characters of a session id (UUIDv7s differ at the end).
fn short_id(id: &str) -> &str {
    let start = id.char_indices().rev().nth(7).map_or(0, |(i, _)| i);
    &id[start..]
}

/// `950`, `12.3k`, `4.1M`.
fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        1_000..1_000_000 => format!("{:.1}k", n as f64 / 1_000.0),
        _ => format!("{:.1}M", n as f64 / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::line_text;

    fn status() -> Status {
        Status {
            session_id: "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b".into(),
            title: Some("Fix the parser".into()),
            mode: "coding".into(),
            lead: "coder".into(),
            model: "openai:gpt-5".into(),
            usage: Usage {
                requests: 3,
                input_tokens: 12_345,
                output_tokens: 678,
                ..Usage::default()
            },
            turn_started: None,
        }
    }

    #[test]
    fn the_whole_line_on_a_wide_terminal() {
        let line = line_text(&status().line(120, &Theme::plain(), None));
        assert_eq!(
            line,
            "Fix the parser · coding · coder · openai:gpt-5 · 12.3k in · 678 out · $0.00"
        );
    }

    #[test]
    fn a_narrow_terminal_keeps_the_clock_and_the_name() {
        let mut s = status();
        s.turn_started = Some(Instant::now());
        let line = line_text(&s.line(30, &Theme::plain(), None));
        assert!(line.contains("working 0s"), "{line}");
        assert!(line.width() <= 30, "{line}");
        let line = line_text(&s.line(80, &Theme::plain(), None));
        assert!(line.contains("Esc cancels"), "{line}");
    }

    #[test]
    fn token_counts_read_short() {
        assert_eq!(tokens(950), "950");
        assert_eq!(tokens(12_345), "12.3k");
        assert_eq!(tokens(4_100_000), "4.1M");
        assert_eq!(short_id("abc"), "abc");
        assert_eq!(short_id("0123456789"), "23456789");
    }
}
