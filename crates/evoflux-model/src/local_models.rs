//! Where local GGUF models live and what they are called.
//!
//! Kept apart from the inference code so `evoflux model list` and model
//! resolution work in a build without the `local` feature.

use std::path::{Path, PathBuf};

/// The embedded default model: its name in `local:<name>` and its file.
pub const DEFAULT_MODEL_NAME: &str = "smollm2-135m-instruct";
pub const DEFAULT_MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// The file a `local:<model>` name refers to inside `<data>/models/`: the
/// default model's file for its name, otherwise the name itself as a file
/// name (`.gguf` added when missing).
pub fn model_file_for(models_dir: &Path, model: &str) -> PathBuf {
    if model == DEFAULT_MODEL_NAME {
        return models_dir.join(DEFAULT_MODEL_FILE);
    }
    if Path::new(model)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("gguf"))
    {
        models_dir.join(model)
    } else {
        models_dir.join(format!("{model}.gguf"))
    }
}

/// One GGUF file found in the models directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstalledModel {
    /// The name to use in `local:<name>`.
    pub name: String,
    pub path: PathBuf,
    pub size_bytes: u64,
}

/// The GGUF files in `models_dir` (`<data>/models`), sorted by name, for
/// `evoflux model list`. A missing directory means none.
pub fn installed_models(models_dir: &Path) -> Vec<InstalledModel> {
    let Ok(entries) = std::fs::read_dir(models_dir) else {
        return Vec::new();
    };
    let mut found: Vec<InstalledModel> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let path = e.path();
            let file = path.file_name()?.to_str()?.to_owned();
            let is_gguf = path
                .extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("gguf"));
            let meta = e.metadata().ok()?;
            (is_gguf && meta.is_file() && !file.starts_with('.')).then(|| InstalledModel {
                name: if file == DEFAULT_MODEL_FILE {
                    DEFAULT_MODEL_NAME.to_owned()
                } else {
                    file
                },
                size_bytes: meta.len(),
                path,
            })
        })
        .collect();
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_map_to_files() {
        let d = Path::new("/data/models");
        assert_eq!(
            model_file_for(d, DEFAULT_MODEL_NAME),
            d.join(DEFAULT_MODEL_FILE)
        );
        assert_eq!(
            model_file_for(d, "tiny.Q8_0.gguf"),
            d.join("tiny.Q8_0.gguf")
        );
        assert_eq!(model_file_for(d, "tiny"), d.join("tiny.gguf"));
    }

    #[test]
    fn installed_models_lists_gguf_files_by_name() {
        let dir = tempfile::tempdir().unwrap();
        assert!(installed_models(&dir.path().join("absent")).is_empty());
        std::fs::write(dir.path().join(DEFAULT_MODEL_FILE), b"x").unwrap();
        std::fs::write(dir.path().join("b.gguf"), b"xy").unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"").unwrap();
        std::fs::write(dir.path().join(".partial.gguf"), b"").unwrap();
        let found = installed_models(dir.path());
        let names: Vec<_> = found.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["b.gguf", DEFAULT_MODEL_NAME]);
        assert_eq!(found[0].size_bytes, 2);
    }
}
