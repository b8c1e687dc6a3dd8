//! What the index knows about one file: its definitions and its references,
//! each with the exact range a reader can open.

use serde::{Deserialize, Serialize};

use crate::lang::Language;

/// What kind of thing a definition defines. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum DefKind {
    Function,
    Method,
    /// A struct, enum, union, type alias or a Go type.
    Type,
    Class,
    /// A trait or an interface.
    Interface,
    Constant,
    Module,
    Macro,
}

impl DefKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            DefKind::Function => "function",
            DefKind::Method => "method",
            DefKind::Type => "type",
            DefKind::Class => "class",
            DefKind::Interface => "interface",
            DefKind::Constant => "constant",
            DefKind::Module => "module",
            DefKind::Macro => "macro",
        }
    }

    /// Whether definitions of this kind hold others (and so qualify their
    /// names: `Type::method`, `module.func`).
    pub const fn contains_members(self) -> bool {
        match self {
            DefKind::Type | DefKind::Class | DefKind::Interface | DefKind::Module => true,
            DefKind::Function | DefKind::Method | DefKind::Constant | DefKind::Macro => false,
        }
    }

    /// Whether it can be called (and so has callers and callees).
    pub const fn callable(self) -> bool {
        match self {
            DefKind::Function | DefKind::Method | DefKind::Macro | DefKind::Class => true,
            DefKind::Type | DefKind::Interface | DefKind::Constant | DefKind::Module => false,
        }
    }

    /// When two patterns capture the same name (a Go interface is also a
    /// type spec; a `const f = () => …` is also a constant), the more
    /// specific kind wins: lower is stronger.
    pub(crate) const fn precedence(self) -> u8 {
        match self {
            DefKind::Interface => 0,
            DefKind::Method => 1,
            DefKind::Function => 2,
            DefKind::Class => 3,
            DefKind::Macro => 4,
            DefKind::Module => 5,
            DefKind::Type => 6,
            DefKind::Constant => 7,
        }
    }
}

/// What kind of use a reference is. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RefKind {
    Call,
    /// A type named in a signature, a field or an expression.
    Type,
    /// `impl Trait for T`, `class C implements I`, `class C(Base)`: the
    /// reference's name is the trait, interface or base; its qualifier is
    /// the implementor.
    Implementation,
    Import,
}

impl RefKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            RefKind::Call => "call",
            RefKind::Type => "type use",
            RefKind::Implementation => "implementation",
            RefKind::Import => "import",
        }
    }
}

/// Byte and 1-based line range of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    pub start_byte: u32,
    pub end_byte: u32,
    pub start_line: u32,
    pub end_line: u32,
}

impl Span {
    pub(crate) fn of(node: tree_sitter::Node<'_>) -> Span {
        let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
        let (start, end) = (node.start_position(), node.end_position());
        // A node that ends with its line's newline (a `#define`) ends on
        // that line, not at the start of the next.
        let end_row = if end.column == 0 && end.row > start.row {
            end.row
        } else {
            end.row + 1
        };
        Span {
            start_byte: clamp(node.start_byte()),
            end_byte: clamp(node.end_byte()),
            start_line: clamp(start.row + 1),
            end_line: clamp(end_row),
        }
    }

    pub fn contains(&self, other: &Span) -> bool {
        self.start_byte <= other.start_byte && other.end_byte <= self.end_byte
    }

    pub fn lines(&self) -> u32 {
        self.end_line.saturating_sub(self.start_line) + 1
    }
}

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Definition {
    pub name: String,
    pub kind: DefKind,
    /// The type, trait, class or module it is a member of, if any.
    pub container: Option<String>,
    /// For a method inside `impl Trait for T`: the trait.
    pub implements: Option<String>,
    /// The whole definition.
    pub span: Span,
    /// The identifier it is known by.
    pub name_span: Span,
    /// A function's parameters, when its declaration lists them.
    pub params: Option<Params>,
    /// The type names its declared result spells (`-> Result<Script, E>`:
    /// `Result`, `Script`, `E`), so a value it returns has a known type.
    pub returns: Vec<String>,
}

/// What a function takes, as far as a call's arguments can be checked
/// against it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// It takes a receiver (`&self`, Python's `self`): a call on a value
    /// passes it, and a Rust function without one cannot be called on a
    /// value at all.
    pub receiver: bool,
    /// Arguments it needs besides the receiver.
    pub min: u16,
    /// Arguments it takes besides the receiver; `None`: any number.
    pub max: Option<u16>,
}

impl Params {
    /// Whether `n` arguments fit, `extra` of them for the receiver (a
    /// method called through its type's path: `Type::m(&x, a)`).
    pub fn accepts(&self, n: u16, extra: u16) -> bool {
        let n = n.saturating_sub(extra);
        n >= self.min && self.max.is_none_or(|m| n <= m)
    }
}

/// One reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reference {
    pub name: String,
    pub kind: RefKind,
    /// What a call is made on (`Config` in `Config::new()`; `self` is
    /// replaced by the enclosing type), or an implementation's implementor.
    pub qualifier: Option<String>,
    /// The qualifier is a path (`Config::new()`, `String::new()`): it
    /// names a type or module, never a value of unknown type.
    pub path_qualified: bool,
    /// The call is made on a value (`cfg.load()`, `open().read()`), named
    /// or not: a method call, whose target depends on the value's type.
    pub on_value: bool,
    /// The receiver's type, when a declaration in scope says it (a typed
    /// parameter, `let x: T`, a field, `self`) or the value is built by a
    /// type (`Type { .. }`, `new T()`, `T::open()`).
    pub receiver: Option<ReceiverType>,
    /// When the receiver's type is not said here but the receiver is what
    /// a function returns (`let a = ask(..); a.render()`, `New().String()`):
    /// that function's name, whose declared result tells the type.
    pub receiver_from: Option<String>,
    /// How many arguments a call passes, when they can be counted (none
    /// is spread, and the call is not read from a macro's tokens).
    pub args: Option<u16>,
    /// The identifier.
    pub span: Span,
    /// The innermost definition of the same file that contains it (an
    /// index into [`FileFacts::definitions`]).
    pub enclosing: Option<u32>,
}

/// What a call's receiver is known to be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiverType {
    /// Every type name the declaration spells (`Arc<Script>` → `Arc`,
    /// `Script`), so a call through a smart pointer still matches the
    /// type inside it.
    pub names: Vec<String>,
    pub evidence: TypeEvidence,
}

/// How the receiver's type is known. Closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TypeEvidence {
    /// Declared (a parameter's, variable's or field's type, `self`) or
    /// literally built (`Type { .. }`, `new T()`): the value is of that type.
    Declared,
    /// Returned by a function of the type (`T::open()`, `Store()`,
    /// `T::builder().build()`): usually of that type, not always.
    Constructed,
}

/// Everything the index keeps of one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFacts {
    pub language: Language,
    /// In source order.
    pub definitions: Vec<Definition>,
    /// In source order.
    pub references: Vec<Reference>,
    /// The parser recovered from syntax errors somewhere in the file.
    pub has_errors: bool,
}

impl Definition {
    /// `Container::name` (or `.` for the languages that spell it so).
    pub fn qualified(&self, language: Language) -> String {
        match &self.container {
            Some(c) => format!("{c}{}{}", language.separator(), self.name),
            None => self.name.clone(),
        }
    }
}
