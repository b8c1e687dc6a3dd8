//! Adversarial archives built in the tests: each is refused with its code
//! and nothing is written outside (or left inside) the destination.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use evoflux_plugins::{
    ExtractLimits, PLUGIN_SCHEMA_1_0_0, StrictSkillValidator, extract_archive, stage_archive,
};
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipWriter};

const MANIFEST: &str =
    r#"{"$schema": "https://agent-plugins.org/schemas/1.0.0/plugin.schema.json", "name": "p"}"#;

/// Writes a stored ZIP whose entry names are exactly `entries[i].0`, even
/// names the writer would refuse: entries are written under unique
/// placeholder names of the same length, then the name bytes are patched in
/// the local headers and the central directory.
fn raw_zip(path: &Path, entries: &[(&str, &[u8])]) {
    let mut buf = std::io::Cursor::new(Vec::new());
    let mut placeholders = Vec::new();
    {
        let mut zip = ZipWriter::new(&mut buf);
        let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        for (i, (name, data)) in entries.iter().enumerate() {
            let letter = char::from(b'A' + u8::try_from(i).unwrap());
            let placeholder: String = std::iter::repeat_n(letter, name.len()).collect();
            zip.start_file(placeholder.as_str(), opts).unwrap();
            zip.write_all(data).unwrap();
            placeholders.push(placeholder);
        }
        zip.finish().unwrap();
    }
    let mut bytes = buf.into_inner();
    for ((name, _), placeholder) in entries.iter().zip(&placeholders) {
        let (from, to) = (placeholder.as_bytes(), name.as_bytes());
        let mut i = 0;
        while i + from.len() <= bytes.len() {
            if &bytes[i..i + from.len()] == from {
                bytes[i..i + from.len()].copy_from_slice(to);
                i += from.len();
            } else {
                i += 1;
            }
        }
    }
    fs::write(path, bytes).unwrap();
}

struct Case {
    dir: tempfile::TempDir,
    archive: PathBuf,
    dest: PathBuf,
}

fn case() -> Case {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("in.evoplugin");
    let dest = dir.path().join("staging/install-x/package");
    Case { dir, archive, dest }
}

/// Extraction fails with `code`, the destination does not exist and the
/// temp dir holds only the archive and the (empty) staging parents.
fn assert_refused(c: &Case, limits: &ExtractLimits, code: &str) {
    let err = extract_archive(&c.archive, &c.dest, limits).unwrap_err();
    assert_eq!(err.code(), code, "{err}");
    assert!(!c.dest.exists(), "no half-extracted destination");
    let mut found = Vec::new();
    for entry in walk(c.dir.path()) {
        found.push(entry.strip_prefix(c.dir.path()).unwrap().to_path_buf());
    }
    found.retain(|p| !p.starts_with("in.evoplugin") && !p.starts_with("staging"));
    assert!(found.is_empty(), "written outside staging: {found:?}");
    assert!(!c.dir.path().parent().unwrap().join("evil").exists());
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

fn refused(entries: &[(&str, &[u8])], code: &str) {
    let c = case();
    raw_zip(&c.archive, entries);
    assert_refused(&c, &ExtractLimits::DEFAULT, code);
}

#[test]
fn zip_slip_is_refused() {
    refused(
        &[("plugin.json", MANIFEST.as_bytes()), ("../evil", b"x")],
        "plugin/archive-path-traversal",
    );
    refused(
        &[("skills/../../../evil", b"x")],
        "plugin/archive-path-traversal",
    );
}

#[test]
fn absolute_name_is_refused() {
    refused(&[("/tmp/evil", b"x")], "plugin/archive-absolute-path");
}

#[test]
fn drive_letter_segment_is_refused() {
    refused(&[("C:/evil", b"x")], "plugin/archive-colon-segment");
    refused(&[("a/file:stream", b"x")], "plugin/archive-colon-segment");
}

#[test]
fn backslash_is_refused() {
    refused(&[("..\\evil", b"x")], "plugin/archive-backslash");
}

#[test]
fn empty_and_dot_segments_are_refused() {
    refused(&[("a//b", b"x")], "plugin/archive-empty-segment");
    refused(&[("./a", b"x")], "plugin/archive-empty-segment");
}

#[test]
fn duplicates_are_refused() {
    refused(
        &[("plugin.json", MANIFEST.as_bytes()), ("plugin.json", b"{}")],
        "plugin/archive-duplicate-entry",
    );
    refused(
        &[("skills/a/SKILL.md", b"x"), ("skills/A/SKILL.md", b"y")],
        "plugin/archive-case-fold-duplicate",
    );
    // One name on macOS: NFC and NFD spellings of `é`.
    refused(
        &[("caf\u{e9}.md", b"x"), ("cafe\u{301}.md", b"y")],
        "plugin/archive-case-fold-duplicate",
    );
    // One name under full case folding: `ß` and `SS`.
    refused(
        &[("stra\u{df}e.md", b"x"), ("STRASSE.md", b"y")],
        "plugin/archive-case-fold-duplicate",
    );
    refused(
        &[("a", b"file"), ("a/b", b"under a file")],
        "plugin/archive-duplicate-entry",
    );
}

#[test]
fn symlink_entry_is_refused() {
    let c = case();
    {
        let mut zip = ZipWriter::new(fs::File::create(&c.archive).unwrap());
        let opts = SimpleFileOptions::default();
        zip.start_file("plugin.json", opts).unwrap();
        zip.write_all(MANIFEST.as_bytes()).unwrap();
        zip.add_symlink("link", "/etc/passwd", opts).unwrap();
        zip.finish().unwrap();
    }
    assert_refused(&c, &ExtractLimits::DEFAULT, "plugin/archive-symlink");
}

#[test]
fn too_many_entries_is_refused() {
    let c = case();
    {
        let mut zip = ZipWriter::new(fs::File::create(&c.archive).unwrap());
        let opts = SimpleFileOptions::default().compression_method(CompressionMethod::Stored);
        for i in 0..2001 {
            zip.start_file(format!("f/{i}"), opts).unwrap();
        }
        zip.finish().unwrap();
    }
    assert_refused(
        &c,
        &ExtractLimits::DEFAULT,
        "plugin/archive-too-many-entries",
    );
}

#[test]
fn compression_bomb_is_refused() {
    let c = case();
    {
        let mut zip = ZipWriter::new(fs::File::create(&c.archive).unwrap());
        let opts = SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(9));
        zip.start_file("plugin.json", opts).unwrap();
        zip.write_all(MANIFEST.as_bytes()).unwrap();
        zip.start_file("zeros.bin", opts).unwrap();
        zip.write_all(&vec![0u8; 4 * 1024 * 1024]).unwrap();
        zip.finish().unwrap();
    }
    assert_refused(
        &c,
        &ExtractLimits::DEFAULT,
        "plugin/archive-suspicious-ratio",
    );
}

#[test]
fn size_limits_are_enforced() {
    let c = case();
    raw_zip(&c.archive, &[("a", &[1u8; 600]), ("b", &[2u8; 600])]);
    let expanded = ExtractLimits {
        max_expanded_bytes: 1000,
        ..ExtractLimits::DEFAULT
    };
    assert_refused(&c, &expanded, "plugin/archive-expanded-too-large");
    let compressed = ExtractLimits {
        max_archive_bytes: 100,
        ..ExtractLimits::DEFAULT
    };
    assert_refused(&c, &compressed, "plugin/archive-too-large");
}

#[test]
fn a_tarball_or_gzip_is_refused_for_what_it_is() {
    // A real tar, made by tar, renamed as a plugin archive.
    let c = case();
    let work = tempfile::tempdir().unwrap();
    let src = work.path().join("src");
    fs::create_dir_all(&src).unwrap();
    fs::write(src.join("plugin.json"), MANIFEST).unwrap();
    let tar = work.path().join("p.tar");
    let made = std::process::Command::new("tar")
        .arg("-cf")
        .arg(&tar)
        .arg("-C")
        .arg(&src)
        .arg("plugin.json")
        .status()
        .unwrap();
    assert!(made.success());
    fs::rename(&tar, &c.archive).unwrap();
    assert_refused(&c, &ExtractLimits::DEFAULT, "plugin/archive-not-zip");
    let err = extract_archive(&c.archive, &c.dest, &ExtractLimits::DEFAULT).unwrap_err();
    assert!(err.to_string().contains("a tar archive"), "{err}");
    fs::write(&c.archive, [0x1f, 0x8b, 8, 0, 0, 0, 0, 0]).unwrap();
    let err = extract_archive(&c.archive, &c.dest, &ExtractLimits::DEFAULT).unwrap_err();
    assert_eq!(err.code(), "plugin/archive-not-zip");
    assert!(err.to_string().contains("gzip"), "{err}");
}

#[test]
fn garbage_is_an_invalid_archive() {
    let c = case();
    fs::write(&c.archive, b"this is not a zip").unwrap();
    assert_refused(&c, &ExtractLimits::DEFAULT, "plugin/archive-invalid");
}

#[test]
fn existing_destination_is_refused() {
    let c = case();
    raw_zip(&c.archive, &[("plugin.json", MANIFEST.as_bytes())]);
    fs::create_dir_all(&c.dest).unwrap();
    let err = extract_archive(&c.archive, &c.dest, &ExtractLimits::DEFAULT).unwrap_err();
    assert_eq!(err.code(), "plugin/archive-destination-exists");
}

#[test]
fn safe_archive_extracts_with_folders() {
    let c = case();
    raw_zip(
        &c.archive,
        &[
            ("plugin.json", MANIFEST.as_bytes()),
            ("skills/", b""),
            (
                "skills/p/SKILL.md",
                b"---\nname: p\ndescription: d\n---\nbody\n",
            ),
        ],
    );
    let report = extract_archive(&c.archive, &c.dest, &ExtractLimits::DEFAULT).unwrap();
    assert_eq!(report.files, 2);
    assert!(c.dest.join("skills/p/SKILL.md").is_file());
}

#[test]
fn wrapper_folder_archive_does_not_stage() {
    let c = case();
    raw_zip(
        &c.archive,
        &[("my-plugin/plugin.json", MANIFEST.as_bytes())],
    );
    let cache = c.dir.path().join("cache");
    let err = stage_archive(
        &c.archive,
        &cache,
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/stage-invalid-package");
    let evoflux_plugins::StageError::Invalid { diagnostics } = err else {
        panic!()
    };
    assert_eq!(diagnostics[0].code(), "plugin/manifest-missing");
    assert_eq!(
        fs::read_dir(cache.join("agent-plugins/staging"))
            .unwrap()
            .count(),
        0,
        "a failed stage leaves nothing behind"
    );
    let _ = PLUGIN_SCHEMA_1_0_0;
}

#[test]
fn refused_archive_leaves_staging_empty() {
    let c = case();
    raw_zip(
        &c.archive,
        &[("plugin.json", MANIFEST.as_bytes()), ("../evil", b"x")],
    );
    let cache = c.dir.path().join("cache");
    let err = stage_archive(
        &c.archive,
        &cache,
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/archive-path-traversal");
    assert_eq!(
        fs::read_dir(cache.join("agent-plugins/staging"))
            .unwrap()
            .count(),
        0
    );
}

#[test]
fn extraction_io_errors_name_the_path() {
    let c = case();
    let missing = c.dir.path().join("missing.evoplugin");
    let err =
        extract_archive(&missing, &c.dir.path().join("out"), &ExtractLimits::DEFAULT).unwrap_err();
    assert_eq!(err.code(), "plugin/archive-io");
    assert!(
        err.to_string().contains(&*missing.to_string_lossy()),
        "{err}"
    );

    // A regular file where the destination's parent folder must be.
    let archive = c.dir.path().join("ok.zip");
    raw_zip(&archive, &[("plugin.json", b"{}")]);
    let blocker = c.dir.path().join("blocker");
    std::fs::write(&blocker, "x").unwrap();
    let err =
        extract_archive(&archive, &blocker.join("dest"), &ExtractLimits::DEFAULT).unwrap_err();
    assert_eq!(err.code(), "plugin/archive-io");
    let evoflux_plugins::ExtractError::Io { path, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(path.starts_with(&blocker), "{}", path.display());
}
