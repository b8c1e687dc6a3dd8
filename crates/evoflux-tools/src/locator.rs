//! Artifact locators: how observations name a file of the session's
//! artifacts folder (`artifact:proc_0123456789.txt`), and how `read`
//! finds it. The data directory's layout never reaches the model, and
//! the sandbox, which hides that directory from commands, does not stop
//! the model from reading a command's full output.

use std::path::Path;

pub use evoflux_graph::tool::builtin::read::ARTIFACT_SCHEME;

/// The locator of the artifact file `path` (its file name in the
/// session's artifacts folder).
pub fn artifact_locator(path: &Path) -> String {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!("{ARTIFACT_SCHEME}{name}")
}

/// The artifact a `read` path names, when it is a locator: one plain file
/// name (no folders, no `..`).
pub(crate) fn artifact_name(argument: &str) -> Option<&str> {
    let name = argument.strip_prefix(ARTIFACT_SCHEME)?;
    let plain = !name.is_empty()
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    plain.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locators_round_trip_and_only_name_plain_files() {
        let locator = artifact_locator(Path::new("/data/artifacts/s/proc_0123456789.txt"));
        assert_eq!(locator, "artifact:proc_0123456789.txt");
        assert_eq!(artifact_name(&locator), Some("proc_0123456789.txt"));
        for bad in [
            "artifact:",
            "artifact:..",
            "artifact:../x",
            "artifact:a/b",
            "src/main.rs",
        ] {
            assert_eq!(artifact_name(bad), None, "{bad}");
        }
    }
}
