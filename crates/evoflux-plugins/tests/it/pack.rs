//! Deterministic `.evoplugin` packing and the pack → stage round trip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs;

use common::Fixture;
use evoflux_plugins::{
    ExcludedBy, ExtractLimits, PLUGIN_SCHEMA_1_0_0, PackError, PackOptions, StrictSkillValidator,
    pack, stage_archive,
};
use serde_json::json;

fn sample() -> Fixture {
    let f = Fixture::empty();
    f.manifest(
        json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "my-plugin", "version": "1.0.0+build/7"}),
    );
    f.skill("release-audit", "release-audit");
    f.write("skills/release-audit/references/notes.md", "notes");
    f.write("bin/tool.sh", "#!/bin/sh\necho hi\n");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(
            f.root.join("bin/tool.sh"),
            fs::Permissions::from_mode(0o700),
        )
        .unwrap();
    }
    f.write(".git/config", "[core]");
    f.write("__pycache__/m.cpython-312.pyc", "x");
    f.write(".DS_Store", "x");
    f
}

fn options(path: std::path::PathBuf) -> PackOptions {
    PackOptions {
        output: Some(path),
        forbidden_roots: Vec::new(),
    }
}

#[test]
fn pack_twice_gives_identical_bytes() {
    let f = sample();
    let a = pack(
        &f.root,
        &options(f.dir.path().join("a.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    // Different mtimes must not matter.
    f.write("skills/release-audit/references/notes.md", "notes");
    let b = pack(
        &f.root,
        &options(f.dir.path().join("b.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(fs::read(&a.output).unwrap(), fs::read(&b.output).unwrap());
    assert_eq!(
        a.entries, 4,
        "plugin.json, SKILL.md, notes.md, tool.sh; caches skipped"
    );
    assert_eq!(a.content_sha256, b.content_sha256);

    // The same tree somewhere else gives the same bytes too.
    let g = sample();
    let c = pack(
        &g.root,
        &options(g.dir.path().join("c.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(fs::read(&a.output).unwrap(), fs::read(&c.output).unwrap());
}

#[test]
fn archive_entries_are_sorted_with_fixed_metadata() {
    let f = sample();
    let r = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    let mut zip = zip::ZipArchive::new(fs::File::open(&r.output).unwrap()).unwrap();
    let mut names = Vec::new();
    for i in 0..zip.len() {
        let e = zip.by_index(i).unwrap();
        names.push(e.name().unwrap().into_owned());
        let modified = e.last_modified().unwrap();
        assert_eq!(
            (modified.year(), modified.month(), modified.day()),
            (1980, 1, 1)
        );
        assert_eq!(
            (modified.hour(), modified.minute(), modified.second()),
            (0, 0, 0)
        );
        let mode = e.unix_mode().unwrap() & 0o777;
        if names.last().unwrap() == "bin/tool.sh" && cfg!(unix) {
            assert_eq!(mode, 0o755);
        } else {
            assert_eq!(mode, 0o644);
        }
    }
    assert_eq!(
        names,
        [
            "bin/tool.sh",
            "plugin.json",
            "skills/release-audit/SKILL.md",
            "skills/release-audit/references/notes.md"
        ]
    );
}

#[test]
fn default_output_sits_beside_the_package() {
    let f = sample();
    let r = pack(&f.root, &PackOptions::default(), &StrictSkillValidator).unwrap();
    assert_eq!(
        r.output,
        f.dir.path().join("my-plugin-1.0.0-build-7.evoplugin")
    );
    let err = pack(&f.root, &PackOptions::default(), &StrictSkillValidator).unwrap_err();
    assert_eq!(err.code(), "plugin/pack-output-exists");
}

#[test]
fn unversioned_default_name() {
    let f = Fixture::minimal();
    let r = pack(&f.root, &PackOptions::default(), &StrictSkillValidator).unwrap();
    assert_eq!(
        r.output,
        f.dir.path().join("my-plugin-unversioned.evoplugin")
    );
}

#[test]
fn output_inside_package_or_forbidden_tree_is_refused() {
    let f = sample();
    let err = pack(
        &f.root,
        &options(f.root.join("out.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/pack-output-inside-package");
    let err = pack(
        &f.root,
        &options(f.root.join("sub/../../my-plugin/x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/pack-output-inside-package");

    let bundled = f.dir.path().join("bundled");
    fs::create_dir(&bundled).unwrap();
    let err = pack(
        &f.root,
        &PackOptions {
            output: Some(bundled.join("p/x.evoplugin")),
            forbidden_roots: vec![bundled.clone()],
        },
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert!(matches!(err, PackError::OutputForbidden(..)));
    assert_eq!(err.code(), "plugin/pack-output-forbidden");
    assert!(
        !bundled.join("p").exists(),
        "nothing written in the bundled tree"
    );
}

#[test]
fn invalid_package_is_not_packed() {
    let f = Fixture::empty();
    f.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "Bad"}));
    let out = f.dir.path().join("x.evoplugin");
    let err = pack(&f.root, &options(out.clone()), &StrictSkillValidator).unwrap_err();
    assert_eq!(err.code(), "plugin/pack-invalid-package");
    let PackError::Invalid { diagnostics } = err else {
        panic!()
    };
    assert_eq!(diagnostics[0].code(), "plugin/manifest-name-invalid");
    assert!(!out.exists());
}

#[cfg(unix)]
#[test]
fn archives_hold_files_only_and_name_the_links_they_left_out() {
    let f = Fixture::minimal();
    f.write("a.txt", "a");
    f.write("docs/d.md", "d");
    // Inside the root, to a file: packed as that file.
    f.symlink("a.txt", "b.txt");
    // To a folder, and out of the root: left out, and said so.
    f.symlink("docs", "docs-link");
    let outside = f.dir.path().join("secret.txt");
    fs::write(&outside, "s").unwrap();
    f.symlink(&outside, "leak.txt");
    let r = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    let mut zip = zip::ZipArchive::new(fs::File::open(&r.output).unwrap()).unwrap();
    let mut b = String::new();
    std::io::Read::read_to_string(&mut zip.by_name("b.txt").unwrap(), &mut b).unwrap();
    assert_eq!(b, "a");
    assert!(zip.by_name("leak.txt").is_err() && zip.by_name("docs-link").is_err());
    let left: Vec<(&str, ExcludedBy)> =
        r.excluded.iter().map(|e| (e.path.as_str(), e.by)).collect();
    assert_eq!(
        left,
        [
            ("docs-link", ExcludedBy::Link),
            ("leak.txt", ExcludedBy::EscapingLink)
        ]
    );
    // The archive stages with the digest pack reported.
    let staged = stage_archive(
        &r.output,
        &f.dir.path().join("cache"),
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(staged.digest(), Some(&r.content_sha256));
}

#[test]
fn packed_archive_stages_with_the_source_digest() {
    let f = sample();
    let r = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    let cache = f.dir.path().join("cache");
    let staged = stage_archive(
        &r.output,
        &cache,
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap();
    assert!(
        staged
            .root()
            .starts_with(cache.join("agent-plugins/staging").canonicalize().unwrap())
    );
    assert_eq!(staged.digest(), Some(&r.content_sha256));
    assert_eq!(staged.inspection().valid_skills().count(), 1);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(staged.root().join("bin/tool.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
    let dest = f.dir.path().join("data/installed/abc/1.0.0");
    let installed = staged.persist(&dest, &StrictSkillValidator).unwrap();
    assert_eq!(installed.content_sha256, Some(r.content_sha256));
    let leftovers: Vec<_> = fs::read_dir(cache.join("agent-plugins/staging"))
        .unwrap()
        .collect();
    assert!(leftovers.is_empty(), "staging is cleaned up");
}

#[test]
fn staged_package_that_changes_is_not_persisted() {
    let f = sample();
    let r = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    let cache = f.dir.path().join("cache");
    let staged = stage_archive(
        &r.output,
        &cache,
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap();
    fs::write(staged.root().join("plugin.json.bak"), "x").unwrap();
    let dest = f.dir.path().join("dest");
    let err = staged.persist(&dest, &StrictSkillValidator).unwrap_err();
    assert_eq!(err.code(), "plugin/stage-changed");
    assert!(!dest.exists());
    assert_eq!(
        fs::read_dir(cache.join("agent-plugins/staging"))
            .unwrap()
            .count(),
        0
    );
}

/// An IO failure names the file or folder it concerns and keeps its code:
/// here a regular file stands where a folder must be created (tests run as
/// root, so a permission error cannot be provoked).
#[test]
fn io_errors_name_the_path_they_concern() {
    let f = sample();
    let blocker = f.dir.path().join("not-a-dir");
    fs::write(&blocker, "x").unwrap();

    let err = pack(
        &f.root,
        &options(blocker.join("out/p.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/pack-io");
    let PackError::Io { path, .. } = &err else {
        panic!("{err:?}");
    };
    assert!(path.starts_with(&blocker), "{}", path.display());
    assert!(
        err.to_string().contains(&*blocker.to_string_lossy()),
        "{err}"
    );

    let packed = pack(
        &f.root,
        &options(f.dir.path().join("ok.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    // The cache dir is a file: the staging folder cannot be created.
    let err = stage_archive(
        &packed.output,
        &blocker,
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/stage-io");
    assert!(
        err.to_string().contains(&*blocker.to_string_lossy()),
        "{err}"
    );
    assert_eq!(
        err.to_diagnostic().locator.file.as_deref(),
        Some(evoflux_plugins::staging_dir(&blocker).as_path())
    );
    // Through the lifecycle's error, the diagnostic names the file too.
    let lifecycle = evoflux_plugins::PluginError::from(err);
    assert_eq!(lifecycle.code(), "plugin/stage-io");
    assert!(lifecycle.to_diagnostic().locator.file.is_some());
}

fn archive_names(path: &std::path::Path) -> Vec<String> {
    let mut zip = zip::ZipArchive::new(fs::File::open(path).unwrap()).unwrap();
    (0..zip.len())
        .map(|i| zip.by_index(i).unwrap().name().unwrap().into_owned())
        .collect()
}

#[test]
fn secrets_and_ignored_files_are_left_out_and_listed() {
    let f = sample();
    f.write(".env", "TOKEN=root-secret");
    f.write(".env.local", "TOKEN=local-secret");
    f.write(".env.example", "TOKEN=");
    f.write("bin/.env.production", "TOKEN=prod-secret");
    f.write(".env.d/keys", "TOKEN=dir-secret");
    f.write("build/out.bin", "artefact");
    f.write("build/deep/more.bin", "artefact");
    f.write("notes.tmp", "scratch");
    f.write(
        ".evopluginignore",
        "# local files\nbuild/\n*.tmp\n!.env.example\n",
    );
    let r = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(
        archive_names(&r.output),
        [
            ".env.example",
            ".evopluginignore",
            "bin/tool.sh",
            "plugin.json",
            "skills/release-audit/SKILL.md",
            "skills/release-audit/references/notes.md"
        ]
    );
    let listed: Vec<(&str, bool, ExcludedBy)> = r
        .excluded
        .iter()
        .map(|e| (e.path.as_str(), e.folder, e.by))
        .collect();
    assert_eq!(
        listed,
        [
            (".env", false, ExcludedBy::Default),
            (".env.d", true, ExcludedBy::Default),
            (".env.local", false, ExcludedBy::Default),
            ("bin/.env.production", false, ExcludedBy::Default),
            ("build", true, ExcludedBy::IgnoreFile),
            ("notes.tmp", false, ExcludedBy::IgnoreFile),
        ]
    );
    assert_eq!(r.excluded[4].pattern, "build/");

    // The report's digest is the packed tree's: an install of the archive
    // has it, the source folder (which still holds the secrets) does not.
    let staged = stage_archive(
        &r.output,
        &f.dir.path().join("cache"),
        &ExtractLimits::DEFAULT,
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(staged.digest(), Some(&r.content_sha256));
    assert_ne!(f.inspect().content_sha256, Some(r.content_sha256.clone()));
    // And re-packing the extracted tree gives the same digest.
    let again = pack(
        staged.root(),
        &options(f.dir.path().join("y.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(again.content_sha256, r.content_sha256);
    assert!(again.excluded.is_empty());
}

#[cfg(unix)]
#[test]
fn a_left_out_symlink_does_not_block_packing() {
    let f = sample();
    let outside = f.dir.path().join("secrets.env");
    fs::write(&outside, "TOKEN=x").unwrap();
    f.symlink(&outside, ".env");
    let r = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap();
    assert_eq!(r.excluded[0].path, ".env");
    assert!(!archive_names(&r.output).contains(&".env".to_owned()));
}

#[test]
fn an_ignore_file_cannot_drop_the_manifest_or_be_malformed() {
    let f = sample();
    f.write(".evopluginignore", "*.json\n");
    let err = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/pack-manifest-excluded");
    f.write(".evopluginignore", "ok\n{a,b\n");
    let err = pack(
        &f.root,
        &options(f.dir.path().join("x.evoplugin")),
        &StrictSkillValidator,
    )
    .unwrap_err();
    assert_eq!(err.code(), "plugin/pack-ignore-file-invalid");
    assert!(err.to_string().contains("line 2"), "{err}");
    assert!(!f.dir.path().join("x.evoplugin").exists());
}
