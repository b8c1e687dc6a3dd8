//! Layers and forms: the precedence order every slot is composed by.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a candidate comes from, lowest precedence first. The derived
/// `Ord` is the precedence order the composer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Layer {
    /// Compiled into the binary.
    Framework,
    /// Plugins shipped with the release: immutable, always enabled.
    BundledPlugin,
    /// Enabled installed and linked plugins.
    Plugin,
    /// Machine-wide policy (`/etc/evoflux`).
    Admin,
    /// The user's config directory and compatible user skill roots.
    User,
    /// Authorized repositories, from the workspace directory up to the git root.
    Project,
}

impl Layer {
    pub const ALL: [Layer; 6] = [
        Layer::Framework,
        Layer::BundledPlugin,
        Layer::Plugin,
        Layer::Admin,
        Layer::User,
        Layer::Project,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            Layer::Framework => "framework",
            Layer::BundledPlugin => "bundled-plugin",
            Layer::Plugin => "plugin",
            Layer::Admin => "admin",
            Layer::User => "user",
            Layer::Project => "project",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Within one layer a derived candidate (generated from another source)
/// loses to a direct one (written for the slot itself).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Form {
    Derived,
    Direct,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_order() {
        let mut shuffled = vec![
            Layer::Project,
            Layer::Framework,
            Layer::User,
            Layer::Plugin,
            Layer::Admin,
            Layer::BundledPlugin,
        ];
        shuffled.sort();
        assert_eq!(shuffled, Layer::ALL);
        assert!(Form::Direct > Form::Derived);
        assert_eq!(
            serde_json::to_string(&Layer::BundledPlugin).unwrap(),
            "\"bundled-plugin\""
        );
    }
}
