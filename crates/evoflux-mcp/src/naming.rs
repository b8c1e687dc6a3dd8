//! Model-visible names of MCP tools: `mcp__<server>__<tool>`.
//!
//! Providers accept only `^[A-Za-z0-9_-]{1,64}$` as tool names, while MCP
//! servers and tools may use dots, spaces or long names, and two sources
//! may sanitize to the same text. One pure function assigns every tool a
//! name that is valid, at most [`MAX_TOOL_NAME_LEN`] characters and unique
//! among all tools of the run (MCP servers of every scope plus the names
//! already taken by built-in tools). The raw server and tool names stay
//! beside the qualified one so `tools/call` always uses the real ones.

use std::collections::BTreeSet;

use evoflux_core::hash::sha256_hex;

/// The longest tool name providers accept.
pub const MAX_TOOL_NAME_LEN: usize = 64;
/// The prefix that marks a tool as coming from an MCP server.
pub const PREFIX: &str = "mcp__";
/// Between the server and the tool part.
pub const DELIMITER: &str = "__";
/// Hex digits of the identity hash appended on a collision or truncation.
const HASH_LEN: usize = 8;

/// One tool to name: the server's naming key and the raw tool name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ToolIdentity {
    /// The server part (for plugin servers, `<plugin>_<server>`).
    pub server: String,
    /// The tool name exactly as the server lists it.
    pub tool: String,
}

/// How a name was obtained, so callers can report collisions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameOrigin {
    /// `mcp__<server>__<tool>` after sanitizing, unchanged.
    Plain,
    /// Too long: truncated with a hash suffix.
    Truncated,
    /// Would have collided with another name: hash suffix added.
    Disambiguated,
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(part: &str) -> String {
    let out: String = part
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".to_owned() } else { out }
}

/// The hash of the raw identity (server and tool, NUL-separated so
/// `a`+`b_c` and `a_b`+`c` differ).
fn identity_hash(id: &ToolIdentity, len: usize) -> String {
    let digest = sha256_hex(format!("{}\0{}", id.server, id.tool).as_bytes());
    digest.as_str().chars().take(len).collect()
}

/// `base` cut to leave room for `_<hash>`, then the suffix.
fn with_suffix(base: &str, hash: &str) -> String {
    let keep = MAX_TOOL_NAME_LEN - hash.len() - 1;
    // `base` is ASCII after sanitizing, so byte slicing is on a boundary.
    let cut = &base[..base.len().min(keep)];
    format!("{cut}_{hash}")
}

/// Assigns qualified names to `tools`, in the order given, avoiding every
/// name in `reserved` and every name assigned before. Callers pass tools
/// in a stable order (the manager sorts by scope, server and tool) so a
/// tool keeps its name across refreshes when nothing else changes.
///
/// The first tool whose sanitized name is free and short enough gets it
/// unchanged; any other gets `_<8 hex of sha256(server NUL tool)>`
/// (longer hashes, then a counter, on the rare further collision).
pub fn assign_names(
    tools: &[ToolIdentity],
    reserved: &BTreeSet<String>,
) -> Vec<(String, NameOrigin)> {
    let mut taken: BTreeSet<String> = reserved.clone();
    let mut out = Vec::with_capacity(tools.len());
    for id in tools {
        let base = format!(
            "{PREFIX}{}{DELIMITER}{}",
            sanitize(&id.server),
            sanitize(&id.tool)
        );
        let (name, origin) = if base.len() <= MAX_TOOL_NAME_LEN && !taken.contains(&base) {
            (base, NameOrigin::Plain)
        } else {
            let origin = if base.len() > MAX_TOOL_NAME_LEN {
                NameOrigin::Truncated
            } else {
                NameOrigin::Disambiguated
            };
            let mut chosen = None;
            for len in [HASH_LEN, 12, 16, 24] {
                let candidate = with_suffix(&base, &identity_hash(id, len));
                if !taken.contains(&candidate) {
                    chosen = Some(candidate);
                    break;
                }
            }
            let name = chosen.unwrap_or_else(|| {
                let hash = identity_hash(id, HASH_LEN);
                (2u64..)
                    .map(|n| with_suffix(&base, &format!("{hash}{n}")))
                    .find(|c| !taken.contains(c))
                    .unwrap_or_default()
            });
            (name, origin)
        };
        taken.insert(name.clone());
        out.push((name, origin));
    }
    out
}

/// Whether `name` is a valid provider tool name.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(server: &str, tool: &str) -> ToolIdentity {
        ToolIdentity {
            server: server.to_owned(),
            tool: tool.to_owned(),
        }
    }

    fn names(tools: &[ToolIdentity], reserved: &[&str]) -> Vec<String> {
        let reserved = reserved.iter().map(|s| (*s).to_owned()).collect();
        assign_names(tools, &reserved)
            .into_iter()
            .map(|(n, _)| n)
            .collect()
    }

    #[test]
    fn plain_names_are_kept() {
        assert_eq!(
            names(&[id("github", "create_issue")], &[]),
            ["mcp__github__create_issue"]
        );
    }

    #[test]
    fn sanitizes_to_the_provider_alphabet() {
        let n = names(&[id("my.server", "do thing/now")], &[]);
        assert_eq!(n, ["mcp__my_server__do_thing_now"]);
        assert!(is_valid_tool_name(&n[0]));
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize("ünï"), "_n_");
    }

    #[test]
    fn collisions_get_distinct_hash_suffixes() {
        let tools = [id("a.b", "t"), id("a_b", "t"), id("a b", "t")];
        let assigned = assign_names(&tools, &BTreeSet::new());
        assert_eq!(assigned[0].0, "mcp__a_b__t");
        assert_eq!(assigned[0].1, NameOrigin::Plain);
        for (name, origin) in &assigned[1..] {
            assert_eq!(*origin, NameOrigin::Disambiguated);
            assert!(name.starts_with("mcp__a_b__t_"), "{name}");
            assert_eq!(name.len(), "mcp__a_b__t_".len() + 8);
            assert!(is_valid_tool_name(name));
        }
        let unique: BTreeSet<_> = assigned.iter().map(|(n, _)| n).collect();
        assert_eq!(unique.len(), 3);
    }

    #[test]
    fn reserved_names_are_avoided() {
        let n = names(&[id("fs", "read")], &["mcp__fs__read"]);
        assert_ne!(n[0], "mcp__fs__read");
        assert!(n[0].starts_with("mcp__fs__read_"));
    }

    #[test]
    fn long_names_are_cut_to_64_with_a_hash() {
        let long_tool = "x".repeat(100);
        let tools = [
            id("server", &long_tool),
            id("server", &format!("{long_tool}y")),
        ];
        let assigned = assign_names(&tools, &BTreeSet::new());
        for (name, origin) in &assigned {
            assert_eq!(name.len(), MAX_TOOL_NAME_LEN);
            assert_eq!(*origin, NameOrigin::Truncated);
            assert!(is_valid_tool_name(name));
        }
        // Same prefix after truncation, different identity: different names.
        assert_ne!(assigned[0].0, assigned[1].0);
    }

    #[test]
    fn deterministic() {
        let tools = [id("a.b", "t"), id("a_b", "t")];
        assert_eq!(names(&tools, &[]), names(&tools, &[]));
    }

    #[test]
    fn exactly_64_is_plain() {
        let tool = "t".repeat(MAX_TOOL_NAME_LEN - "mcp__s__".len());
        let n = names(&[id("s", &tool)], &[]);
        assert_eq!(n[0].len(), 64);
        assert_eq!(n[0], format!("mcp__s__{tool}"));
    }
}
