//! `code_context`: exact-symbol navigation over the session's repositories,
//! on the index of evoflux-code.
//!
//! One navigator per session, shared by its calls; the sessions it
//! dispatches build their own from the same cache file. The index is
//! loaded from the cache on the first call (built there when it is not),
//! refreshed before every answer, and never sees a file the workspace
//! hides (the sandbox's denied files).

use std::path::Path;
use std::sync::{Arc, Mutex};

use evoflux_code::CodeContext;
use serde_json::Value;

use crate::output::ToolOutput;
use crate::workspace::Workspace;

/// The session's code navigator. Cheap to clone (shared state).
#[derive(Debug, Clone)]
pub struct CodeNavigator {
    inner: Arc<Mutex<CodeContext>>,
}

impl CodeNavigator {
    /// A navigator over the workspace's roots; indexes persist under
    /// `cache_dir` (`<cache>/code-index/`) when given.
    pub fn new(ws: &Workspace, cache_dir: Option<&Path>) -> CodeNavigator {
        let visible_ws = ws.clone();
        let cc = CodeContext::new(ws.roots(), cache_dir).with_visibility(Arc::new(move |p| {
            visible_ws.contains(p) && !visible_ws.is_denied(p)
        }));
        CodeNavigator {
            inner: Arc::new(Mutex::new(cc)),
        }
    }

    /// Answers one call. Blocking (it may parse files): run it on a
    /// blocking thread. A refusal is an error result naming its code.
    pub fn run(&self, input: &Value) -> ToolOutput {
        let mut cc = match self.inner.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        match cc.answer(input) {
            Ok(answer) => ToolOutput::ok(answer.render()),
            Err(e) => ToolOutput::error(format!("{e} [{}]", e.code())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn denied_files_are_never_indexed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("visible.py"), "def shown():\n    pass\n")
            .unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(dir.path().join("secret.py"), "def hidden():\n    pass\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let ws = Workspace::new([dir.path()])
            .unwrap_or_else(|e| panic!("{e}"))
            .with_denied(
                crate::sandbox::DeniedFiles::new(&["secret.py".to_owned()])
                    .unwrap_or_else(|e| panic!("{e}")),
            );
        let nav = CodeNavigator::new(&ws, None);
        let shown = nav.run(&json!({"operation": "definition", "symbol": "shown"}));
        assert!(!shown.is_error, "{}", shown.text);
        let hidden = nav.run(&json!({"operation": "definition", "symbol": "hidden"}));
        assert!(
            hidden.is_error && hidden.text.contains("[code/unknown-symbol]"),
            "{}",
            hidden.text
        );
    }
}
