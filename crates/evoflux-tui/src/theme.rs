//! The screen's styles, by role: every widget asks for a [`Role`], never
//! for a colour, so `NO_COLOR` and light or dark terminals are decided in
//! one place.
//!
//! Colours are the terminal's own sixteen (its palette already suits its
//! background); only what must differ between light and dark backgrounds
//! (the dim grey of secondary text) looks at the background.

use evoflux_code::highlight::TokenClass;
use ratatui::style::{Color, Modifier, Style};

/// What a piece of the screen is, for its style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Secondary text: hints, times, tool details.
    Dim,
    /// The brand colour: the prompt, the spinner, selected items.
    Accent,
    /// What the user said, in the transcript.
    User,
    Error,
    Warning,
    Success,
    /// Added lines of a diff.
    Added,
    /// Removed lines of a diff.
    Removed,
    /// A diff's `@@` hunk headers.
    Hunk,
    Heading,
    Link,
    /// Fenced code without a highlighter.
    Code,
    /// `inline code`.
    InlineCode,
    /// Block quotes.
    Quote,
    Bold,
    Italic,
    Strike,
    /// The selected row of a picker or popup.
    Selected,
    /// A match of the transcript search.
    Match,
    /// A highlighted token of a code block.
    Token(TokenClass),
}

/// The terminal's background, which decides greys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Background {
    Dark,
    Light,
}

/// How the screen is styled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    /// `false` under `NO_COLOR`: modifiers (bold, reverse) only.
    pub color: bool,
    pub background: Background,
}

impl Theme {
    /// From the environment: `NO_COLOR` (any value) turns colour off;
    /// `COLORFGBG` (`15;0` light text on dark) tells the background, dark
    /// when unknown.
    pub fn detect() -> Theme {
        Theme::from_env(
            std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()),
            std::env::var("COLORFGBG").ok().as_deref(),
        )
    }

    /// [`Theme::detect`] over given values, for tests.
    pub fn from_env(no_color: bool, colorfgbg: Option<&str>) -> Theme {
        let background = match colorfgbg
            .and_then(|v| v.rsplit(';').next())
            .and_then(|bg| bg.parse::<u8>().ok())
        {
            // The sixteen-colour indexes of light backgrounds: 7 (white,
            // grey) and 9–15 (the bright ones); 8 is dark grey.
            Some(7 | 9..=15) => Background::Light,
            _ => Background::Dark,
        };
        Theme {
            color: !no_color,
            background,
        }
    }

    /// No colour, dark background: what snapshot tests draw with.
    pub const fn plain() -> Theme {
        Theme {
            color: false,
            background: Background::Dark,
        }
    }

    /// Colour on a dark background.
    pub const fn dark() -> Theme {
        Theme {
            color: true,
            background: Background::Dark,
        }
    }

    /// The style of `role`.
    pub fn style(&self, role: Role) -> Style {
        let base = Style::default();
        let modifiers = match role {
            Role::Heading | Role::Bold | Role::User => Modifier::BOLD,
            Role::Italic | Role::Quote => Modifier::ITALIC,
            Role::Strike => Modifier::CROSSED_OUT,
            Role::Link => Modifier::UNDERLINED,
            Role::Selected | Role::Match => Modifier::REVERSED,
            Role::Dim if !self.color => Modifier::DIM,
            _ => Modifier::empty(),
        };
        let base = base.add_modifier(modifiers);
        if !self.color {
            return base;
        }
        let grey = match self.background {
            Background::Dark => Color::DarkGray,
            Background::Light => Color::Gray,
        };
        let fg = match role {
            Role::Dim | Role::Quote => Some(grey),
            Role::Accent => Some(Color::Cyan),
            Role::User | Role::Bold | Role::Italic | Role::Strike | Role::Selected => None,
            Role::Error | Role::Removed => Some(Color::Red),
            Role::Warning => Some(Color::Yellow),
            Role::Success | Role::Added => Some(Color::Green),
            Role::Hunk => Some(Color::Cyan),
            Role::Heading => Some(Color::Magenta),
            Role::Link => Some(Color::Blue),
            Role::Code | Role::InlineCode => Some(Color::Yellow),
            Role::Match => Some(Color::Yellow),
            Role::Token(class) => token_color(class, grey),
        };
        match fg {
            Some(fg) => base.fg(fg),
            None => base,
        }
    }
}

fn token_color(class: TokenClass, grey: Color) -> Option<Color> {
    match class {
        TokenClass::Keyword => Some(Color::Magenta),
        TokenClass::String | TokenClass::Escape => Some(Color::Green),
        TokenClass::Comment => Some(grey),
        TokenClass::Number | TokenClass::Constant => Some(Color::Yellow),
        TokenClass::Function => Some(Color::Blue),
        TokenClass::Type | TokenClass::Tag => Some(Color::Cyan),
        TokenClass::Attribute | TokenClass::Label => Some(Color::Yellow),
        TokenClass::Property | TokenClass::Variable => None,
        TokenClass::Operator | TokenClass::Punctuation => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_keeps_modifiers_and_drops_colours() {
        let theme = Theme::from_env(true, None);
        assert_eq!(theme.style(Role::Error).fg, None);
        assert!(
            theme
                .style(Role::Selected)
                .add_modifier
                .contains(Modifier::REVERSED)
        );
        assert!(theme.style(Role::Dim).add_modifier.contains(Modifier::DIM));
    }

    #[test]
    fn colorfgbg_tells_a_light_background() {
        assert_eq!(
            Theme::from_env(false, Some("0;15")).background,
            Background::Light
        );
        assert_eq!(
            Theme::from_env(false, Some("15;0")).background,
            Background::Dark
        );
        assert_eq!(
            Theme::from_env(false, Some("0;default;15")).background,
            Background::Light
        );
        assert_eq!(Theme::from_env(false, None).background, Background::Dark);
        assert_ne!(
            Theme::from_env(false, Some("0;15")).style(Role::Dim).fg,
            Theme::from_env(false, Some("15;0")).style(Role::Dim).fg
        );
    }
}
