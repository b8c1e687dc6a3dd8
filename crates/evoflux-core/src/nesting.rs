//! The one pre-parse guard for YAML and JSON from users' and strangers'
//! files.
//!
//! A file from a cloned repository is parsed on every `agents list`, `info`
//! and `run`, so what a parser costs is what a stranger can make every
//! command cost. The YAML parser under `yaml_serde` (libyaml) spends time
//! quadratic in the depth of flow collections: a front matter value of
//! 100,000 nested brackets (200 KB, under the 512 KiB source cap) took 29 s
//! per command. Aliases are the other lever: each `*name` repeats the node
//! `&name` marks, so nine lines of nested aliases expand to gigabytes.
//!
//! Every reader of a user's YAML or JSON calls [`check_yaml`] or
//! [`check_json`] first. Each reads the text once, in linear time, and
//! refuses it before any parser sees it when
//!
//! - collections nest deeper than [`MAX_DEPTH`] levels (`yaml/too-deep`,
//!   `json/too-deep`), or
//! - aliases would repeat more than [`MAX_ALIAS_REPLAY_BYTES`] of the
//!   document (`yaml/too-many-aliases`),
//!
//! naming the line where the bound was crossed.
//!
//! Only real structure counts. The YAML scan follows libyaml's own
//! tokenizer — plain, quoted and block (`|`, `>`) scalars, comments,
//! indentation, simple keys — so a bracket inside a string, a comment or a
//! block scalar is text, as the parser sees it, while block levels count
//! as much as brackets do. Where libyaml would stop with a syntax error the
//! scan stops too and lets the parser report it: nothing after that point
//! is ever parsed, so it cannot cost anything. An alias is weighed by the
//! bytes of the node it repeats, aliases inside that node included, so
//! nesting aliases cannot hide an expansion; where the end of a node is
//! unsure the weight errs large.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use crate::diagnostic::Diagnostic;

/// Deepest nesting accepted: mappings, lists and brackets together.
///
/// Real configuration nests a handful of levels (the agents, skills and
/// plugin manifests seen in the wild reach four; a JSON Schema in an eval
/// perhaps a dozen). Below the parsers' own recursion limits (128), and low
/// enough that libyaml's per-token cost, which grows with the flow depth,
/// stays small.
pub const MAX_DEPTH: usize = 64;

/// Most bytes all aliases of one YAML document may repeat, in total.
///
/// A block of defaults shared by a few dozen steps repeats a few KiB; a
/// billion-laughs bomb passes this within five levels. The parser's work on
/// an accepted file is thus at most the file plus 64 KiB.
pub const MAX_ALIAS_REPLAY_BYTES: u64 = 64 * 1024;

/// Which language the text was read as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    Yaml,
    Json,
}

/// Which bound the text crossed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Nesting deeper than [`Limits::max_depth`].
    Depth,
    /// Aliases repeating more than [`Limits::max_alias_replay`] bytes.
    AliasReplay,
}

/// The bounds a check applies; [`Limits::DEFAULT`] everywhere but tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_depth: usize,
    pub max_alias_replay: u64,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        max_depth: MAX_DEPTH,
        max_alias_replay: MAX_ALIAS_REPLAY_BYTES,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// Text refused before parsing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct NestingError {
    pub syntax: Syntax,
    pub limit: Limit,
    /// The bound that was crossed (levels, or bytes repeated).
    pub bound: u64,
    /// 1-based line of the checked text where the bound was crossed.
    pub line: u32,
}

/// The stable diagnostic code of `limit` crossed in a `syntax` text: the
/// one place these codes are spelled.
pub const fn code(syntax: Syntax, limit: Limit) -> &'static str {
    match (syntax, limit) {
        (Syntax::Yaml, Limit::Depth) => "yaml/too-deep",
        (Syntax::Json, Limit::Depth) => "json/too-deep",
        (_, Limit::AliasReplay) => "yaml/too-many-aliases",
    }
}

impl NestingError {
    /// The stable diagnostic code.
    pub const fn code(&self) -> &'static str {
        code(self.syntax, self.limit)
    }

    /// An error diagnostic on `file`, at [`NestingError::line`] (the checked
    /// text being the whole file).
    pub fn to_diagnostic(&self, file: &Path) -> Diagnostic {
        Diagnostic::error(self.code(), self.to_string())
            .with_file(file)
            .with_line(self.line)
    }
}

impl fmt::Display for NestingError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let language = match self.syntax {
            Syntax::Yaml => "YAML",
            Syntax::Json => "JSON",
        };
        match self.limit {
            Limit::Depth => write!(
                f,
                "{language} nests more than {} levels of mappings, lists and brackets here; \
                 no configuration needs that many: flatten it",
                self.bound
            ),
            Limit::AliasReplay => write!(
                f,
                "YAML aliases would repeat more than {} KiB of the document by here: write the \
                 repeated values out, or share fewer and smaller anchors",
                self.bound / 1024
            ),
        }
    }
}

/// Checks YAML text against [`Limits::DEFAULT`] before it is parsed.
pub fn check_yaml(text: &str) -> Result<(), NestingError> {
    check_yaml_with(text, Limits::DEFAULT)
}

/// [`check_yaml`] with other bounds.
pub fn check_yaml_with(text: &str, limits: Limits) -> Result<(), NestingError> {
    match YamlScan::new(text, limits).run() {
        Ok(()) | Err(Halt::Invalid) => Ok(()),
        Err(Halt::Limit(e)) => Err(e),
    }
}

/// Checks JSON text against [`Limits::DEFAULT`] before it is parsed.
pub fn check_json(text: &str) -> Result<(), NestingError> {
    check_json_with(text, Limits::DEFAULT)
}

/// [`check_json`] with other bounds. Brackets inside strings do not count;
/// the text is otherwise taken as it is (strip JSONC comments first).
pub fn check_json_with(text: &str, limits: Limits) -> Result<(), NestingError> {
    let mut depth = 0usize;
    let mut line = 1u32;
    let mut in_string = false;
    let mut escaped = false;
    for &b in text.as_bytes() {
        if b == b'\n' {
            line = line.saturating_add(1);
        }
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > limits.max_depth {
                    return Err(NestingError {
                        syntax: Syntax::Json,
                        limit: Limit::Depth,
                        bound: limits.max_depth as u64,
                        line,
                    });
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Why the YAML scan ended early.
enum Halt {
    /// A bound was crossed.
    Limit(NestingError),
    /// libyaml stops here with a syntax error; the parser will say so.
    Invalid,
}

/// A token as libyaml's scanner classifies the text at a token start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    End,
    Directive,
    DocumentMarker,
    FlowOpen,
    FlowClose,
    FlowEntry,
    BlockEntry,
    Key,
    Value,
    Alias,
    Anchor,
    Tag,
    BlockScalar,
    SingleQuoted,
    DoubleQuoted,
    Plain,
    Invalid,
}

/// One pushed block indentation level (libyaml's indent stack).
#[derive(Debug, Clone, Copy)]
struct Level {
    column: i64,
    mapping: bool,
    /// A sequence at the mapping's own column (`key:` then `- item`)
    /// nests one level without a new indentation.
    indentless: bool,
}

/// One open flow collection.
#[derive(Debug, Clone, Copy)]
struct FlowLevel {
    mapping: bool,
    /// A `key: value` entry of a sequence is a one-pair mapping: a level
    /// without a bracket.
    pair: bool,
    /// The deepest nesting reached in the current entry: a key's own
    /// nesting sits below the pair mapping made when its `:` comes.
    entry_max: usize,
    /// The deepest nesting reached inside the collection.
    max: usize,
}

/// A place where a block mapping key may start (libyaml's simple key, at
/// flow level 0; keys inside flow collections never change indentation).
#[derive(Debug, Clone, Copy)]
struct SimpleKey {
    column: i64,
    line: u64,
    pos: usize,
}

/// An anchored node: where it starts and, once known, where it ends, as
/// positions in the expanded document (byte offset plus bytes repeated
/// by aliases before it).
#[derive(Debug, Clone, Copy)]
struct Node {
    start: u64,
    end: Option<u64>,
}

/// How an open anchored node ends (always at or after its real end).
#[derive(Debug, Clone, Copy)]
enum Extent {
    /// A block node: at the next token at flow level 0 at or left of the
    /// indentation the anchor was written at, except a `- ` entry at that
    /// very column after a key (a sequence may sit at its key's column).
    Block { column: i64, after_key: bool },
    /// A node inside a flow collection: at the next `,` or closing bracket
    /// of its collection.
    Flow { level: usize },
    /// A flow collection: once its closing bracket is behind.
    Collection { level: usize },
}

#[derive(Debug, Clone, Copy)]
struct Open {
    node: usize,
    extent: Extent,
}

/// An anchor whose node has not started yet, with where it was written.
#[derive(Debug, Clone, Copy)]
struct Pending {
    node: usize,
    line: u64,
    flow: usize,
    /// The block indentation at the anchor.
    indent: i64,
    /// Whether the anchor follows a block `?` or `:`.
    after_key: bool,
}

const BOM: &[u8] = "\u{feff}".as_bytes();

/// libyaml's scanner, reduced to what decides structure: the flow level,
/// the indent stack, simple keys and the extent of scalars, plus the
/// anchors and aliases it meets.
struct YamlScan<'a> {
    s: &'a [u8],
    pos: usize,
    /// Column in characters, as libyaml counts it.
    column: i64,
    /// Line as libyaml counts it (every line break), for simple keys.
    line: u64,
    /// Line as an editor counts it (`\n`), for reports.
    text_line: u32,
    /// Where the last token ended: a node ends with its last token, not
    /// with the blank lines and comments after it.
    token_end: usize,
    flow: usize,
    flow_levels: Vec<FlowLevel>,
    pairs: usize,
    levels: Vec<Level>,
    indentless: usize,
    key_allowed: bool,
    key: Option<SimpleKey>,
    /// The deepest nesting reached since `key` was saved: the mapping its
    /// `:` opens holds all of it.
    key_max: usize,
    /// The last token other than an anchor or a tag.
    last: Tok,
    limits: Limits,
    replayed: u64,
    anchors: HashMap<&'a [u8], usize>,
    nodes: Vec<Node>,
    open: Vec<Open>,
    pending: Option<Pending>,
}

impl<'a> YamlScan<'a> {
    fn new(text: &'a str, limits: Limits) -> Self {
        let s = text.as_bytes();
        YamlScan {
            // The reader drops a leading byte-order mark.
            pos: if s.starts_with(BOM) { BOM.len() } else { 0 },
            s,
            column: 0,
            line: 0,
            text_line: 1,
            token_end: 0,
            flow: 0,
            flow_levels: Vec::new(),
            pairs: 0,
            levels: Vec::new(),
            indentless: 0,
            key_allowed: true,
            key: None,
            key_max: 0,
            last: Tok::End,
            limits,
            replayed: 0,
            anchors: HashMap::new(),
            nodes: Vec::new(),
            open: Vec::new(),
            pending: None,
        }
    }

    // --- Characters -------------------------------------------------------

    /// The byte `k` ahead; 0 past the end (libyaml's buffer ends in NUL, and
    /// its reader refuses a NUL in the text, so both end the scan).
    fn byte(&self, k: usize) -> u8 {
        self.s.get(self.pos + k).copied().unwrap_or(0)
    }

    fn at_end(&self) -> bool {
        self.byte(0) == 0
    }

    fn is_blank(&self, k: usize) -> bool {
        matches!(self.byte(k), b' ' | b'\t')
    }

    /// The length of the line break `k` bytes ahead, 0 if none: CR LF, CR,
    /// LF, NEL, LS and PS all break lines for libyaml.
    fn break_len(&self, k: usize) -> usize {
        match (self.byte(k), self.byte(k + 1), self.byte(k + 2)) {
            (b'\r', b'\n', _) => 2,
            (b'\r' | b'\n', _, _) => 1,
            (0xC2, 0x85, _) => 2,
            (0xE2, 0x80, 0xA8 | 0xA9) => 3,
            _ => 0,
        }
    }

    fn is_break(&self, k: usize) -> bool {
        self.break_len(k) > 0
    }

    fn is_breakz(&self, k: usize) -> bool {
        self.is_break(k) || self.byte(k) == 0
    }

    fn is_blankz(&self, k: usize) -> bool {
        self.is_blank(k) || self.is_breakz(k)
    }

    /// Steps over one character.
    fn advance(&mut self) {
        let width = match self.byte(0) {
            0x00..=0x7F => 1,
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            _ => 4,
        };
        self.pos = (self.pos + width).min(self.s.len());
        self.column += 1;
    }

    /// Steps over one line break.
    fn skip_break(&mut self) {
        let len = self.break_len(0);
        if len == 0 {
            return;
        }
        if self.s[self.pos..self.pos + len].contains(&b'\n') {
            self.text_line = self.text_line.saturating_add(1);
        }
        self.pos += len;
        self.column = 0;
        self.line += 1;
    }

    fn at_document_marker(&self) -> bool {
        self.column == 0
            && (self.s[self.pos..].starts_with(b"---") || self.s[self.pos..].starts_with(b"..."))
            && self.is_blankz(3)
    }

    // --- Structure ----------------------------------------------------------

    fn indent(&self) -> i64 {
        self.levels.last().map_or(-1, |l| l.column)
    }

    /// How many collections are open here.
    fn depth(&self) -> usize {
        self.levels.len() + self.indentless + self.flow + self.pairs
    }

    /// Records that nesting reached `depth`, refusing it past the bound.
    fn reach(&mut self, depth: usize) -> Result<(), Halt> {
        if depth > self.limits.max_depth {
            return Err(Halt::Limit(NestingError {
                syntax: Syntax::Yaml,
                limit: Limit::Depth,
                bound: self.limits.max_depth as u64,
                line: self.text_line,
            }));
        }
        self.key_max = self.key_max.max(depth);
        if let Some(top) = self.flow_levels.last_mut() {
            top.entry_max = top.entry_max.max(depth);
            top.max = top.max.max(depth);
        }
        Ok(())
    }

    /// Opens a block collection at `column` unless one is open there;
    /// `below` is the nesting it holds from the start (its first key's).
    fn roll(&mut self, column: i64, mapping: bool, below: usize) -> Result<(), Halt> {
        if self.flow == 0 && self.indent() < column {
            self.levels.push(Level {
                column,
                mapping,
                indentless: false,
            });
            self.reach(self.depth().max(below + 1))?;
        }
        Ok(())
    }

    /// A `?` or `:` in a flow sequence entry makes the entry a one-pair
    /// mapping holding everything written in the entry so far.
    fn start_pair(&mut self) -> Result<(), Halt> {
        let Some(top) = self.flow_levels.last_mut() else {
            return Ok(());
        };
        if top.mapping || top.pair {
            return Ok(());
        }
        top.pair = true;
        let below = top.entry_max;
        self.pairs += 1;
        self.reach(self.depth().max(below + 1))
    }

    fn end_pair(&mut self) {
        if let Some(top) = self.flow_levels.last_mut()
            && top.pair
        {
            top.pair = false;
            self.pairs -= 1;
        }
    }

    fn unroll(&mut self, column: i64) {
        if self.flow > 0 {
            return;
        }
        while self.indent() > column {
            if self.levels.pop().is_some_and(|l| l.indentless) {
                self.indentless -= 1;
            }
        }
    }

    fn save_key(&mut self) {
        if self.key_allowed && self.flow == 0 {
            self.key = Some(SimpleKey {
                column: self.column,
                line: self.line,
                pos: self.pos,
            });
            self.key_max = self.depth();
        }
    }

    fn remove_key(&mut self) {
        if self.flow == 0 {
            self.key = None;
        }
    }

    /// A key candidate lapses at the end of its line or after 1024 bytes.
    fn stale_key(&mut self) {
        if self
            .key
            .is_some_and(|k| k.line < self.line || k.pos + 1024 < self.pos)
        {
            self.key = None;
        }
    }

    // --- Aliases ------------------------------------------------------------

    /// The current position in the expanded document.
    fn expanded(&self) -> u64 {
        (self.pos as u64).saturating_add(self.replayed)
    }

    /// Ends `node` with the last token scanned.
    fn end_node(&mut self, node: usize) {
        // Only blanks and comments lie between the last token and here, so
        // no alias has repeated anything since.
        let end = (self.token_end as u64).saturating_add(self.replayed);
        if let Some(n) = self.nodes.get_mut(node) {
            n.end = Some(end);
        }
    }

    /// Ends the open anchored nodes that `tok` closes, innermost first.
    fn close_nodes(&mut self, tok: Tok) {
        while let Some(top) = self.open.last().copied() {
            let closes = matches!(tok, Tok::End | Tok::DocumentMarker | Tok::Directive)
                || match top.extent {
                    Extent::Block { column, after_key } => {
                        self.flow == 0
                            && (self.column < column
                                || (self.column == column
                                    && !(after_key && tok == Tok::BlockEntry)))
                    }
                    Extent::Flow { level } => {
                        self.flow < level
                            || (self.flow == level
                                && matches!(tok, Tok::FlowEntry | Tok::FlowClose))
                    }
                    Extent::Collection { level } => self.flow <= level,
                };
            if !closes {
                break;
            }
            self.open.pop();
            self.end_node(top.node);
        }
    }

    /// Ends the anchored flow collections whose closing bracket was just
    /// scanned.
    fn close_collections(&mut self) {
        while let Some(top) = self.open.last().copied() {
            match top.extent {
                Extent::Collection { level } if self.flow <= level => {
                    self.open.pop();
                    self.end_node(top.node);
                }
                _ => break,
            }
        }
    }

    /// Adds the weight of the node `name` marks to what aliases repeat.
    fn replay(&mut self, name: &[u8], start: u64) -> Result<(), Halt> {
        let Some(node) = self.anchors.get(name).and_then(|&i| self.nodes.get(i)) else {
            // An undefined alias: the parser refuses it.
            return Err(Halt::Invalid);
        };
        let weight = node.end.unwrap_or(start).saturating_sub(node.start);
        self.replayed = self.replayed.saturating_add(weight);
        if self.replayed > self.limits.max_alias_replay {
            return Err(Halt::Limit(NestingError {
                syntax: Syntax::Yaml,
                limit: Limit::AliasReplay,
                bound: self.limits.max_alias_replay,
                line: self.text_line,
            }));
        }
        Ok(())
    }

    // --- The token loop -----------------------------------------------------

    fn run(&mut self) -> Result<(), Halt> {
        loop {
            self.scan_to_next_token();
            self.stale_key();
            self.unroll(self.column);
            let tok = self.classify();
            if tok == Tok::End {
                self.close_nodes(Tok::End);
                return Ok(());
            }
            // A sequence at its key's column ends at the next token there
            // that is not an entry.
            if self.flow == 0 && tok != Tok::BlockEntry {
                let column = self.column;
                if let Some(top) = self.levels.last_mut()
                    && top.column == column
                    && top.indentless
                {
                    top.indentless = false;
                    self.indentless -= 1;
                }
            }
            let (collection, scalar) = self.start_pending(tok)?;
            self.close_nodes(tok);
            if let Some(node) = collection {
                self.open.push(Open {
                    node,
                    extent: Extent::Collection { level: self.flow },
                });
            }
            self.fetch(tok)?;
            self.token_end = self.pos;
            if let Some(node) = scalar {
                self.end_node(node);
            }
            if tok == Tok::FlowClose {
                self.close_collections();
            }
            if !matches!(tok, Tok::Anchor | Tok::Tag) {
                self.last = tok;
            }
        }
    }

    /// Decides what node a pending anchor marks, now that `tok` follows it:
    /// returns the anchor if it marks the flow collection `tok` opens, or
    /// the scalar `tok` is (ended once it is scanned).
    fn start_pending(&mut self, tok: Tok) -> Result<(Option<usize>, Option<usize>), Halt> {
        let Some(p) = self.pending.take() else {
            return Ok((None, None));
        };
        // On a later line of a block, the parser may put a mapping start
        // (an implicit key) between the anchor and this token: the anchor
        // then marks the whole mapping.
        let same_node = self.flow > 0 || self.line == p.line;
        match tok {
            Tok::Tag => self.pending = Some(p),
            Tok::Anchor | Tok::Alias if same_node => return Err(Halt::Invalid),
            Tok::FlowOpen if same_node => return Ok((Some(p.node), None)),
            Tok::Plain | Tok::SingleQuoted | Tok::DoubleQuoted | Tok::BlockScalar if same_node => {
                return Ok((None, Some(p.node)));
            }
            _ => {
                let extent = if p.flow == 0 {
                    Extent::Block {
                        column: p.indent,
                        after_key: p.after_key,
                    }
                } else {
                    Extent::Flow { level: p.flow }
                };
                self.open.push(Open {
                    node: p.node,
                    extent,
                });
            }
        }
        Ok((None, None))
    }

    /// Skips spaces, comments and line breaks up to the next token.
    fn scan_to_next_token(&mut self) {
        loop {
            if self.column == 0 && self.s[self.pos..].starts_with(BOM) {
                self.advance();
            }
            while self.byte(0) == b' '
                || ((self.flow > 0 || !self.key_allowed) && self.byte(0) == b'\t')
            {
                self.advance();
            }
            if self.byte(0) == b'#' {
                while !self.is_breakz(0) {
                    self.advance();
                }
            }
            if !self.is_break(0) {
                return;
            }
            self.skip_break();
            if self.flow == 0 {
                self.key_allowed = true;
            }
        }
    }

    fn classify(&self) -> Tok {
        let c = self.byte(0);
        if c == 0 {
            return Tok::End;
        }
        if self.column == 0 && c == b'%' {
            return Tok::Directive;
        }
        if self.at_document_marker() {
            return Tok::DocumentMarker;
        }
        let flow = self.flow > 0;
        match c {
            b'[' | b'{' => Tok::FlowOpen,
            b']' | b'}' => Tok::FlowClose,
            b',' => Tok::FlowEntry,
            b'-' if self.is_blankz(1) => Tok::BlockEntry,
            b'?' if flow || self.is_blankz(1) => Tok::Key,
            b':' if flow || self.is_blankz(1) => Tok::Value,
            b'*' => Tok::Alias,
            b'&' => Tok::Anchor,
            b'!' => Tok::Tag,
            b'|' | b'>' if !flow => Tok::BlockScalar,
            b'\'' => Tok::SingleQuoted,
            b'"' => Tok::DoubleQuoted,
            b'-' if !self.is_blank(1) => Tok::Plain,
            b'?' | b':' if !flow && !self.is_blankz(1) => Tok::Plain,
            // Indicators that start nothing here (`-?:` before a blank in
            // a flow, `|>` in a flow, `#%@` and the backquote).
            b'-' | b'?' | b':' | b'#' | b'|' | b'>' | b'%' | b'@' | b'`' => Tok::Invalid,
            _ if self.is_blankz(0) => Tok::Invalid,
            _ => Tok::Plain,
        }
    }

    fn fetch(&mut self, tok: Tok) -> Result<(), Halt> {
        let block = self.flow == 0;
        match tok {
            Tok::End => {}
            Tok::Invalid => return Err(Halt::Invalid),
            Tok::Directive => {
                self.unroll(-1);
                self.key = None;
                self.key_allowed = false;
                while !self.is_breakz(0) {
                    self.advance();
                }
            }
            Tok::DocumentMarker => {
                self.unroll(-1);
                self.key = None;
                self.key_allowed = false;
                for _ in 0..3 {
                    self.advance();
                }
            }
            Tok::FlowOpen => {
                self.save_key();
                self.flow += 1;
                let depth = self.depth();
                self.flow_levels.push(FlowLevel {
                    mapping: self.byte(0) == b'{',
                    pair: false,
                    entry_max: depth,
                    max: depth,
                });
                self.reach(depth)?;
                self.key_allowed = true;
                self.advance();
            }
            Tok::FlowClose => {
                self.remove_key();
                self.flow = self.flow.saturating_sub(1);
                if let Some(closed) = self.flow_levels.pop() {
                    if closed.pair {
                        self.pairs -= 1;
                    }
                    if let Some(top) = self.flow_levels.last_mut() {
                        top.entry_max = top.entry_max.max(closed.max);
                        top.max = top.max.max(closed.max);
                    }
                }
                self.key_allowed = false;
                self.advance();
            }
            Tok::FlowEntry => {
                self.remove_key();
                self.end_pair();
                let depth = self.depth();
                if let Some(top) = self.flow_levels.last_mut() {
                    top.entry_max = depth;
                }
                self.key_allowed = true;
                self.advance();
            }
            Tok::BlockEntry => {
                // An entry inside brackets is a parse error.
                if !block || !self.key_allowed {
                    return Err(Halt::Invalid);
                }
                let column = self.column;
                if self.indent() < column {
                    self.roll(column, false, 0)?;
                } else if let Some(top) = self.levels.last_mut()
                    && top.column == column
                    && top.mapping
                    && !top.indentless
                {
                    top.indentless = true;
                    self.indentless += 1;
                    self.reach(self.depth())?;
                }
                self.remove_key();
                self.key_allowed = true;
                self.advance();
            }
            Tok::Key => {
                if block {
                    if !self.key_allowed {
                        return Err(Halt::Invalid);
                    }
                    self.roll(self.column, true, 0)?;
                } else {
                    self.start_pair()?;
                }
                self.remove_key();
                self.key_allowed = block;
                self.advance();
            }
            Tok::Value => {
                if block {
                    if let Some(key) = self.key.take() {
                        self.roll(key.column, true, self.key_max)?;
                        self.key_allowed = false;
                    } else {
                        if !self.key_allowed {
                            return Err(Halt::Invalid);
                        }
                        self.roll(self.column, true, 0)?;
                        self.key_allowed = true;
                    }
                } else {
                    self.start_pair()?;
                    self.key_allowed = false;
                }
                self.advance();
            }
            Tok::Anchor | Tok::Alias => {
                let start = self.expanded();
                let line = self.line;
                let indent = self.indent();
                self.save_key();
                self.key_allowed = false;
                self.advance();
                let name_start = self.pos;
                while matches!(self.byte(0), b'0'..=b'9' | b'A'..=b'Z' | b'a'..=b'z' | b'_' | b'-')
                {
                    self.advance();
                }
                let name = &self.s[name_start..self.pos];
                if name.is_empty()
                    || !(self.is_blankz(0)
                        || matches!(
                            self.byte(0),
                            b'?' | b':' | b',' | b']' | b'}' | b'%' | b'@' | b'`'
                        ))
                {
                    return Err(Halt::Invalid);
                }
                if tok == Tok::Alias {
                    self.replay(name, start)?;
                } else {
                    self.nodes.push(Node { start, end: None });
                    self.anchors.insert(name, self.nodes.len() - 1);
                    self.pending = Some(Pending {
                        node: self.nodes.len() - 1,
                        line,
                        flow: self.flow,
                        indent,
                        after_key: block && matches!(self.last, Tok::Key | Tok::Value),
                    });
                }
            }
            Tok::Tag => {
                self.save_key();
                self.key_allowed = false;
                self.scan_tag()?;
            }
            Tok::BlockScalar => {
                self.remove_key();
                self.key_allowed = true;
                self.scan_block_scalar()?;
            }
            Tok::SingleQuoted | Tok::DoubleQuoted => {
                self.save_key();
                self.key_allowed = false;
                self.scan_quoted(tok == Tok::SingleQuoted)?;
            }
            Tok::Plain => {
                self.save_key();
                self.key_allowed = false;
                self.scan_plain()?;
            }
        }
        Ok(())
    }

    // --- Scalars and properties ---------------------------------------------

    fn scan_tag(&mut self) -> Result<(), Halt> {
        fn uri(c: u8, verbatim: bool) -> bool {
            c.is_ascii_alphanumeric()
                || matches!(
                    c,
                    b'_' | b'-'
                        | b';'
                        | b'/'
                        | b'?'
                        | b':'
                        | b'@'
                        | b'&'
                        | b'='
                        | b'+'
                        | b'$'
                        | b'.'
                        | b'%'
                        | b'!'
                        | b'~'
                        | b'*'
                        | b'\''
                        | b'('
                        | b')'
                )
                || (verbatim && matches!(c, b',' | b'[' | b']'))
        }
        self.advance();
        if self.byte(0) == b'<' {
            self.advance();
            while uri(self.byte(0), true) {
                self.advance();
            }
            if self.byte(0) != b'>' {
                return Err(Halt::Invalid);
            }
            self.advance();
        } else {
            while uri(self.byte(0), false) {
                self.advance();
            }
        }
        if self.is_blankz(0) || (self.flow > 0 && self.byte(0) == b',') {
            Ok(())
        } else {
            Err(Halt::Invalid)
        }
    }

    fn scan_plain(&mut self) -> Result<(), Halt> {
        let indent = self.indent() + 1;
        let mut leading_blanks = false;
        loop {
            if self.at_document_marker() || self.byte(0) == b'#' {
                break;
            }
            while !self.is_blankz(0) {
                let c = self.byte(0);
                if self.flow > 0
                    && c == b':'
                    && matches!(self.byte(1), b',' | b'?' | b'[' | b']' | b'{' | b'}')
                {
                    return Err(Halt::Invalid);
                }
                if (c == b':' && self.is_blankz(1))
                    || (self.flow > 0 && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
                {
                    break;
                }
                self.advance();
            }
            if !(self.is_blank(0) || self.is_break(0)) {
                break;
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    if leading_blanks && self.column < indent && self.byte(0) == b'\t' {
                        return Err(Halt::Invalid);
                    }
                    self.advance();
                } else {
                    self.skip_break();
                    leading_blanks = true;
                }
            }
            // A continuation line must be indented past the collection.
            if self.flow == 0 && self.column < indent {
                break;
            }
        }
        if leading_blanks {
            self.key_allowed = true;
        }
        Ok(())
    }

    fn scan_quoted(&mut self, single: bool) -> Result<(), Halt> {
        let quote = if single { b'\'' } else { b'"' };
        self.advance();
        loop {
            if self.at_document_marker() || self.at_end() {
                return Err(Halt::Invalid);
            }
            while !self.is_blankz(0) {
                let c = self.byte(0);
                if single && c == b'\'' && self.byte(1) == b'\'' {
                    self.advance();
                    self.advance();
                } else if c == quote {
                    break;
                } else if !single && c == b'\\' && self.is_break(1) {
                    self.advance();
                    self.skip_break();
                    break;
                } else if !single && c == b'\\' {
                    let digits = match self.byte(1) {
                        b'0' | b'a' | b'b' | b't' | b'\t' | b'n' | b'v' | b'f' | b'r' | b'e'
                        | b' ' | b'"' | b'/' | b'\\' | b'N' | b'_' | b'L' | b'P' => 0,
                        b'x' => 2,
                        b'u' => 4,
                        b'U' => 8,
                        _ => return Err(Halt::Invalid),
                    };
                    self.advance();
                    self.advance();
                    for _ in 0..digits {
                        if !self.byte(0).is_ascii_hexdigit() {
                            return Err(Halt::Invalid);
                        }
                        self.advance();
                    }
                } else {
                    self.advance();
                }
            }
            if self.byte(0) == quote {
                self.advance();
                return Ok(());
            }
            while self.is_blank(0) || self.is_break(0) {
                if self.is_blank(0) {
                    self.advance();
                } else {
                    self.skip_break();
                }
            }
        }
    }

    fn scan_block_scalar(&mut self) -> Result<(), Halt> {
        self.advance();
        let mut increment = 0i64;
        let digit = |c: u8| i64::from(c - b'0');
        match self.byte(0) {
            b'+' | b'-' => {
                self.advance();
                match self.byte(0) {
                    b'0' => return Err(Halt::Invalid),
                    c @ b'1'..=b'9' => {
                        increment = digit(c);
                        self.advance();
                    }
                    _ => {}
                }
            }
            b'0' => return Err(Halt::Invalid),
            c @ b'1'..=b'9' => {
                increment = digit(c);
                self.advance();
                if matches!(self.byte(0), b'+' | b'-') {
                    self.advance();
                }
            }
            _ => {}
        }
        while self.is_blank(0) {
            self.advance();
        }
        if self.byte(0) == b'#' {
            while !self.is_breakz(0) {
                self.advance();
            }
        }
        if !self.is_breakz(0) {
            return Err(Halt::Invalid);
        }
        self.skip_break();
        let mut indent = match increment {
            0 => 0,
            i if self.indent() >= 0 => self.indent() + i,
            i => i,
        };
        self.block_scalar_breaks(&mut indent)?;
        while self.column == indent && !self.at_end() {
            while !self.is_breakz(0) {
                self.advance();
            }
            self.skip_break();
            self.block_scalar_breaks(&mut indent)?;
        }
        Ok(())
    }

    /// Skips the indentation and empty lines of a block scalar; settles its
    /// indentation from the first non-empty line when none was given.
    fn block_scalar_breaks(&mut self, indent: &mut i64) -> Result<(), Halt> {
        let mut max_indent = 0;
        loop {
            while (*indent == 0 || self.column < *indent) && self.byte(0) == b' ' {
                self.advance();
            }
            max_indent = max_indent.max(self.column);
            if (*indent == 0 || self.column < *indent) && self.byte(0) == b'\t' {
                return Err(Halt::Invalid);
            }
            if !self.is_break(0) {
                break;
            }
            self.skip_break();
        }
        if *indent == 0 {
            *indent = max_indent.max(self.indent() + 1).max(1);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fewest levels the guard accepts `text` with.
    fn guard_depth(text: &str) -> usize {
        (0..=200)
            .find(|&max_depth| {
                check_yaml_with(
                    text,
                    Limits {
                        max_depth,
                        ..Limits::DEFAULT
                    },
                )
                .is_ok()
            })
            .unwrap()
    }

    /// How deep the parser nests `text`'s value.
    fn parsed_depth(text: &str) -> usize {
        fn depth(v: &yaml_serde::Value) -> usize {
            match v {
                yaml_serde::Value::Sequence(items) => {
                    1 + items.iter().map(depth).max().unwrap_or(0)
                }
                yaml_serde::Value::Mapping(m) => {
                    1 + m
                        .iter()
                        .map(|(k, v)| depth(k).max(depth(v)))
                        .max()
                        .unwrap_or(0)
                }
                yaml_serde::Value::Tagged(t) => depth(&t.value),
                _ => 0,
            }
        }
        let value: yaml_serde::Value =
            yaml_serde::from_str(text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
        depth(&value)
    }

    fn deep(n: usize) -> String {
        format!("{}{}", "[".repeat(n), "]".repeat(n))
    }

    #[test]
    fn deep_brackets_are_refused_at_their_line() {
        let text = format!("name: x\ndescription: d\ntools: {}\n", deep(100_000));
        let e = check_yaml(&text).unwrap_err();
        assert_eq!(e.code(), "yaml/too-deep");
        assert_eq!((e.limit, e.bound, e.line), (Limit::Depth, 64, 3));
        let d = e.to_diagnostic(Path::new("f.yaml"));
        assert_eq!(
            (d.code.as_ref(), d.locator.line),
            ("yaml/too-deep", Some(3))
        );
        // Exactly at the limit: the mapping is one level, brackets the rest.
        assert!(check_yaml(&format!("k: {}\n", deep(MAX_DEPTH - 1))).is_ok());
        assert!(check_yaml(&format!("k: {}\n", deep(MAX_DEPTH))).is_err());
        // Unclosed brackets cost the parser as much.
        assert!(check_yaml(&format!("k: {}\n", "{a: ".repeat(100))).is_err());
    }

    #[test]
    fn block_levels_count_like_brackets() {
        // Compact sequences: one level per `- `, all on one line.
        let text = format!("k:\n{}x\n", "- ".repeat(MAX_DEPTH));
        assert_eq!(check_yaml(&text).unwrap_err().line, 2);
        assert_eq!(guard_depth("a:\n  b:\n    - [c, {d: e}]\n"), 5);
        assert_eq!(parsed_depth("a:\n  b:\n    - [c, {d: e}]\n"), 5);
        // A sequence at its key's column is a level of its own.
        let indentless = "a:\n- b:\n  - c\n- d\ne: f\n";
        assert_eq!(guard_depth(indentless), parsed_depth(indentless));
        assert_eq!(guard_depth(indentless), 4);
    }

    #[test]
    fn levels_without_brackets_or_indentation_count() {
        for text in [
            // A `key: value` entry of a flow sequence is a one-pair mapping.
            "[k: v]\n",
            "[a, ? b : c, [d: [e: f]]]\n",
            // A key holds its own nesting below the mapping its `:` opens.
            "[[a]: b]\n",
            "{!t }: v\n",
            "? []: x\n",
            "&a [x, {y: z}]: v\n",
        ] {
            assert_eq!(guard_depth(text), parsed_depth(text), "{text}");
        }
    }

    #[test]
    fn brackets_in_text_do_not_count() {
        let b = deep(200);
        let open = "[".repeat(200);
        for text in [
            format!("k: \"{b}\"\n"),
            format!("k: '{open} it''s'\n"),
            format!("k: v # {open}\n# {open}\n"),
            format!("k: |\n  {open}\n  {b}\nj: x\n"),
            format!("k: >-\n    {open}\n\n    x\nj: x\n"),
            format!("- |2\n   {open}\n- x\n"),
            // Inside a plain scalar of a block, brackets are text.
            format!("k: see {open}\n"),
            format!("k: a line\n  {open} continued\nj: x\n"),
            format!("k: http://x/{open}\n"),
            // A quoted scalar may run over lines, even at column 0.
            format!("k: \"one\n{open}\n two\"\nj: x\n"),
            format!("k: [\"{open}\", '{open}', a b]\n"),
            format!("k: \"\\\"{open}\"\n"),
        ] {
            assert!(guard_depth(&text) <= 2, "{text}");
            assert_eq!(guard_depth(&text), parsed_depth(&text), "{text}");
        }
    }

    #[test]
    fn structure_hidden_from_naive_scanners_counts() {
        let b = deep(100);
        for text in [
            // An apostrophe inside a plain scalar does not open a string.
            format!("k: don't\nj: {b}\nl: it's\n"),
            // A comment ends at any line break libyaml knows.
            format!("# c\u{85}j: {b}\n"),
            format!("# c\u{2028}j: {b}\n"),
            format!("# c\rj: {b}\n"),
            // `#` inside a plain scalar is text; the scalar ends at `: `.
            format!("k: a#b\nj: {b}\n"),
            // A block scalar ends at the first line left of its indentation.
            format!("a:\n  k: |\n    text [\n  j: {b}\n"),
            format!("k: |\nj: {b}\n"),
            // An escaped quote does not end a string; a doubled one neither.
            format!("k: \"a\\\"\"\nj: {b}\n"),
            format!("k: 'a'''\nj: {b}\n"),
            // A tag, an anchor and an alias are tokens.
            format!("k: !t {b}\n"),
            format!("k: &x {b}\n"),
            // Documents and directives.
            format!("%YAML 1.1\n---\nj: {b}\n"),
        ] {
            assert!(check_yaml(&text).is_err(), "{text:?}");
            assert_eq!(check_yaml(&text).unwrap_err().code(), "yaml/too-deep");
        }
    }

    #[test]
    fn text_the_parser_refuses_is_left_to_the_parser() {
        // An unterminated string: libyaml reads it as text to the end and
        // fails, so nothing after its quote is structure.
        let text = format!("k: \"abc\nj: {}\n", deep(100));
        assert!(check_yaml(&text).is_ok());
        assert!(yaml_serde::from_str::<yaml_serde::Value>(&text).is_err());
        // A character that starts no token.
        let text = format!("k: @x\nj: {}\n", deep(100));
        assert!(check_yaml(&text).is_ok());
        assert!(yaml_serde::from_str::<yaml_serde::Value>(&text).is_err());
    }

    #[test]
    fn json_depth_counts_brackets_outside_strings() {
        let ok = format!("{{\"a\": {}}}", deep(MAX_DEPTH - 1));
        assert!(check_json(&ok).is_ok());
        let e = check_json(&format!("{{\n\"a\":\n{}}}", deep(MAX_DEPTH))).unwrap_err();
        assert_eq!((e.code(), e.line), ("json/too-deep", 3));
        let text = format!("{{\"a\": \"\\\"{}\\\\\", \"b\": [1]}}", "[".repeat(500));
        assert!(check_json(&text).is_ok());
    }

    /// A document repeating `base` through `fanout` aliases per level, for
    /// `levels` levels.
    fn laughs(base: usize, fanout: usize, levels: usize) -> String {
        let mut text = format!("l0: &l0 [{}]\n", vec!["lol"; base].join(", "));
        for level in 1..=levels {
            let aliases = vec![format!("*l{}", level - 1); fanout].join(", ");
            text.push_str(&format!("l{level}: &l{level} [{aliases}]\n"));
        }
        text
    }

    #[test]
    fn alias_expansion_is_bounded() {
        // Nine strings nine times over nine levels (387 million strings).
        let e = check_yaml(&laughs(9, 9, 9)).unwrap_err();
        assert_eq!((e.code(), e.line), ("yaml/too-many-aliases", 5));
        // One wide anchor repeated: 10 × 10 KiB.
        let e = check_yaml(&laughs(2_000, 10, 1)).unwrap_err();
        assert_eq!(e.limit, Limit::AliasReplay);
        // A handful of small repeats is fine.
        assert!(check_yaml(&laughs(3, 3, 3)).is_ok());
        // Block anchors end with their block, not with the document.
        let mut text =
            String::from("defaults: &d\n  model: m\n  tools:\n  - a\n  - b\n\n# note\nsteps:\n");
        for i in 0..500 {
            text.push_str(&format!("- <<: *d\n  name: s{i}\n"));
        }
        assert!(check_yaml(&text).is_ok());
        let value: yaml_serde::Value = yaml_serde::from_str(&text).unwrap();
        assert_eq!(value["steps"].as_sequence().map(Vec::len), Some(500));
        // Aliases inside an anchored node weigh in when the node is repeated.
        let nested = "a: &a [x, y]\nb: &b [*a, *a, *a]\nc: [*b, *b]\n";
        let mut over = Limits::DEFAULT;
        over.max_alias_replay = 60;
        assert!(check_yaml_with(nested, over).is_err());
        over.max_alias_replay = 200;
        assert!(check_yaml_with(nested, over).is_ok());
    }

    #[test]
    fn realistic_files_pass() {
        let skill = "name: pdf-tools\n\
            description: \"Use when: the user asks to fill, merge or split PDFs [forms, scans]\"\n\
            license: Complete terms in LICENSE.txt\n\
            allowed-tools: [Read, Write, \"Bash(python3 scripts/*.py:*)\"]\n\
            metadata:\n  version: 1.2.0\n  tags:\n    - pdf\n    - documents\n  \
            author: {name: A. Person, url: 'https://example.com/~a'}\n\
            argument-hint: \"[file] [--pages 1-3]\"\n\
            user-invocable: true\n\
            notes: >\n  Works on scanned [OCR] files too;\n  see {docs}.\n\
            example: |\n  ```python\n  pages = [p for p in doc[0:3]]\n  ```\n";
        let fleet = "version: 3\nname: review\nmaxWorkers: 2\nsteps:\n  - id: plan\n    \
            agent: planner\n    prompt: |\n      Plan the change for {{issue}}.\n      Keep [scope] small.\n  \
            - id: build\n    agent: coder\n    needs: [plan]\n    writes: [\"src/**\", 'tests/**']\n    \
            loop: {until: tests-pass, max: 3}\n";
        let script = "turns:\n  - text: \"Reading the file.\"\n    tool_calls:\n      - name: read\n        \
            arguments: {path: src/main.rs}\n  - text: ''\n    tool_calls:\n      - name: edit\n        \
            raw_arguments: '{\"path\": \"a.rs\", \"edits\": [[1, \"x\"'\n  - text: |\n      Done: [1/2] {ok}\n";
        for text in [skill, fleet, script] {
            assert!(check_yaml(text).is_ok(), "{text}");
            assert_eq!(guard_depth(text), parsed_depth(text), "{text}");
            assert!(guard_depth(text) <= 6);
        }
        let plugin = r#"{
  "name": "review-kit",
  "version": "1.0.0",
  "description": "Skills for reviews [beta] {draft}",
  "skills": ["skills/"],
  "extensions": {"com.github.awesome-copilot": {"skills": ["../x/skills/review"]}},
  "mcpServers": {"gh": {"command": "gh-mcp", "args": ["--ro", "\"[x]\""], "env": {"A": "${A}"}}}
}"#;
        assert!(check_json(plugin).is_ok());
        assert!(
            check_json_with(
                plugin,
                Limits {
                    max_depth: 4,
                    ..Limits::DEFAULT
                }
            )
            .is_ok()
        );
    }
}
