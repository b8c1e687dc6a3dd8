//! The surface a session's conversation is tagged for.
//!
//! A conversation tagged for the browser surface (WebBridge) offers only
//! the MCP servers that declare `webbridge-safe`, so an undeclared MCP
//! browser cannot bypass the browser the user chose. The tag is part of
//! the session, not of one front end's state, so it is stored with it and
//! a resume keeps it.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A session's surface. Closed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionSurface {
    /// Every granted MCP server is offered.
    #[default]
    Standard,
    /// The browser surface: only `webbridge-safe` MCP servers are offered.
    #[serde(rename = "webbridge")]
    WebBridge,
}

impl SessionSurface {
    pub const ALL: [SessionSurface; 2] = [SessionSurface::Standard, SessionSurface::WebBridge];

    /// The stored and typed spelling.
    pub const fn as_str(self) -> &'static str {
        match self {
            SessionSurface::Standard => "standard",
            SessionSurface::WebBridge => "webbridge",
        }
    }

    pub fn is_standard(&self) -> bool {
        *self == SessionSurface::Standard
    }
}

impl fmt::Display for SessionSurface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A spelling that names no surface.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a session surface: use `standard` or `webbridge`")]
pub struct UnknownSurface(pub String);

impl FromStr for SessionSurface {
    type Err = UnknownSurface;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SessionSurface::ALL
            .into_iter()
            .find(|surface| surface.as_str() == s)
            .ok_or_else(|| UnknownSurface(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_surface_reads_back_from_its_spelling() {
        for surface in SessionSurface::ALL {
            assert_eq!(surface.as_str().parse::<SessionSurface>(), Ok(surface));
            assert_eq!(
                serde_json::to_value(surface).unwrap(),
                serde_json::Value::from(surface.as_str())
            );
        }
        let e = "browser".parse::<SessionSurface>().unwrap_err();
        assert!(e.to_string().contains("`browser`"));
    }
}
