//! The hidden `.evoflux.json` sidecar: a bundle's portable mode default.
//!
//! `{"modes": ["work"]}` beside SKILL.md says which modes the bundle is
//! meant for. The file is part of the bundle (it travels with a copy) but
//! is never advertised as a resource. Any problem fails open to both modes
//! with a warning: a broken sidecar must never hide a skill.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use evoflux_core::AppMode;
use evoflux_core::Diagnostic;
use evoflux_core::atomic::{AtomicOptions, write_atomic};

use crate::modes::ModeSet;

/// The sidecar's file name.
pub const SIDECAR_FILE: &str = ".evoflux.json";
/// Largest sidecar read (16 KiB).
pub const MAX_SIDECAR_BYTES: u64 = 16 * 1024;

/// What a bundle's sidecar says.
#[derive(Debug, Clone, PartialEq)]
pub struct SidecarModes {
    /// The modes to use (both when absent or broken).
    pub modes: ModeSet,
    /// Whether a sidecar file exists.
    pub present: bool,
    /// The warning when the sidecar was unusable.
    pub diagnostic: Option<Diagnostic>,
}

/// Reads `bundle_dir/.evoflux.json`.
pub fn read_sidecar(bundle_dir: &Path) -> SidecarModes {
    let path = bundle_dir.join(SIDECAR_FILE);
    let fail = |why: String| SidecarModes {
        modes: ModeSet::BOTH,
        present: true,
        diagnostic: Some(
            Diagnostic::warning(
                "skill/scope-invalid",
                format!(
                    "{why}; the skill is available in both modes. Expected {{\"modes\": \
                     [\"work\", \"coding\"]}} with at least one mode"
                ),
            )
            .with_file(&path),
        ),
    };
    let bytes = match read_bounded(&path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return SidecarModes {
                modes: ModeSet::BOTH,
                present: false,
                diagnostic: None,
            };
        }
        Err(e) => return fail(format!("cannot read {SIDECAR_FILE}: {e}")),
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return fail(format!("{SIDECAR_FILE} is not UTF-8"));
    };
    if let Err(e) = evoflux_core::nesting::check_json(&text) {
        return SidecarModes {
            modes: ModeSet::BOTH,
            present: true,
            diagnostic: Some(
                Diagnostic::warning(
                    e.code(),
                    format!("{SIDECAR_FILE}: {e}; the skill is available in both modes"),
                )
                .with_file(&path)
                .with_line(e.line),
            ),
        };
    }
    let value: serde_json::Value = match serde_json::from_str(&text) {
        Ok(v) => v,
        Err(e) => return fail(format!("{SIDECAR_FILE} is not valid JSON ({e})")),
    };
    let Some(object) = value.as_object() else {
        return fail(format!("{SIDECAR_FILE} must be a JSON object"));
    };
    let Some(list) = object.get("modes").and_then(serde_json::Value::as_array) else {
        return fail(format!("{SIDECAR_FILE} has no `modes` list"));
    };
    let mut modes = ModeSet::NONE;
    for item in list {
        match item.as_str().map(str::parse::<AppMode>) {
            Some(Ok(mode)) if item.as_str() == Some(mode.as_str()) => modes = modes.with(mode),
            _ => return fail(format!("{SIDECAR_FILE} names an unknown mode {item}")),
        }
    }
    if modes.is_empty() {
        return fail(format!("{SIDECAR_FILE} has an empty `modes` list"));
    }
    SidecarModes {
        modes,
        present: true,
        diagnostic: None,
    }
}

fn read_bounded(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    file.take(MAX_SIDECAR_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SIDECAR_BYTES {
        return Err(io::Error::other(format!(
            "larger than {} KiB",
            MAX_SIDECAR_BYTES / 1024
        )));
    }
    Ok(Some(bytes))
}

/// The sidecar text for `modes`: 2-space JSON and a newline, or `None` when
/// the modes are the default (both) and the file should not exist.
pub fn render_sidecar(modes: ModeSet) -> Option<String> {
    if modes == ModeSet::BOTH {
        return None;
    }
    let value = serde_json::json!({ "modes": modes });
    serde_json::to_string_pretty(&value)
        .ok()
        .map(|s| format!("{s}\n"))
}

/// Writes (or deletes, for both modes) a bundle's sidecar. This edits the
/// bundle itself, so it is for bundle authoring only: runtime preferences
/// live in the overlay and never come through here.
pub fn write_sidecar(bundle_dir: &Path, modes: ModeSet) -> io::Result<()> {
    let path = bundle_dir.join(SIDECAR_FILE);
    match render_sidecar(modes) {
        Some(text) => write_atomic(&path, text.as_bytes(), AtomicOptions::default())
            .map_err(|e| io::Error::other(e.to_string())),
        None => match std::fs::remove_file(&path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            Ok(()) | Err(_) => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(content: &[u8]) -> SidecarModes {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(SIDECAR_FILE), content).unwrap();
        read_sidecar(dir.path())
    }

    #[test]
    fn absent_means_both_without_warning() {
        let dir = tempfile::tempdir().unwrap();
        let s = read_sidecar(dir.path());
        assert_eq!(
            (s.modes, s.present, s.diagnostic),
            (ModeSet::BOTH, false, None)
        );
    }

    #[test]
    fn hostile_nesting_fails_open_before_parsing() {
        let text = format!("{{\"modes\": {}{}}}", "[".repeat(8_000), "]".repeat(8_000));
        let s = with(text.as_bytes());
        assert_eq!(s.modes, ModeSet::BOTH);
        assert_eq!(s.diagnostic.map(|d| d.code), Some("json/too-deep".into()));
    }

    #[test]
    fn valid_subset() {
        let s = with(br#"{"modes": ["coding"]}"#);
        assert_eq!(s.modes, ModeSet::CODING);
        assert!(s.diagnostic.is_none());
    }

    #[test]
    fn every_problem_fails_open_with_a_warning() {
        for bad in [
            &b"not json"[..],
            b"[\"work\"]",
            b"{}",
            b"{\"modes\": []}",
            b"{\"modes\": [\"play\"]}",
            b"{\"modes\": [\"Work\"]}",
            b"{\"modes\": \"work\"}",
            b"\xff\xfe",
        ] {
            let s = with(bad);
            assert_eq!(s.modes, ModeSet::BOTH, "{bad:?}");
            let d = s.diagnostic.unwrap();
            assert_eq!(d.code, "skill/scope-invalid");
            assert_eq!(d.severity, evoflux_core::Severity::Warning);
        }
        let big = format!(
            r#"{{"modes": ["work"], "pad": "{}"}}"#,
            "x".repeat(17 * 1024)
        );
        assert_eq!(with(big.as_bytes()).modes, ModeSet::BOTH);
    }

    #[test]
    fn render_and_write_round_trip() {
        assert_eq!(render_sidecar(ModeSet::BOTH), None);
        assert_eq!(
            render_sidecar(ModeSet::WORK).unwrap(),
            "{\n  \"modes\": [\n    \"work\"\n  ]\n}\n"
        );
        let dir = tempfile::tempdir().unwrap();
        write_sidecar(dir.path(), ModeSet::CODING).unwrap();
        assert_eq!(read_sidecar(dir.path()).modes, ModeSet::CODING);
        write_sidecar(dir.path(), ModeSet::BOTH).unwrap();
        assert!(!dir.path().join(SIDECAR_FILE).exists());
    }
}
