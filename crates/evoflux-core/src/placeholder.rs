//! The one reader of `${…}` in the values of files evoflux reads: the
//! environment references of the user's MCP entries (`${VAR}`,
//! `${VAR:-default}`), the editors' variables (`${workspaceFolder}`,
//! `${env:VAR}`) and Claude Code's (`${CLAUDE_PLUGIN_ROOT}`). Each reader
//! decides what a braced name means; how a value splits into text and
//! braced names is decided here only.

/// A part of a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'a> {
    Text(&'a str),
    /// `${inner}`; `written` is the whole of it, braces included.
    Braced {
        inner: &'a str,
        written: &'a str,
    },
}

/// The pieces of `text` in order. A `${` without a closing `}` is text.
pub fn pieces(text: &str) -> Pieces<'_> {
    Pieces { rest: text }
}

/// The iterator of [`pieces`].
#[derive(Debug, Clone)]
pub struct Pieces<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Pieces<'a> {
    type Item = Piece<'a>;

    fn next(&mut self) -> Option<Piece<'a>> {
        if self.rest.is_empty() {
            return None;
        }
        let rest = self.rest;
        let Some(at) = rest.find("${") else {
            self.rest = "";
            return Some(Piece::Text(rest));
        };
        if at > 0 {
            self.rest = &rest[at..];
            return Some(Piece::Text(&rest[..at]));
        }
        match rest[2..].find('}') {
            Some(end) => {
                self.rest = &rest[end + 3..];
                Some(Piece::Braced {
                    inner: &rest[2..end + 2],
                    written: &rest[..end + 3],
                })
            }
            None => {
                self.rest = "";
                Some(Piece::Text(rest))
            }
        }
    }
}

/// An environment reference: `NAME` or `NAME:-default`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvReference<'a> {
    pub name: &'a str,
    pub default: Option<&'a str>,
}

/// The reference `inner` (what stands between the braces) makes, when its
/// name is an environment variable name.
pub fn env_reference(inner: &str) -> Option<EnvReference<'_>> {
    let (name, default) = match inner.split_once(":-") {
        Some((name, default)) => (name, Some(default)),
        None => (inner, None),
    };
    is_env_name(name).then_some(EnvReference { name, default })
}

/// A portable environment variable name: a letter or `_`, then letters,
/// digits and `_`.
pub fn is_env_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_into_text_and_braced_names() {
        let got: Vec<Piece<'_>> = pieces("Bearer ${TOKEN:-x} ${a b}${open").collect();
        assert_eq!(
            got,
            [
                Piece::Text("Bearer "),
                Piece::Braced {
                    inner: "TOKEN:-x",
                    written: "${TOKEN:-x}"
                },
                Piece::Text(" "),
                Piece::Braced {
                    inner: "a b",
                    written: "${a b}"
                },
                Piece::Text("${open"),
            ]
        );
        let joined: String = pieces("a${B}c${")
            .map(|p| match p {
                Piece::Text(t) => t,
                Piece::Braced { written, .. } => written,
            })
            .collect();
        assert_eq!(joined, "a${B}c${", "nothing is lost");
        assert_eq!(pieces("").count(), 0);
    }

    #[test]
    fn references_name_environment_variables() {
        assert_eq!(
            env_reference("TOKEN:-a:-b"),
            Some(EnvReference {
                name: "TOKEN",
                default: Some("a:-b")
            })
        );
        assert_eq!(env_reference("env:X"), None);
        assert_eq!(env_reference("input:key"), None);
        assert!(is_env_name("_X1") && !is_env_name("1X") && !is_env_name(""));
    }
}
