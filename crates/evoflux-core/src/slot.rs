//! Slots: the logical identity of a capability (`tools/shell`,
//! `skills/review`, `config`), as every crate names it.
//!
//! The identity lives here, below the source graph, because a diagnostic
//! points at a slot ([`Locator::slot`](crate::diagnostic::Locator::slot))
//! and code that sorts diagnostics by slot must compare typed slots, not
//! their text. This module owns the kinds, the canonical text of a slot
//! and its inverse; which path selects which slot, the name rules and the
//! composition policy of each kind stay in `evoflux-graph`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Every kind of slot. Closed: a new kind is a new variant, matched
/// exhaustively everywhere it matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SlotKind {
    /// `config.toml`: harness defaults; composes first.
    Config,
    /// `sandbox.toml`: the sandbox policy.
    Sandbox,
    /// `tools/<name>.toml`.
    Tool,
    /// `channels/<path>.toml`.
    Channel,
    /// An entry of `mcp.json`.
    Connection,
    /// `schedules/<name>.toml`.
    Schedule,
    /// `skills/<name>/SKILL.md`.
    Skill,
    /// `agents/<name>.md`.
    WorkAgent,
    /// `agents/coding/<name>.md`.
    CodingAgent,
    /// `workers/<id>.md`.
    Worker,
    /// `fleets/<name>.md`.
    Fleet,
    /// `fleets/commands.yaml`.
    FleetCommands,
    /// `evals/<name>.yaml`: a task and what its outcome must show.
    Eval,
    /// An `[agents.external.<name>]` table of a `config.toml`: an agent
    /// outside evoflux, spoken to over the Agent Client Protocol, that a
    /// lead may dispatch. Its own prefix (`remote-agents/`), so it never
    /// shares a slot with the Work agent `agents/<name>`.
    RemoteAgent,
}

/// How a kind's slots are written: a singleton's whole text, or the
/// prefix its slots' names follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Canonical {
    Singleton(&'static str),
    Named(&'static str),
}

impl Canonical {
    const fn text(self) -> &'static str {
        match self {
            Canonical::Singleton(t) | Canonical::Named(t) => t,
        }
    }
}

impl SlotKind {
    pub const ALL: [SlotKind; 14] = [
        SlotKind::Config,
        SlotKind::Sandbox,
        SlotKind::Tool,
        SlotKind::Channel,
        SlotKind::Connection,
        SlotKind::Schedule,
        SlotKind::Skill,
        SlotKind::WorkAgent,
        SlotKind::CodingAgent,
        SlotKind::Worker,
        SlotKind::Fleet,
        SlotKind::FleetCommands,
        SlotKind::Eval,
        SlotKind::RemoteAgent,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            SlotKind::Config => "config",
            SlotKind::Sandbox => "sandbox",
            SlotKind::Tool => "tool",
            SlotKind::Channel => "channel",
            SlotKind::Connection => "connection",
            SlotKind::Schedule => "schedule",
            SlotKind::Skill => "skill",
            SlotKind::WorkAgent => "work-agent",
            SlotKind::CodingAgent => "coding-agent",
            SlotKind::Worker => "worker",
            SlotKind::Fleet => "fleet",
            SlotKind::FleetCommands => "fleet-commands",
            SlotKind::Eval => "eval",
            SlotKind::RemoteAgent => "remote-agent",
        }
    }

    /// The one place a kind's slot text is spelled: [`Slot`]'s `Display`
    /// writes it and its `FromStr` reads it.
    const fn canonical(self) -> Canonical {
        match self {
            SlotKind::Config => Canonical::Singleton("config"),
            SlotKind::Sandbox => Canonical::Singleton("sandbox"),
            SlotKind::FleetCommands => Canonical::Singleton("fleets/commands"),
            SlotKind::Tool => Canonical::Named("tools/"),
            SlotKind::Channel => Canonical::Named("channels/"),
            SlotKind::Connection => Canonical::Named("connections/"),
            SlotKind::Schedule => Canonical::Named("schedules/"),
            SlotKind::Skill => Canonical::Named("skills/"),
            SlotKind::WorkAgent => Canonical::Named("agents/"),
            SlotKind::CodingAgent => Canonical::Named("agents/coding/"),
            SlotKind::Worker => Canonical::Named("workers/"),
            SlotKind::Fleet => Canonical::Named("fleets/"),
            SlotKind::Eval => Canonical::Named("evals/"),
            SlotKind::RemoteAgent => Canonical::Named("remote-agents/"),
        }
    }

    /// Whether a source of this kind runs commands or servers, or starts
    /// work, on the user's behalf: such sources of an untrusted repository
    /// wait for trust. A tool file may define a command or lift another
    /// tool's approval, so every tool file counts. A remote agent starts
    /// its program with variables of your environment, as an MCP server
    /// does.
    pub const fn acts_for_user(self) -> bool {
        match self {
            SlotKind::Tool
            | SlotKind::Channel
            | SlotKind::Connection
            | SlotKind::Schedule
            | SlotKind::FleetCommands
            | SlotKind::RemoteAgent
            // An eval runs a model and tools when `evoflux eval` runs it.
            | SlotKind::Eval => true,
            SlotKind::Config
            | SlotKind::Sandbox
            | SlotKind::Skill
            | SlotKind::WorkAgent
            | SlotKind::CodingAgent
            | SlotKind::Worker
            | SlotKind::Fleet => false,
        }
    }

    /// Whether trusting a repository changes what its source of this kind
    /// may do: the kinds that act for the user, and its config (providers)
    /// and sandbox (writable roots). What `evoflux trust` lists and grants.
    pub const fn granted_by_trust(self) -> bool {
        self.acts_for_user() || matches!(self, SlotKind::Config | SlotKind::Sandbox)
    }
}

impl fmt::Display for SlotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A canonical slot such as `tools/shell`, `channels/hooks/github`, `config`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Slot {
    pub kind: SlotKind,
    /// The slot's name: the tool name, channel path, connection name, …
    /// Empty for the singleton slots `config`, `sandbox` and `fleets/commands`.
    pub name: String,
}

impl Slot {
    pub fn new(kind: SlotKind, name: impl Into<String>) -> Slot {
        Slot {
            kind,
            name: name.into(),
        }
    }

    pub fn config() -> Slot {
        Slot::new(SlotKind::Config, "")
    }

    pub fn sandbox() -> Slot {
        Slot::new(SlotKind::Sandbox, "")
    }

    pub fn tool(name: &str) -> Slot {
        Slot::new(SlotKind::Tool, name)
    }

    pub fn channel(name: &str) -> Slot {
        Slot::new(SlotKind::Channel, name)
    }
}

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind.canonical() {
            Canonical::Singleton(text) => f.write_str(text),
            Canonical::Named(prefix) => write!(f, "{prefix}{}", self.name),
        }
    }
}

/// Text that is no slot's canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a slot such as `tools/shell`, `skills/review` or `config`")]
pub struct SlotParseError(pub String);

/// The inverse of `Display`. Where two kinds' texts both fit, the longer
/// one wins: `agents/coding/x` is the Coding agent `x`, `fleets/commands`
/// the fleet commands (a fleet named `commands` writes the same text and
/// reads back as them).
impl FromStr for Slot {
    type Err = SlotParseError;

    fn from_str(text: &str) -> Result<Slot, SlotParseError> {
        SlotKind::ALL
            .iter()
            .filter_map(|&kind| {
                let canonical = kind.canonical();
                let name = match canonical {
                    Canonical::Singleton(t) => (text == t).then_some(""),
                    Canonical::Named(prefix) => text.strip_prefix(prefix),
                }?;
                Some((canonical.text().len(), Slot::new(kind, name)))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, slot)| slot)
            .ok_or_else(|| SlotParseError(text.to_owned()))
    }
}

/// A slot written as its canonical text (`"tools/shell"`), as diagnostics'
/// locators carry it on the wire; for `#[serde(with = ...)]` on an
/// `Option<Slot>`.
pub mod as_text {
    use serde::{Deserialize, Deserializer, Serializer};

    use super::Slot;

    pub fn serialize<S: Serializer>(slot: &Option<Slot>, s: S) -> Result<S::Ok, S::Error> {
        match slot {
            Some(slot) => s.collect_str(slot),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Slot>, D::Error> {
        Option::<String>::deserialize(d)?
            .map(|text| text.parse().map_err(serde::de::Error::custom))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_reads_back_what_it_writes() {
        for kind in SlotKind::ALL {
            let name = match kind.canonical() {
                Canonical::Singleton(_) => "",
                Canonical::Named(_) => "a/b",
            };
            let slot = Slot::new(kind, name);
            assert_eq!(slot.to_string().parse::<Slot>(), Ok(slot.clone()), "{kind}");
        }
        assert_eq!(
            "agents/coding".parse::<Slot>(),
            Ok(Slot::new(SlotKind::WorkAgent, "coding"))
        );
        assert_eq!(
            "fleets/commands".parse::<Slot>(),
            Ok(Slot::new(SlotKind::FleetCommands, ""))
        );
        assert_eq!(
            "remote-agents/helper".parse::<Slot>(),
            Ok(Slot::new(SlotKind::RemoteAgent, "helper"))
        );
        assert_eq!(
            Slot::new(SlotKind::RemoteAgent, "helper").to_string(),
            "remote-agents/helper"
        );
        assert!("nowhere/x".parse::<Slot>().is_err());
        assert!("".parse::<Slot>().is_err());
    }
}
