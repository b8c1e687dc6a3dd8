//! `ModeSet`: the modes a skill is available in.
//!
//! A set of [`AppMode`]s rather than a list so that every layer (bundle
//! default, sidecar, code table, overlay) speaks one value with no duplicates
//! and a fixed order on the wire (`["work", "coding"]`).

use std::fmt;

use evoflux_core::AppMode;
use serde::de::Deserializer;
use serde::ser::{SerializeSeq, Serializer};
use serde::{Deserialize, Serialize};

/// A subset of the two modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ModeSet {
    work: bool,
    coding: bool,
}

impl ModeSet {
    /// Both modes: the default for user and project skills.
    pub const BOTH: ModeSet = ModeSet {
        work: true,
        coding: true,
    };
    /// No mode: a skill the user switched off everywhere.
    pub const NONE: ModeSet = ModeSet {
        work: false,
        coding: false,
    };
    pub const WORK: ModeSet = ModeSet {
        work: true,
        coding: false,
    };
    pub const CODING: ModeSet = ModeSet {
        work: false,
        coding: true,
    };

    pub fn only(mode: AppMode) -> ModeSet {
        ModeSet::NONE.with(mode)
    }

    pub fn contains(self, mode: AppMode) -> bool {
        match mode {
            AppMode::Work => self.work,
            AppMode::Coding => self.coding,
        }
    }

    #[must_use]
    pub fn with(mut self, mode: AppMode) -> ModeSet {
        match mode {
            AppMode::Work => self.work = true,
            AppMode::Coding => self.coding = true,
        }
        self
    }

    #[must_use]
    pub fn without(mut self, mode: AppMode) -> ModeSet {
        match mode {
            AppMode::Work => self.work = false,
            AppMode::Coding => self.coding = false,
        }
        self
    }

    #[must_use]
    pub fn intersect(self, other: ModeSet) -> ModeSet {
        ModeSet {
            work: self.work && other.work,
            coding: self.coding && other.coding,
        }
    }

    #[must_use]
    pub fn union(self, other: ModeSet) -> ModeSet {
        ModeSet {
            work: self.work || other.work,
            coding: self.coding || other.coding,
        }
    }

    pub fn is_empty(self) -> bool {
        !self.work && !self.coding
    }

    /// The modes in the fixed order of [`AppMode::ALL`].
    pub fn iter(self) -> impl Iterator<Item = AppMode> {
        AppMode::ALL.into_iter().filter(move |m| self.contains(*m))
    }
}

impl FromIterator<AppMode> for ModeSet {
    fn from_iter<I: IntoIterator<Item = AppMode>>(iter: I) -> Self {
        iter.into_iter().fold(ModeSet::NONE, ModeSet::with)
    }
}

impl fmt::Display for ModeSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = self.iter().map(AppMode::as_str).collect();
        if names.is_empty() {
            f.write_str("none")
        } else {
            f.write_str(&names.join(", "))
        }
    }
}

impl Serialize for ModeSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let modes: Vec<AppMode> = self.iter().collect();
        let mut seq = serializer.serialize_seq(Some(modes.len()))?;
        for m in modes {
            seq.serialize_element(&m)?;
        }
        seq.end()
    }
}

impl<'de> Deserialize<'de> for ModeSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let modes = Vec::<AppMode>::deserialize(deserializer)?;
        Ok(modes.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_in_fixed_order_and_dedupes() {
        let set: ModeSet = serde_json::from_str(r#"["coding","work","coding"]"#).unwrap();
        assert_eq!(set, ModeSet::BOTH);
        assert_eq!(serde_json::to_string(&set).unwrap(), r#"["work","coding"]"#);
        assert_eq!(serde_json::to_string(&ModeSet::NONE).unwrap(), "[]");
        assert!(serde_json::from_str::<ModeSet>(r#"["play"]"#).is_err());
    }

    #[test]
    fn set_algebra() {
        assert_eq!(ModeSet::WORK.union(ModeSet::CODING), ModeSet::BOTH);
        assert_eq!(ModeSet::BOTH.intersect(ModeSet::CODING), ModeSet::CODING);
        assert!(
            ModeSet::BOTH
                .without(AppMode::Work)
                .contains(AppMode::Coding)
        );
        assert!(ModeSet::NONE.is_empty());
        assert_eq!(ModeSet::only(AppMode::Work).to_string(), "work");
    }
}
