//! Agent and worker names.

/// `^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`: the one name rule for team agents
/// and worker ids, shared with the source graph, which applies it to file
/// names.
pub use evoflux_graph::slot::is_valid_document_name as is_valid_agent_name;

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
