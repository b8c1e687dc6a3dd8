//! Agent and worker names.

/// `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`: the one name rule for team agents
/// and worker ids (the graph applies it to file names; this is the same
/// rule for names written inside files and given on the command line).
pub fn is_valid_agent_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_rule() {
        for good in ["a", "evoflux", "Coder-2", "x.y_z", &"a".repeat(64)] {
            assert!(is_valid_agent_name(good), "{good}");
        }
        for bad in ["", "-a", ".a", "a b", "a/b", "a#1", "a\\b", &"a".repeat(65)] {
            assert!(!is_valid_agent_name(bad), "{bad}");
        }
    }
}
