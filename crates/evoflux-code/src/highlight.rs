//! Syntax highlighting of a code block, for the web UI's conversation.
//!
//! The page may download nothing at run time and the repository vendors no
//! other project's code, so the page cannot highlight by itself: it asks
//! the server, which parses the block with the tree-sitter grammars this
//! crate already links for the code index (plus three small data-format
//! grammars) and each grammar's own `highlights.scm`, through the
//! tree-sitter project's `tree-sitter-highlight`.
//!
//! What comes back is deliberately not HTML: a list of [`Token`]s, each a
//! range and one class of the closed [`TokenClass`], so the page builds the
//! spans itself with `textContent` and nothing the model wrote can become
//! markup. Offsets are UTF-16 code units, what a JavaScript string
//! indexes, so the page slices its own text without converting.
//!
//! A fence tag maps to a [`HighlightLanguage`] through one alias table
//! ([`HighlightLanguage::from_fence`]); an unknown tag is refused with
//! `highlight/unknown-language` (the page remembers the refusal and asks no
//! more for that tag) rather than answered with no tokens, so a typo in a
//! tag is told apart from code that has nothing to colour. Input is bounded
//! ([`MAX_HIGHLIGHT_BYTES`]) and time-bounded ([`HIGHLIGHT_TIME_LIMIT`],
//! through tree-sitter's cancellation flag, which the parse and the
//! highlight iteration both poll).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::ser::SerializeTuple;
use serde::{Serialize, Serializer};
use tree_sitter_highlight::{HighlightConfiguration, HighlightEvent, Highlighter};

use crate::lang::Language;

/// The largest code block highlighted (UTF-8 bytes): a long file's worth;
/// past it the block stays plain text.
pub const MAX_HIGHLIGHT_BYTES: usize = 256 * 1024;

/// How long one block may take, parse and highlight together, before it is
/// stopped: a pathological input (a maximal block of ordinary code takes a
/// small part of it in a release build).
pub const HIGHLIGHT_TIME_LIMIT: Duration = Duration::from_secs(2);

/// A language code blocks are highlighted in: every language of the code
/// index, and JSON, TOML and YAML. Closed: adding one means a grammar, its
/// aliases in [`ALIASES`] and a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HighlightLanguage {
    /// A language the code index reads, with the same grammar.
    Code(Language),
    Json,
    Toml,
    Yaml,
}

/// Every fence tag known (compared lowercased), with its language. The one
/// table both [`HighlightLanguage::from_fence`] and the refusal's list of
/// names read. A bare `h` is C: a fence says what the author wrote, and a
/// C++ header usually says `cpp`.
pub const ALIASES: &[(&str, HighlightLanguage)] = {
    use HighlightLanguage as H;
    use Language as L;
    &[
        ("rust", H::Code(L::Rust)),
        ("rs", H::Code(L::Rust)),
        ("python", H::Code(L::Python)),
        ("py", H::Code(L::Python)),
        ("python3", H::Code(L::Python)),
        ("py3", H::Code(L::Python)),
        ("pyi", H::Code(L::Python)),
        ("javascript", H::Code(L::JavaScript)),
        ("js", H::Code(L::JavaScript)),
        ("jsx", H::Code(L::JavaScript)),
        ("mjs", H::Code(L::JavaScript)),
        ("cjs", H::Code(L::JavaScript)),
        ("node", H::Code(L::JavaScript)),
        ("typescript", H::Code(L::TypeScript)),
        ("ts", H::Code(L::TypeScript)),
        ("mts", H::Code(L::TypeScript)),
        ("cts", H::Code(L::TypeScript)),
        ("tsx", H::Code(L::Tsx)),
        ("go", H::Code(L::Go)),
        ("golang", H::Code(L::Go)),
        ("java", H::Code(L::Java)),
        ("c", H::Code(L::C)),
        ("h", H::Code(L::C)),
        ("cpp", H::Code(L::Cpp)),
        ("c++", H::Code(L::Cpp)),
        ("cc", H::Code(L::Cpp)),
        ("cxx", H::Code(L::Cpp)),
        ("hpp", H::Code(L::Cpp)),
        ("hh", H::Code(L::Cpp)),
        ("hxx", H::Code(L::Cpp)),
        ("json", H::Json),
        ("jsonc", H::Json),
        ("toml", H::Toml),
        ("yaml", H::Yaml),
        ("yml", H::Yaml),
    ]
};

impl HighlightLanguage {
    pub const ALL: [HighlightLanguage; 12] = [
        HighlightLanguage::Code(Language::Rust),
        HighlightLanguage::Code(Language::Python),
        HighlightLanguage::Code(Language::JavaScript),
        HighlightLanguage::Code(Language::TypeScript),
        HighlightLanguage::Code(Language::Tsx),
        HighlightLanguage::Code(Language::Go),
        HighlightLanguage::Code(Language::Java),
        HighlightLanguage::Code(Language::C),
        HighlightLanguage::Code(Language::Cpp),
        HighlightLanguage::Json,
        HighlightLanguage::Toml,
        HighlightLanguage::Yaml,
    ];

    /// The language of a fence tag (` ```rs `, ` ```C++ `): any alias of
    /// [`ALIASES`], case-insensitively, surrounding blanks ignored.
    pub fn from_fence(tag: &str) -> Option<HighlightLanguage> {
        let tag = tag.trim();
        ALIASES
            .iter()
            .find(|(alias, _)| alias.eq_ignore_ascii_case(tag))
            .map(|(_, lang)| *lang)
    }

    /// [`Self::from_fence`], or `highlight/unknown-language` naming the
    /// tags that are known.
    pub fn parse(tag: &str) -> Result<HighlightLanguage, HighlightError> {
        Self::from_fence(tag).ok_or_else(|| HighlightError::UnknownLanguage {
            given: tag.to_owned(),
        })
    }

    /// The canonical name (`rust`, `cpp`, `yaml`): what an answer says.
    pub const fn name(self) -> &'static str {
        match self {
            HighlightLanguage::Code(lang) => lang.fence(),
            HighlightLanguage::Json => "json",
            HighlightLanguage::Toml => "toml",
            HighlightLanguage::Yaml => "yaml",
        }
    }

    const fn index(self) -> usize {
        match self {
            HighlightLanguage::Code(lang) => lang as usize,
            HighlightLanguage::Json => Language::ALL.len(),
            HighlightLanguage::Toml => Language::ALL.len() + 1,
            HighlightLanguage::Yaml => Language::ALL.len() + 2,
        }
    }

    fn grammar(self) -> tree_sitter::Language {
        match self {
            HighlightLanguage::Code(lang) => lang.grammar(),
            HighlightLanguage::Json => tree_sitter_json::LANGUAGE.into(),
            HighlightLanguage::Toml => tree_sitter_toml_ng::LANGUAGE.into(),
            HighlightLanguage::Yaml => tree_sitter_yaml::LANGUAGE.into(),
        }
    }

    /// The grammar's own queries: highlights, injections, locals. Where a
    /// grammar extends another (TypeScript over JavaScript, C++ over C) the
    /// base's queries come first, as the grammar's `tree-sitter.json` lists
    /// them: of the patterns matching one node the last wins.
    fn queries(self) -> (String, &'static str, String) {
        use tree_sitter_javascript as js;
        use tree_sitter_typescript as ts;
        match self {
            HighlightLanguage::Code(lang) => match lang {
                Language::Rust => (
                    tree_sitter_rust::HIGHLIGHTS_QUERY.to_owned(),
                    tree_sitter_rust::INJECTIONS_QUERY,
                    String::new(),
                ),
                Language::Python => (
                    tree_sitter_python::HIGHLIGHTS_QUERY.to_owned(),
                    "",
                    String::new(),
                ),
                Language::JavaScript => (
                    format!("{}\n{}", js::HIGHLIGHT_QUERY, js::JSX_HIGHLIGHT_QUERY),
                    js::INJECTIONS_QUERY,
                    js::LOCALS_QUERY.to_owned(),
                ),
                Language::TypeScript => (
                    format!("{}\n{}", js::HIGHLIGHT_QUERY, ts::HIGHLIGHTS_QUERY),
                    "",
                    format!("{}\n{}", js::LOCALS_QUERY, ts::LOCALS_QUERY),
                ),
                Language::Tsx => (
                    format!(
                        "{}\n{}\n{}",
                        js::HIGHLIGHT_QUERY,
                        js::JSX_HIGHLIGHT_QUERY,
                        ts::HIGHLIGHTS_QUERY
                    ),
                    "",
                    format!("{}\n{}", js::LOCALS_QUERY, ts::LOCALS_QUERY),
                ),
                Language::Go => (
                    tree_sitter_go::HIGHLIGHTS_QUERY.to_owned(),
                    "",
                    String::new(),
                ),
                Language::Java => (
                    tree_sitter_java::HIGHLIGHTS_QUERY.to_owned(),
                    "",
                    String::new(),
                ),
                Language::C => (tree_sitter_c::HIGHLIGHT_QUERY.to_owned(), "", String::new()),
                Language::Cpp => (
                    format!(
                        "{}\n{}",
                        tree_sitter_c::HIGHLIGHT_QUERY,
                        tree_sitter_cpp::HIGHLIGHT_QUERY
                    ),
                    "",
                    String::new(),
                ),
            },
            HighlightLanguage::Json => (
                format!("{}\n{JSON_KEY}", tree_sitter_json::HIGHLIGHTS_QUERY),
                "",
                String::new(),
            ),
            HighlightLanguage::Toml => (
                tree_sitter_toml_ng::HIGHLIGHTS_QUERY.to_owned(),
                "",
                String::new(),
            ),
            HighlightLanguage::Yaml => (
                tree_sitter_yaml::HIGHLIGHTS_QUERY.to_owned(),
                "",
                String::new(),
            ),
        }
    }

    /// The compiled configuration, built once per process. One that does
    /// not compile is a defect of this crate (each is compiled in the unit
    /// tests), reported rather than panicking.
    fn config(self) -> Result<&'static HighlightConfiguration, HighlightError> {
        static CONFIGS: [OnceLock<Result<HighlightConfiguration, String>>;
            HighlightLanguage::ALL.len()] =
            [const { OnceLock::new() }; HighlightLanguage::ALL.len()];
        CONFIGS[self.index()]
            .get_or_init(|| {
                let (highlights, injections, locals) = self.queries();
                let mut config = HighlightConfiguration::new(
                    self.grammar(),
                    self.name(),
                    &highlights,
                    injections,
                    &locals,
                )
                .map_err(|e| e.to_string())?;
                config.configure(&CAPTURES.map(|(name, _)| name));
                Ok(config)
            })
            .as_ref()
            .map_err(|message| HighlightError::Failed {
                language: self,
                message: message.clone(),
            })
    }
}

impl std::fmt::Display for HighlightLanguage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for HighlightLanguage {
    type Err = HighlightError;

    fn from_str(tag: &str) -> Result<Self, Self::Err> {
        HighlightLanguage::parse(tag)
    }
}

impl Serialize for HighlightLanguage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

/// The JSON grammar's query captures a key before `(string) @string`,
/// which then wins under the last-wins rule; said again last, keys are
/// keys.
const JSON_KEY: &str = "(pair key: (string) @string.special.key)";

/// What a token is, for its colour. Closed and small on purpose: the
/// grammars' capture names (`function.method.builtin`, `punctuation.bracket`
/// …) are folded into these by [`CAPTURES`], and the page styles each as
/// `hl-<class>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TokenClass {
    Keyword,
    String,
    Escape,
    Comment,
    Number,
    Constant,
    Function,
    Type,
    Variable,
    Property,
    Attribute,
    Tag,
    Label,
    Operator,
    Punctuation,
}

impl TokenClass {
    /// The class's name, as the answer and the page's `hl-<class>` spell it.
    pub const fn as_str(self) -> &'static str {
        match self {
            TokenClass::Keyword => "keyword",
            TokenClass::String => "string",
            TokenClass::Escape => "escape",
            TokenClass::Comment => "comment",
            TokenClass::Number => "number",
            TokenClass::Constant => "constant",
            TokenClass::Function => "function",
            TokenClass::Type => "type",
            TokenClass::Variable => "variable",
            TokenClass::Property => "property",
            TokenClass::Attribute => "attribute",
            TokenClass::Tag => "tag",
            TokenClass::Label => "label",
            TokenClass::Operator => "operator",
            TokenClass::Punctuation => "punctuation",
        }
    }
}

/// The grammars' capture names recognised, each with its class.
/// `tree-sitter-highlight` gives a capture the longest name here all of
/// whose dot-separated parts it has (`function.method` is `function`,
/// `string.special.key` is itself); a capture matching none (`embedded`)
/// stays plain.
const CAPTURES: [(&str, TokenClass); 25] = [
    ("attribute", TokenClass::Attribute),
    ("boolean", TokenClass::Constant),
    ("comment", TokenClass::Comment),
    ("constant", TokenClass::Constant),
    ("constructor", TokenClass::Type),
    ("delimiter", TokenClass::Punctuation),
    ("escape", TokenClass::Escape),
    ("function", TokenClass::Function),
    ("keyword", TokenClass::Keyword),
    ("label", TokenClass::Label),
    ("module", TokenClass::Type),
    ("namespace", TokenClass::Type),
    ("number", TokenClass::Number),
    ("float", TokenClass::Number),
    ("operator", TokenClass::Operator),
    ("property", TokenClass::Property),
    ("punctuation", TokenClass::Punctuation),
    ("string", TokenClass::String),
    ("string.escape", TokenClass::Escape),
    ("string.special.key", TokenClass::Property),
    ("character", TokenClass::String),
    ("tag", TokenClass::Tag),
    ("type", TokenClass::Type),
    ("variable", TokenClass::Variable),
    // `self`, `this`: words of the language, coloured as such.
    ("variable.builtin", TokenClass::Keyword),
];

/// One highlighted range of a block: `[start, end)` in UTF-16 code units
/// of the block's text. Serialized as `[start, end, "class"]`, compact for
/// the thousands a long block has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub class: TokenClass,
}

impl Serialize for Token {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut t = serializer.serialize_tuple(3)?;
        t.serialize_element(&self.start)?;
        t.serialize_element(&self.end)?;
        t.serialize_element(self.class.as_str())?;
        t.end()
    }
}

/// Why a block was not highlighted. Each carries a stable code; in every
/// case the page shows the block as plain text.
#[derive(Debug, thiserror::Error)]
pub enum HighlightError {
    #[error(
        "`language` `{given}` is not a language code blocks are highlighted in; use one of {}",
        ALIASES.iter().map(|(alias, _)| *alias).collect::<Vec<_>>().join(", ")
    )]
    UnknownLanguage { given: String },
    #[error(
        "`code` is {bytes} bytes; blocks of at most {max} bytes are highlighted, so show this one plain"
    )]
    TooLarge { bytes: usize, max: usize },
    #[error(
        "highlighting the {language} block took longer than {} ms and was stopped; show it plain",
        limit.as_millis()
    )]
    TimedOut {
        language: HighlightLanguage,
        limit: Duration,
    },
    #[error("the {language} highlighter failed: {message}")]
    Failed {
        language: HighlightLanguage,
        message: String,
    },
}

impl HighlightError {
    /// The stable code, `highlight/<kebab-name>`.
    pub const fn code(&self) -> &'static str {
        match self {
            HighlightError::UnknownLanguage { .. } => "highlight/unknown-language",
            HighlightError::TooLarge { .. } => "highlight/too-large",
            HighlightError::TimedOut { .. } => "highlight/timed-out",
            HighlightError::Failed { .. } => "highlight/failed",
        }
    }
}

/// The tokens of `code` in `language`, within [`HIGHLIGHT_TIME_LIMIT`].
pub fn highlight(language: HighlightLanguage, code: &str) -> Result<Vec<Token>, HighlightError> {
    highlight_within(language, code, HIGHLIGHT_TIME_LIMIT)
}

/// [`highlight`] with its own time limit. The tokens are in order, do not
/// overlap, and adjacent ones of one class are merged; text no capture
/// covers has none. A token nested in another (an escape in a string) is
/// given the innermost class.
pub fn highlight_within(
    language: HighlightLanguage,
    code: &str,
    limit: Duration,
) -> Result<Vec<Token>, HighlightError> {
    if code.len() > MAX_HIGHLIGHT_BYTES {
        return Err(HighlightError::TooLarge {
            bytes: code.len(),
            max: MAX_HIGHLIGHT_BYTES,
        });
    }
    let config = language.config()?;
    let cancel = AtomicUsize::new(0);
    let finished = AtomicBool::new(false);
    let deadline = Instant::now() + limit;
    std::thread::scope(|scope| {
        // The watchdog: raises the cancellation flag at the deadline
        // unless woken first by the end of the work.
        let watchdog = scope.spawn(|| {
            while !finished.load(Ordering::Acquire) {
                let now = Instant::now();
                if now >= deadline {
                    cancel.store(1, Ordering::SeqCst);
                    return;
                }
                std::thread::park_timeout(deadline - now);
            }
        });
        let result = tokens(config, code, &cancel);
        finished.store(true, Ordering::Release);
        watchdog.thread().unpark();
        result
    })
    .map_err(|e| match e {
        tree_sitter_highlight::Error::Cancelled => HighlightError::TimedOut { language, limit },
        tree_sitter_highlight::Error::InvalidLanguage(e) => HighlightError::Failed {
            language,
            message: e.to_string(),
        },
        tree_sitter_highlight::Error::Unknown => HighlightError::Failed {
            language,
            message: "tree-sitter reported an unknown error".to_owned(),
        },
    })
}

fn tokens(
    config: &'static HighlightConfiguration,
    code: &str,
    cancel: &AtomicUsize,
) -> Result<Vec<Token>, tree_sitter_highlight::Error> {
    let mut highlighter = Highlighter::new();
    // Injected code (Rust in a macro's body) is highlighted when it is a
    // language of ours; other injections (CSS in a template) stay as the
    // host language colours them.
    let events = highlighter.highlight(config, code.as_bytes(), None, Some(cancel), |name| {
        HighlightLanguage::from_fence(name).and_then(|injected| injected.config().ok())
    })?;
    let mut stack: Vec<TokenClass> = Vec::new();
    let mut out: Vec<Token> = Vec::new();
    let mut units = Utf16Cursor::new(code);
    for event in events {
        match event? {
            HighlightEvent::HighlightStart(h) => {
                // Every index is one of CAPTURES': `configure` gives no other.
                if let Some((_, class)) = CAPTURES.get(h.0) {
                    stack.push(*class);
                }
            }
            HighlightEvent::HighlightEnd => {
                stack.pop();
            }
            HighlightEvent::Source { start, end } => {
                let Some(class) = stack.last().copied() else {
                    continue;
                };
                // Blanks at a token's edges (a TOML pair's, around `=`)
                // take no colour: they are left out.
                let Some(text) = code.get(start..end) else {
                    continue;
                };
                let trimmed = text.trim_start();
                let start = start + (text.len() - trimmed.len());
                let end = start + trimmed.trim_end().len();
                if start >= end {
                    continue;
                }
                let (start, end) = (units.at(start), units.at(end));
                match out.last_mut() {
                    Some(last) if last.class == class && last.end == start => last.end = end,
                    _ => out.push(Token { start, end, class }),
                }
            }
        }
    }
    Ok(out)
}

/// Byte offsets of a text to UTF-16 offsets, counting forward from the
/// last one asked (the highlighter's offsets only grow).
struct Utf16Cursor<'a> {
    text: &'a str,
    byte: usize,
    unit: usize,
}

impl<'a> Utf16Cursor<'a> {
    fn new(text: &'a str) -> Self {
        Utf16Cursor {
            text,
            byte: 0,
            unit: 0,
        }
    }

    fn at(&mut self, byte: usize) -> usize {
        let mut byte = byte.min(self.text.len());
        while !self.text.is_char_boundary(byte) {
            byte -= 1;
        }
        if byte < self.byte {
            self.byte = 0;
            self.unit = 0;
        }
        self.unit += self.text[self.byte..byte].encode_utf16().count();
        self.byte = byte;
        self.unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(language: HighlightLanguage, code: &str) -> Vec<(String, TokenClass)> {
        let units: Vec<u16> = code.encode_utf16().collect();
        highlight(language, code)
            .unwrap_or_else(|e| panic!("{language}: {e}"))
            .into_iter()
            .map(|t| (String::from_utf16_lossy(&units[t.start..t.end]), t.class))
            .collect()
    }

    fn has(tokens: &[(String, TokenClass)], text: &str, class: TokenClass) -> bool {
        tokens.iter().any(|(t, c)| t == text && *c == class)
    }

    #[test]
    fn every_language_compiles_and_every_capture_is_classified() {
        // Captures left plain on purpose: embedded code is its host's
        // colour; `none` marks what a grammar wants uncoloured; `glimmer`
        // is an injection's language (JavaScript's templates).
        const PLAIN: [&str; 3] = ["embedded", "none", "glimmer"];
        for lang in HighlightLanguage::ALL {
            let config = match lang.config() {
                Ok(c) => c,
                Err(e) => panic!("{lang}: {e}"),
            };
            let unclassified: Vec<&str> = config
                .names()
                .iter()
                .copied()
                .filter(|name| {
                    !name.starts_with('_')
                        && !name.starts_with("local.")
                        && !name.starts_with("injection.")
                        && !PLAIN.contains(name)
                        && !CAPTURES.iter().any(|(recognised, _)| {
                            recognised
                                .split('.')
                                .all(|part| name.split('.').any(|p| p == part))
                        })
                })
                .collect();
            assert!(
                unclassified.is_empty(),
                "{lang}: captures without a class {unclassified:?}"
            );
        }
    }

    #[test]
    fn fence_tags_and_aliases() {
        use HighlightLanguage as H;
        let of = HighlightLanguage::from_fence;
        assert_eq!(of("rust"), Some(H::Code(Language::Rust)));
        assert_eq!(of("rs"), Some(H::Code(Language::Rust)));
        assert_eq!(of(" Rust "), Some(H::Code(Language::Rust)));
        assert_eq!(of("py"), Some(H::Code(Language::Python)));
        assert_eq!(of("python"), Some(H::Code(Language::Python)));
        assert_eq!(of("ts"), Some(H::Code(Language::TypeScript)));
        assert_eq!(of("tsx"), Some(H::Code(Language::Tsx)));
        assert_eq!(of("js"), Some(H::Code(Language::JavaScript)));
        assert_eq!(of("jsx"), Some(H::Code(Language::JavaScript)));
        assert_eq!(of("go"), Some(H::Code(Language::Go)));
        assert_eq!(of("java"), Some(H::Code(Language::Java)));
        assert_eq!(of("c"), Some(H::Code(Language::C)));
        assert_eq!(of("h"), Some(H::Code(Language::C)));
        assert_eq!(of("cpp"), Some(H::Code(Language::Cpp)));
        assert_eq!(of("C++"), Some(H::Code(Language::Cpp)));
        assert_eq!(of("json"), Some(H::Json));
        assert_eq!(of("toml"), Some(H::Toml));
        assert_eq!(of("yml"), Some(H::Yaml));
        assert_eq!(of("bash"), None);
        assert_eq!(of(""), None);
        assert_eq!(of("rust,ignore"), None);
        // Every language has its own name among the aliases, and the name
        // is what parsing it gives back.
        for lang in HighlightLanguage::ALL {
            assert_eq!(of(lang.name()), Some(lang), "{lang}");
        }
        let err = HighlightLanguage::parse("brainfuck").err();
        assert_eq!(
            err.as_ref().map(HighlightError::code),
            Some("highlight/unknown-language")
        );
        assert!(err.is_some_and(|e| e.to_string().contains("`brainfuck`")));
    }

    #[test]
    fn rust_tokens_by_class() {
        let t = classes(
            HighlightLanguage::Code(Language::Rust),
            "// note\nfn main() { let s = \"a\\n\"; let n = 42; }\n",
        );
        assert!(has(&t, "// note", TokenClass::Comment), "{t:?}");
        assert!(has(&t, "fn", TokenClass::Keyword), "{t:?}");
        assert!(has(&t, "let", TokenClass::Keyword), "{t:?}");
        assert!(has(&t, "main", TokenClass::Function), "{t:?}");
        assert!(has(&t, "\\n", TokenClass::Escape), "{t:?}");
        // Rust's query calls its literals `constant.builtin`.
        assert!(has(&t, "42", TokenClass::Constant), "{t:?}");
        assert!(
            t.iter()
                .any(|(s, c)| s.starts_with('"') && *c == TokenClass::String)
        );
    }

    #[test]
    fn each_language_colours_its_keywords_and_strings() {
        use HighlightLanguage as H;
        let cases: [(H, &str, &str, TokenClass); 12] = [
            (
                H::Code(Language::Python),
                "def f():\n    return 'x'\n",
                "def",
                TokenClass::Keyword,
            ),
            (
                H::Code(Language::JavaScript),
                "const a = 'x';\n",
                "const",
                TokenClass::Keyword,
            ),
            (
                H::Code(Language::TypeScript),
                "let a: number = 1;\n",
                "number",
                TokenClass::Type,
            ),
            (
                H::Code(Language::Tsx),
                "const e = <div>{'x'}</div>;\n",
                "div",
                TokenClass::Tag,
            ),
            (
                H::Code(Language::Go),
                "package main\nfunc main() {}\n",
                "func",
                TokenClass::Keyword,
            ),
            (
                H::Code(Language::Java),
                "class A { int x = 1; }\n",
                "class",
                TokenClass::Keyword,
            ),
            (
                H::Code(Language::C),
                "int main(void) { return 0; }\n",
                "return",
                TokenClass::Keyword,
            ),
            (
                H::Code(Language::Cpp),
                "class A {};\n",
                "class",
                TokenClass::Keyword,
            ),
            (H::Json, "{\"a\": true}\n", "\"a\"", TokenClass::Property),
            (
                H::Toml,
                "[package]\nname = \"x\"\n",
                "name",
                TokenClass::Property,
            ),
            (H::Yaml, "key: value # c\n", "# c", TokenClass::Comment),
            (
                H::Code(Language::JavaScript),
                "f(`t`);\n",
                "`t`",
                TokenClass::String,
            ),
        ];
        for (lang, code, text, class) in cases {
            let t = classes(lang, code);
            assert!(has(&t, text, class), "{lang} {code:?}: {t:?}");
        }
    }

    #[test]
    fn offsets_are_utf16_code_units() {
        // "é" is 2 bytes and 1 unit; "😀" is 4 bytes and 2 units.
        let code = "let s = \"é😀\"; fn f() {}\n";
        let tokens = highlight(HighlightLanguage::Code(Language::Rust), code).unwrap_or_default();
        let units: Vec<u16> = code.encode_utf16().collect();
        let text = |t: &Token| String::from_utf16_lossy(&units[t.start..t.end]);
        let string = tokens.iter().find(|t| t.class == TokenClass::String);
        assert_eq!(string.map(text).as_deref(), Some("\"é😀\""));
        assert_eq!(string.map(|t| (t.start, t.end)), Some((8, 13)));
        let fn_kw = tokens.iter().find(|t| text(t) == "fn");
        // The bytes of `fn` start at 18; its UTF-16 offset is 1 + 2 less.
        assert_eq!(code.find("fn"), Some(18));
        assert_eq!(
            fn_kw.map(|t| (t.start, t.end, t.class)),
            Some((15, 17, TokenClass::Keyword))
        );
        // In order, not overlapping, inside the text.
        for pair in tokens.windows(2) {
            assert!(pair[0].end <= pair[1].start, "{tokens:?}");
        }
        assert!(
            tokens
                .iter()
                .all(|t| t.start < t.end && t.end <= units.len())
        );
    }

    #[test]
    fn answer_shape_is_tuples() {
        let token = Token {
            start: 0,
            end: 2,
            class: TokenClass::Keyword,
        };
        assert_eq!(
            serde_json::to_string(&[token]).ok().as_deref(),
            Some(r#"[[0,2,"keyword"]]"#)
        );
        assert_eq!(
            serde_json::to_string(&HighlightLanguage::Code(Language::Cpp))
                .ok()
                .as_deref(),
            Some(r#""cpp""#)
        );
    }

    #[test]
    fn markup_in_code_is_a_string_token() {
        let code = "let s = \"<img src=x onerror=alert(1)>\";\n";
        let t = classes(HighlightLanguage::Code(Language::Rust), code);
        assert!(
            has(&t, "\"<img src=x onerror=alert(1)>\"", TokenClass::String),
            "{t:?}"
        );
    }

    #[test]
    fn too_large_is_refused() {
        let code = "x".repeat(MAX_HIGHLIGHT_BYTES + 1);
        let err = highlight(HighlightLanguage::Json, &code).err();
        assert_eq!(
            err.as_ref().map(HighlightError::code),
            Some("highlight/too-large")
        );
        // The limit itself is highlighted (the time limit aside: a debug
        // build of the grammar is slow).
        let code = format!("[{}1]", "1,".repeat(MAX_HIGHLIGHT_BYTES / 2 - 2));
        assert_eq!(code.len(), MAX_HIGHLIGHT_BYTES - 1);
        let tokens = highlight_within(HighlightLanguage::Json, &code, Duration::from_secs(60));
        assert!(tokens.is_ok_and(|t| t.len() > MAX_HIGHLIGHT_BYTES / 4));
    }

    #[test]
    fn time_limit_stops_the_work() {
        let line = "fn f(a: u32) -> u32 { let b = a * 2 + 1; b }\n";
        let code = line.repeat(MAX_HIGHLIGHT_BYTES / line.len());
        let started = Instant::now();
        let err = highlight_within(
            HighlightLanguage::Code(Language::Rust),
            &code,
            Duration::from_millis(1),
        )
        .err();
        assert_eq!(
            err.as_ref().map(HighlightError::code),
            Some("highlight/timed-out")
        );
        assert!(started.elapsed() < HIGHLIGHT_TIME_LIMIT);
    }
}
