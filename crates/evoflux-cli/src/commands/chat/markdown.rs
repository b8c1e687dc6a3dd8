//! Streaming Markdown for the terminal: the agent's words are styled as
//! they arrive, without waiting for the end of a paragraph.
//!
//! A line's kind (heading, list item, quote, fence, code) is decided from
//! its first few characters; from then on its characters stream through an
//! inline state machine (`**bold**`, `` `code` ``). Lines inside a fenced
//! block are held until their newline so each can be highlighted whole.
//! Without colour ([`Style::Plain`]: `NO_COLOR`, or stdout is not a
//! terminal) the text passes through unchanged.

/// Whether output may carry ANSI styles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    Ansi,
    Plain,
}

impl Style {
    /// Colour when stdout is a terminal and `NO_COLOR` is unset or empty
    /// (<https://no-color.org>).
    pub fn detect() -> Style {
        use std::io::IsTerminal as _;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        if !no_color && std::io::stdout().is_terminal() {
            Style::Ansi
        } else {
            Style::Plain
        }
    }

    /// `text` wrapped in the SGR `code`, or `text` itself without colour.
    pub fn paint(self, code: &str, text: &str) -> String {
        match self {
            Style::Ansi => format!("\x1b[{code}m{text}\x1b[0m"),
            Style::Plain => text.to_owned(),
        }
    }
}

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const HEADING: &str = "\x1b[1;36m";
const QUOTE: &str = "\x1b[2;3m";
const CODE_SPAN: &str = "\x1b[33m";
const FENCE: &str = "\x1b[2m";

/// How the current line is being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Too few characters yet to know its kind.
    Undecided,
    /// Streaming, with this SGR style for the whole line.
    Streaming(&'static str),
    /// Inside a fenced block: held until its newline.
    Code,
}

/// One message's text, rendered as it streams.
#[derive(Debug)]
pub struct MarkdownStream {
    style: Style,
    line: Line,
    /// The characters of a line not yet written (undecided, or code).
    held: String,
    /// Inside ``` … ```: the fence's language.
    fence: Option<String>,
    bold: bool,
    code_span: bool,
    /// A `*` that may open or close bold, waiting for the next character.
    star: bool,
}

impl MarkdownStream {
    pub fn new(style: Style) -> MarkdownStream {
        MarkdownStream {
            style,
            line: Line::Undecided,
            held: String::new(),
            fence: None,
            bold: false,
            code_span: false,
            star: false,
        }
    }

    /// Renders `text`, a piece of the stream; returns what to write now.
    pub fn push(&mut self, text: &str) -> String {
        if self.style == Style::Plain {
            return text.to_owned();
        }
        let mut out = String::new();
        for c in text.chars() {
            self.push_char(c, &mut out);
        }
        out
    }

    /// Ends the message: whatever is held is written, styles are reset.
    pub fn finish(&mut self) -> String {
        if self.style == Style::Plain {
            return String::new();
        }
        let mut out = String::new();
        match self.line {
            Line::Undecided => {
                let held = std::mem::take(&mut self.held);
                self.decide_and_write(&held, true, &mut out);
            }
            Line::Code => {
                let held = std::mem::take(&mut self.held);
                match &self.fence {
                    Some(lang) => out.push_str(&highlight(&held, lang)),
                    None => out.push_str(&paint(FENCE, &held)),
                }
            }
            Line::Streaming(_) => {}
        }
        self.flush_star(&mut out);
        if !out.is_empty() || self.bold || self.code_span || self.line != Line::Undecided {
            out.push_str(RESET);
        }
        *self = MarkdownStream::new(self.style);
        out
    }

    fn push_char(&mut self, c: char, out: &mut String) {
        match self.line {
            Line::Code => {
                if c == '\n' {
                    let held = std::mem::take(&mut self.held);
                    if held.trim_start().starts_with("```") {
                        // Opens a block (with its language) or closes one.
                        self.fence = match self.fence {
                            None => Some(held.trim().trim_start_matches('`').trim().to_owned()),
                            Some(_) => None,
                        };
                        out.push_str(&paint(FENCE, &held));
                    } else {
                        out.push_str(&highlight(&held, self.fence.as_deref().unwrap_or("")));
                    }
                    out.push('\n');
                    self.line = if self.fence.is_some() {
                        Line::Code
                    } else {
                        Line::Undecided
                    };
                } else {
                    self.held.push(c);
                }
            }
            Line::Undecided => {
                if c == '\n' {
                    let held = std::mem::take(&mut self.held);
                    self.decide_and_write(&held, true, out);
                    self.end_line(out);
                } else {
                    self.held.push(c);
                    let held = std::mem::take(&mut self.held);
                    if !self.decide_and_write(&held, false, out) {
                        self.held = held;
                    }
                }
            }
            Line::Streaming(_) => {
                if c == '\n' {
                    self.end_line(out);
                } else {
                    self.inline(c, out);
                }
            }
        }
    }

    /// Decides the kind of a line from its first characters and writes
    /// them; `false` (nothing written) while they could still be more than
    /// one kind and the line goes on.
    fn decide_and_write(&mut self, held: &str, complete: bool, out: &mut String) -> bool {
        let indent = held.len() - held.trim_start().len();
        let (lead, rest) = held.split_at(indent);
        if rest.is_empty() && !complete {
            return false;
        }
        if rest.starts_with("```") {
            if complete {
                out.push_str(&paint(FENCE, held));
            } else {
                // A fence line is held whole, for its language.
                self.line = Line::Code;
                self.held = held.to_owned();
            }
            return true;
        }
        if !complete && "```".starts_with(rest) {
            return false;
        }
        if let Some(level) = heading_level(rest) {
            let text = &rest[level..];
            if text.starts_with(' ') {
                self.line = Line::Streaming(HEADING);
                out.push_str(HEADING);
                out.push_str(lead);
                out.push_str(&rest[..level]);
                for c in text.chars() {
                    self.inline(c, out);
                }
                return true;
            }
            if text.is_empty() && !complete {
                return false;
            }
        }
        for bullet in ["- ", "* ", "+ "] {
            if let Some(text) = rest.strip_prefix(bullet) {
                self.line = Line::Streaming("");
                out.push_str(lead);
                out.push_str("• ");
                for c in text.chars() {
                    self.inline(c, out);
                }
                return true;
            }
        }
        if !complete && rest.len() < 2 && matches!(rest, "-" | "*" | "+") {
            return false;
        }
        if let Some(text) = rest.strip_prefix("> ") {
            self.line = Line::Streaming(QUOTE);
            out.push_str(lead);
            out.push_str(QUOTE);
            out.push_str("│ ");
            for c in text.chars() {
                self.inline(c, out);
            }
            return true;
        }
        if !complete && rest == ">" {
            return false;
        }
        // A numbered item streams as it is; anything else is a paragraph.
        self.line = Line::Streaming("");
        out.push_str(lead);
        for c in rest.chars() {
            self.inline(c, out);
        }
        true
    }

    /// One character of a streaming line, through `**` and `` ` ``.
    fn inline(&mut self, c: char, out: &mut String) {
        if self.star {
            self.star = false;
            if c == '*' && !self.code_span {
                self.bold = !self.bold;
                self.restyle(out);
                return;
            }
            out.push('*');
        }
        match c {
            '*' if !self.code_span => self.star = true,
            '`' => {
                self.code_span = !self.code_span;
                self.restyle(out);
            }
            c => out.push(c),
        }
    }

    fn flush_star(&mut self, out: &mut String) {
        if std::mem::take(&mut self.star) {
            out.push('*');
        }
    }

    /// Writes the SGR state: the line's style plus bold and code spans.
    fn restyle(&self, out: &mut String) {
        out.push_str(RESET);
        if let Line::Streaming(style) = self.line {
            out.push_str(style);
        }
        if self.bold {
            out.push_str(BOLD);
        }
        if self.code_span {
            out.push_str(CODE_SPAN);
        }
    }

    fn end_line(&mut self, out: &mut String) {
        self.flush_star(out);
        let styled = matches!(self.line, Line::Streaming(s) if !s.is_empty());
        if styled || self.bold || self.code_span {
            out.push_str(RESET);
        }
        self.bold = false;
        self.code_span = false;
        out.push('\n');
        self.line = Line::Undecided;
    }
}

fn paint(code: &str, text: &str) -> String {
    format!("{code}{text}{RESET}")
}

fn heading_level(s: &str) -> Option<usize> {
    let level = s.chars().take_while(|c| *c == '#').count();
    (1..=6).contains(&level).then_some(level)
}

/// Languages whose comments start with `#` rather than `//`.
fn hash_comments(lang: &str) -> bool {
    matches!(
        lang,
        "py" | "python"
            | "sh"
            | "bash"
            | "zsh"
            | "shell"
            | "console"
            | "toml"
            | "yaml"
            | "yml"
            | "ruby"
            | "rb"
            | "dockerfile"
            | "make"
            | "makefile"
            | "r"
    )
}

const KEYWORDS: &[&str] = &[
    "as",
    "async",
    "await",
    "break",
    "case",
    "class",
    "const",
    "continue",
    "def",
    "defer",
    "do",
    "elif",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "fn",
    "for",
    "from",
    "func",
    "function",
    "go",
    "if",
    "impl",
    "import",
    "in",
    "interface",
    "let",
    "loop",
    "match",
    "mod",
    "mut",
    "new",
    "nil",
    "None",
    "null",
    "package",
    "pub",
    "return",
    "self",
    "Self",
    "static",
    "struct",
    "switch",
    "trait",
    "true",
    "True",
    "False",
    "try",
    "type",
    "use",
    "var",
    "where",
    "while",
    "with",
    "yield",
];

/// One line of code with keywords, strings, numbers and comments coloured:
/// a lexical approximation good for reading, not a parser.
pub fn highlight(line: &str, lang: &str) -> String {
    let hash = hash_comments(lang);
    let mut out = String::with_capacity(line.len() + 16);
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let comment = (c == '/' && chars.get(i + 1) == Some(&'/')) || (hash && c == '#');
        if comment {
            let rest: String = chars[i..].iter().collect();
            out.push_str(&paint("\x1b[2;3m", &rest));
            return out;
        }
        if c == '"' || (c == '\'' && !lang.starts_with("rs") && lang != "rust") {
            let start = i;
            i += 1;
            while i < chars.len() && chars[i] != c {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            let end = (i + 1).min(chars.len());
            let s: String = chars[start..end].iter().collect();
            out.push_str(&paint("\x1b[32m", &s));
            i = end;
            continue;
        }
        if c.is_ascii_digit() && (i == 0 || !is_word(chars[i - 1])) {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric() || chars[i] == '.' || chars[i] == '_')
            {
                i += 1;
            }
            let s: String = chars[start..i].iter().collect();
            out.push_str(&paint("\x1b[35m", &s));
            continue;
        }
        if is_word(c) {
            let start = i;
            while i < chars.len() && is_word(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if KEYWORDS.contains(&word.as_str()) {
                out.push_str(&paint("\x1b[34m", &word));
            } else {
                out.push_str(&word);
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(chunks: &[&str]) -> String {
        let mut md = MarkdownStream::new(Style::Ansi);
        let mut out: String = chunks.iter().map(|c| md.push(c)).collect();
        out.push_str(&md.finish());
        out
    }

    /// The text with every SGR sequence removed.
    fn strip(s: &str) -> String {
        let mut out = String::new();
        let mut chars = s.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\x1b' {
                for d in chars.by_ref() {
                    if d == 'm' {
                        break;
                    }
                }
            } else {
                out.push(c);
            }
        }
        out
    }

    #[test]
    fn plain_style_passes_text_through_unchanged() {
        let mut md = MarkdownStream::new(Style::Plain);
        let text = "# Title\n- **item** with `code`\n```rust\nfn main() {}\n```\n";
        let out = md.push(text) + &md.finish();
        assert_eq!(out, text);
        assert!(!out.contains('\x1b'));
    }

    #[test]
    fn headings_lists_and_inline_styles_render_however_the_text_is_split() {
        let text = "# Title\nSome **bold** and `code`.\n- one\n* two\n> quoted\n";
        let whole = render(&[text]);
        // One character at a time renders the same screen.
        let chars: Vec<String> = text.chars().map(String::from).collect();
        let refs: Vec<&str> = chars.iter().map(String::as_str).collect();
        let split = render(&refs);
        assert_eq!(strip(&whole), strip(&split));
        assert_eq!(
            strip(&whole),
            "# Title\nSome bold and code.\n• one\n• two\n│ quoted\n"
        );
        assert!(whole.contains(HEADING));
        assert!(whole.contains(BOLD));
        assert!(whole.contains(CODE_SPAN));
        assert!(whole.ends_with(RESET));
    }

    #[test]
    fn paragraphs_stream_before_their_line_ends() {
        let mut md = MarkdownStream::new(Style::Ansi);
        assert_eq!(strip(&md.push("Hello wor")), "Hello wor");
        assert_eq!(strip(&md.push("ld")), "ld");
    }

    #[test]
    fn fenced_code_is_highlighted_line_by_line_and_keeps_its_text() {
        let text = "```rust\nfn main() { let x = 42; // note\n```\nafter\n";
        let out = render(&[text]);
        assert_eq!(strip(&out), text);
        assert!(out.contains("\x1b[34mfn"), "keywords are coloured: {out:?}");
        assert!(out.contains("\x1b[35m42"), "numbers are coloured: {out:?}");
        assert!(
            out.contains("\x1b[2;3m// note"),
            "comments are dim: {out:?}"
        );
        // After the fence, Markdown again (no highlighting of `after`).
        assert!(out.ends_with(&format!("after\n{RESET}")) || strip(&out).ends_with("after\n"));
    }

    #[test]
    fn a_lone_star_and_an_unfinished_line_are_kept() {
        assert_eq!(strip(&render(&["2 * 3 = 6"])), "2 * 3 = 6");
        assert_eq!(strip(&render(&["#hashtag"])), "#hashtag");
        assert_eq!(strip(&render(&["-"])), "-");
    }

    #[test]
    fn hash_comments_follow_the_language() {
        assert!(highlight("x = 1 # one", "python").contains("\x1b[2;3m# one"));
        assert!(!highlight("let c = '#';", "rust").contains("\x1b[2;3m"));
    }
}
