//! How sure the index is that a call reaches the definition it is listed
//! for. Calls are matched by name and receiver, not by a compiler's type
//! check: a call whose path or receiver's declared type names the
//! definition's type is certain, one on a value of unknown type is a
//! guess. Every caller and callee says which, and why, and the certain
//! ones come first, so a limit cuts guesses rather than real callers.

use serde::Serialize;

/// How certain a match is. Closed; ordered from most to least certain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Certainty {
    /// The source names it: a path, the receiver's declared type, a call
    /// in its own module, an import of it.
    Exact,
    /// Strong evidence short of a declaration.
    Likely,
    /// Only the name matches (or weak evidence): the receiver's type is
    /// not known here.
    Guess,
}

impl Certainty {
    pub const fn as_str(self) -> &'static str {
        match self {
            Certainty::Exact => "exact",
            Certainty::Likely => "likely",
            Certainty::Guess => "guess",
        }
    }
}

/// Why a call is taken to reach a definition. Closed; within one
/// certainty, earlier is stronger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// `Type::f()`, `module::f()`, `pkg.F()`, `Self::f()`.
    Path,
    /// The receiver is `self`/`this`, or a parameter, variable or field
    /// declared of the type, or built literally (`T { .. }`, `new T()`).
    DeclaredType,
    /// A bare call in the module that defines it.
    SameModule,
    /// A bare call of a name the file imports from its module.
    Imported,
    /// The receiver is returned by a function of the type (`T::open()`).
    ConstructedType,
    /// The receiver is what a function returns, and that function is
    /// declared to return the type (`let a = ask(..)`, `fn ask() -> Answer`).
    ReturnType,
    /// A bare call, and no other function has the name.
    OnlyDefinition,
    /// The receiver of unknown type is named after the type (`script` for
    /// `Script`).
    ReceiverName,
    /// A bare call of a name the file imports from another module.
    ImportedElsewhere,
    /// The receiver's type is unknown; the caller's file uses the type.
    TypeInFile,
    /// The receiver's type is unknown and nothing else points either way.
    NameOnly,
    /// The receiver is returned by a function of another type, or by one
    /// declared to return other types.
    OtherType,
}

impl Basis {
    pub const fn certainty(self) -> Certainty {
        match self {
            Basis::Path | Basis::DeclaredType | Basis::SameModule | Basis::Imported => {
                Certainty::Exact
            }
            Basis::ConstructedType
            | Basis::ReturnType
            | Basis::OnlyDefinition
            | Basis::ReceiverName => Certainty::Likely,
            Basis::ImportedElsewhere | Basis::TypeInFile | Basis::NameOnly | Basis::OtherType => {
                Certainty::Guess
            }
        }
    }

    /// Why, in a few words, for the rendered answer.
    pub const fn reason(self) -> &'static str {
        match self {
            Basis::Path => "called through its type or module path",
            Basis::DeclaredType => "the receiver is declared of its type",
            Basis::SameModule => "called by name in its own module",
            Basis::Imported => "imported from its module",
            Basis::ConstructedType => "the receiver comes from a function of its type",
            Basis::ReturnType => "the receiver comes from a function declared to return its type",
            Basis::OnlyDefinition => "the only definition of that name",
            Basis::ReceiverName => "the receiver is named after its type",
            Basis::ImportedElsewhere => "the name is imported from another module",
            Basis::TypeInFile => "receiver of unknown type; the file uses its type",
            Basis::NameOnly => "receiver of unknown type; only the name matches",
            Basis::OtherType => "the receiver comes from another type's function",
        }
    }
}
