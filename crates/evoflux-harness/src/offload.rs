//! CONTEXT_CONTROL `tool-result-offload`: large results of any tool go to
//! an artifact once and the model sees a bounded view.
//!
//! A result over [`OFFLOAD_THRESHOLD_CHARS`] is written byte-exact to
//! `<artifacts>/<call id>.txt` and replaced by a head/tail view that names
//! the file and what was left out. The locator and sizes are recorded in
//! the result's metadata with the field names the shell uses for its
//! journal (`artifact`, `output_bytes`, `shown_bytes`, `omitted_bytes`),
//! so the live event, the stored transcript and the projection owner read
//! one shape. Results that already carry an artifact (journalled commands)
//! and skill results (presentation Skill, which must stay exact) are left
//! alone. If the artifact cannot be written the full result is kept: a
//! result is never cut without its bytes being saved.

use std::path::{Path, PathBuf};

use crate::metadata::Offloaded;
use evoflux_core::atomic::{AtomicOptions, write_atomic};
use evoflux_graph::tool::{Presentation, ToolDefinition};
use evoflux_model::ToolCall;

use crate::bounded::{chars_over, head, tail};
use crate::events::ToolResult;
use crate::hooks::{Hook, HookContext};

pub const OWNER: &str = "tool-result-offload";
/// Results longer than this (in characters) are offloaded.
pub const OFFLOAD_THRESHOLD_CHARS: usize = 40_000;
/// Characters of the head and of the tail shown in the bounded view.
pub const PREVIEW_CHARS: usize = 1_000;
/// The first line of an offloaded result.
pub const OFFLOADED_HEADER: &str = "[Tool result offloaded — content saved to session artifacts]";

/// The offload owner. Stateless: the artifact's existence is the record.
#[derive(Debug, Default)]
pub struct ToolResultOffloadHook;

/// The artifact file of a call: the call id, with anything but
/// `[A-Za-z0-9_-]` replaced so a provider's id can never leave the
/// directory.
pub fn artifact_path(dir: &Path, call_id: &str) -> PathBuf {
    let safe: String = call_id
        .chars()
        .map(|c| match c {
            'a'..='z' | 'A'..='Z' | '0'..='9' | '_' | '-' => c,
            _ => '_',
        })
        .collect();
    let safe = if safe.is_empty() || safe != call_id {
        // Two ids that differ only in replaced characters must not share
        // a file.
        let digest = evoflux_core::hash::sha256_hex(call_id.as_bytes());
        format!("{safe}-{}", &digest.as_str()[..12])
    } else {
        safe
    };
    dir.join(format!("{safe}.txt"))
}

/// Why a large result stayed whole: its file could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot offload a large tool result to `{}` ({error}); it stays whole in the conversation", path.display())]
pub struct OffloadFailed {
    pub path: PathBuf,
    pub error: String,
}

/// Offloads `result` when it is large; returns whether it did. When the
/// file cannot be written the result stays whole and the error says why.
pub fn offload(dir: &Path, call_id: &str, result: &mut ToolResult) -> Result<bool, OffloadFailed> {
    let Some(chars) = chars_over(&result.content, OFFLOAD_THRESHOLD_CHARS) else {
        return Ok(false);
    };
    if result
        .metadata
        .as_ref()
        .is_some_and(|m| m.artifact().is_some())
    {
        return Ok(false);
    }
    let path = artifact_path(dir, call_id);
    let bytes = result.content.as_bytes();
    // Journalled once: a result recorded again (a resumed turn) keeps the
    // file that is already there.
    let exists = std::fs::metadata(&path).is_ok_and(|m| m.len() == bytes.len() as u64);
    if !exists {
        let written = evoflux_core::private::create_private_dir(dir)
            .map_err(|e| e.to_string())
            .and_then(|()| {
                write_atomic(&path, bytes, AtomicOptions::SECRET).map_err(|e| e.to_string())
            });
        if let Err(error) = written {
            return Err(OffloadFailed { path, error });
        }
    }
    let content = &result.content;
    let lines = content.lines().count();
    let h = head(content, PREVIEW_CHARS);
    let t = tail(&content[h.len()..], PREVIEW_CHARS);
    let omitted = content.len() - h.len() - t.len();
    let view = format!(
        "{OFFLOADED_HEADER}\nFile: {} (read it with offset and limit)\nSize: {lines} lines · {chars} chars\n\n{h}\n... {omitted} bytes omitted ...\n{t}",
        evoflux_tools::artifact_locator(&path)
    );
    let mut meta = result.metadata.take().unwrap_or_default();
    meta.offload = Some(Box::new(Offloaded {
        offloaded: true,
        artifact: path,
        lines,
        chars,
        output_bytes: content.len(),
        shown_bytes: h.len() + t.len(),
        omitted_bytes: omitted,
    }));
    result.metadata = Some(meta);
    result.content = view;
    Ok(true)
}

impl Hook for ToolResultOffloadHook {
    fn after_tool(
        &self,
        ctx: &HookContext<'_>,
        call: &ToolCall,
        tool: &ToolDefinition,
        result: &mut ToolResult,
    ) {
        match tool.behavior.presentation {
            Presentation::Skill => {}
            Presentation::None => {
                if let Err(e) = offload(ctx.artifacts_dir, &call.id, result) {
                    ctx.warn("session/offload-failed", e.to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_results_stay() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = ToolResult::ok("x".repeat(OFFLOAD_THRESHOLD_CHARS));
        assert!(!offload(dir.path(), "c1", &mut r).unwrap());
        assert_eq!(r.content.len(), OFFLOAD_THRESHOLD_CHARS);
    }

    #[test]
    fn large_result_is_journalled_exactly_and_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let text: String = (0..5000).map(|i| format!("line {i} é\n")).collect();
        let mut r = ToolResult::ok(text.clone());
        assert!(offload(dir.path(), "call/1", &mut r).unwrap());
        let meta = r.metadata.clone().unwrap();
        let artifact = meta.artifact().unwrap().to_path_buf();
        assert!(artifact.starts_with(dir.path()));
        assert_eq!(std::fs::read_to_string(&artifact).unwrap(), text);
        // The stored JSON keeps the flat shape readers know.
        let meta = meta.to_stored();
        assert_eq!(meta["output_bytes"], text.len());
        assert_eq!(
            meta["shown_bytes"].as_u64().unwrap() + meta["omitted_bytes"].as_u64().unwrap(),
            text.len() as u64
        );
        assert!(r.content.starts_with(OFFLOADED_HEADER));
        assert!(r.content.contains("line 0 é"));
        assert!(r.content.contains("line 4999 é"));
        assert!(r.content.len() < 3 * PREVIEW_CHARS + 400);
    }

    #[test]
    fn results_with_an_artifact_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = ToolResult::ok("y".repeat(50_000));
        r.metadata = crate::metadata::ResultMetadata::from_stored(&serde_json::json!({
            "process_id": "proc_1", "pid": 7, "status": "succeeded", "exit_code": 0,
            "duration_ms": 1, "artifact": "/x/proc_1.txt", "output_offset": 0,
            "output_bytes": 50000, "shown_bytes": 100, "omitted_bytes": 49900,
        }));
        assert!(r.metadata.as_ref().is_some_and(|m| m.command.is_some()));
        assert!(!offload(dir.path(), "c1", &mut r).unwrap());
        assert_eq!(r.content.len(), 50_000);
    }

    #[test]
    fn ids_never_leave_the_directory() {
        let p = artifact_path(Path::new("/a"), "../../etc/passwd");
        assert_eq!(p.parent(), Some(Path::new("/a")));
        assert_ne!(
            artifact_path(Path::new("/a"), "x/y"),
            artifact_path(Path::new("/a"), "x_y")
        );
    }
}
