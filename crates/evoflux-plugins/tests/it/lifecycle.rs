//! Registry and lifecycle: install, link, update, enable, disable,
//! uninstall, credentials, bundled plugins and crash recovery.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use common::Fixture;
use evoflux_plugins::{
    CreateOptions, CredentialChange, InstallationId, PLUGIN_SCHEMA_1_0_0, PackOptions,
    PluginManager, PluginPaths, SourceType, StrictSkillValidator, UpdateTrust::ReviewAgain, pack,
};
use serde_json::json;

struct Env {
    tmp: tempfile::TempDir,
    manager: PluginManager,
}

impl Env {
    fn new() -> Env {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let manager = PluginManager::new(PluginPaths::new(base.join("data"), base.join("cache")));
        Env { tmp, manager }
    }

    fn paths(&self) -> &PluginPaths {
        self.manager.paths()
    }

    fn installed_entries(&self) -> Vec<String> {
        names(&self.paths().installed_dir())
    }

    fn registry_json(&self) -> serde_json::Value {
        serde_json::from_slice(&fs::read(self.paths().registry_file()).unwrap()).unwrap()
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// A plugin `name` at `version` with one skill `audit`.
fn plugin(name: &str, version: &str, description: &str) -> Fixture {
    let f = Fixture::empty();
    f.manifest(json!({
        "$schema": PLUGIN_SCHEMA_1_0_0,
        "name": name,
        "version": version,
        "description": description,
    }));
    f.skill("audit", "audit");
    f
}

fn pack_to(f: &Fixture, file: &str) -> PathBuf {
    let out = f.dir.path().join(file);
    pack(
        &f.root,
        &PackOptions {
            output: Some(out.clone()),
            forbidden_roots: Vec::new(),
        },
        &StrictSkillValidator,
    )
    .unwrap();
    out
}

#[test]
fn install_from_folder_is_disabled_until_enabled() {
    let env = Env::new();
    let f = plugin("demo", "1.0.0", "Demo");
    let d = env.manager.install(&f.root, false).unwrap().detail;
    let id = d.installation.id.clone();
    assert!(!d.installation.enabled);
    assert_eq!(d.installation.source_type, SourceType::Installed);
    assert_eq!(
        d.installation.root,
        env.paths().installation_dir(&id).join("1.0.0")
    );
    assert!(d.inspection.valid);
    assert_eq!(d.inspection.trust.capabilities[0].name, "agent-skill");
    assert!(d.capabilities.updatable && d.capabilities.can_uninstall);
    assert!(env.paths().plugin_data_dir(&id).is_dir());

    let user_roots = |env: &Env| {
        env.manager
            .enabled_plugin_roots()
            .0
            .into_iter()
            .filter(|r| !r.bundled)
            .collect::<Vec<_>>()
    };
    assert!(user_roots(&env).is_empty());
    env.manager.set_enabled(&id, true).unwrap();
    let roots = user_roots(&env);
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].installation, id.to_string());
    assert_eq!(roots[0].name, "demo");
    assert_eq!(roots[0].dir, d.installation.root);
    env.manager.set_enabled(&id, false).unwrap();
    assert!(user_roots(&env).is_empty());

    // Registry shape.
    let reg = env.registry_json();
    assert_eq!(reg["version"], 1);
    assert_eq!(reg["installations"][0]["id"], id.to_string());
    assert_eq!(reg["installations"][0]["source_type"], "installed");

    // The same source cannot be installed twice.
    let err = env.manager.install(&f.root, false).unwrap_err();
    assert_eq!(err.code(), "plugin/already-installed");
    assert_eq!(env.installed_entries(), [id.to_string()]);
}

#[cfg(unix)]
#[test]
fn install_from_archive_drops_junk_and_keeps_exec_bits() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let f = plugin("packed", "2.0.0", "Packed");
    f.write("__pycache__/x.pyc", "junk");
    f.write(".DS_Store", "junk");
    let server = f.write("bin/server", "#!/bin/sh\n");
    fs::set_permissions(&server, fs::Permissions::from_mode(0o755)).unwrap();
    let archive = pack_to(&f, "packed-2.0.0.evoplugin");
    let d = env.manager.install(&archive, true).unwrap().detail;
    let root = &d.installation.root;
    assert!(d.installation.enabled);
    assert!(!root.join("__pycache__").exists());
    assert!(!root.join(".DS_Store").exists());
    assert_eq!(
        fs::metadata(root.join("bin/server"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o755
    );
    assert_eq!(d.installation.source_ref, archive.display().to_string());
    // Staging is empty again.
    assert!(names(&env.paths().staging_dir()).is_empty());

    let u = env.manager.uninstall(&d.installation.id, false).unwrap();
    assert!(!u.removed_data);
    assert!(!root.exists());
    assert!(env.installed_entries().is_empty());
    assert_eq!(env.registry_json()["installations"], json!([]));
}

#[test]
fn bad_archives_and_folders_leave_nothing_behind() {
    let env = Env::new();
    let junk = env.tmp.path().join("junk.evoplugin");
    fs::write(&junk, b"not a zip").unwrap();
    let err = env.manager.install(&junk, false).unwrap_err();
    assert_eq!(err.code(), "plugin/archive-invalid");
    assert!(err.to_string().contains("not a valid ZIP archive"), "{err}");

    let bad = Fixture::empty();
    bad.manifest(json!({"$schema": PLUGIN_SCHEMA_1_0_0, "name": "Bad Name"}));
    let err = env.manager.install(&bad.root, false).unwrap_err();
    assert_eq!(err.code(), "plugin/package-invalid");
    assert!(
        err.package_diagnostics()
            .iter()
            .any(|d| d.code() == "plugin/manifest-name-invalid")
    );
    let err = env
        .manager
        .install(&env.tmp.path().join("missing"), false)
        .unwrap_err();
    assert_eq!(err.code(), "plugin/source-missing");

    assert!(env.installed_entries().is_empty());
    assert!(names(&env.paths().staging_dir()).is_empty());
    // Nothing was committed, so no registry was written.
    assert!(!env.paths().registry_file().exists());
}

#[cfg(unix)]
#[test]
fn installed_copies_hold_files_only_and_name_the_links_they_left_out() {
    let env = Env::new();
    let f = plugin("linky", "1.0.0", "L");
    f.symlink("skills/audit/SKILL.md", "alias.md");
    f.symlink("skills", "skills-link");
    let outside = f.dir.path().join("secret.txt");
    fs::write(&outside, "s").unwrap();
    f.symlink(&outside, "leak.txt");
    let n = env.manager.install(&f.root, false).unwrap();
    let root = &n.detail.installation.root;
    // A link to a file inside the root is copied as that file.
    let alias = fs::symlink_metadata(root.join("alias.md")).unwrap();
    assert!(alias.is_file());
    assert_eq!(
        fs::read(root.join("alias.md")).unwrap(),
        fs::read(f.root.join("skills/audit/SKILL.md")).unwrap()
    );
    // The others are left out and named; the skill still loads.
    let left: Vec<(&str, bool)> = n
        .left_out
        .iter()
        .map(|l| (l.path.as_str(), l.escapes_root))
        .collect();
    assert_eq!(left, [("leak.txt", true), ("skills-link", false)]);
    assert!(!root.join("leak.txt").exists() && !root.join("skills-link").exists());
    assert_eq!(n.detail.inspection.valid_skills().count(), 1);
    assert!(
        n.detail
            .inspection
            .tree
            .as_ref()
            .is_some_and(|t| !t.has_symlinks())
    );
}

#[test]
fn update_keeps_identity_state_and_data() {
    let env = Env::new();
    let v1 = plugin("svc", "1.0.0", "Version one");
    let d1 = env.manager.install(&v1.root, false).unwrap().detail;
    let id = d1.installation.id.clone();
    let state = env.paths().plugin_data_dir(&id).join("state.json");
    fs::write(&state, "{\"kept\": true}").unwrap();

    let v2 = plugin("svc", "2.0.0", "Version two");
    let archive = pack_to(&v2, "svc-2.0.0.evoplugin");
    let d2 = env
        .manager
        .update(&id, &archive, ReviewAgain)
        .unwrap()
        .detail;
    assert_eq!(d2.installation.id, id);
    assert_eq!(d2.installation.installed_at, d1.installation.installed_at);
    assert_ne!(d2.installation.updated_at, d1.installation.updated_at);
    assert_eq!(d2.installation.version.as_deref(), Some("2.0.0"));
    assert_eq!(d2.installation.description.as_deref(), Some("Version two"));
    assert!(!d2.installation.enabled);
    assert_ne!(d2.installation.root, d1.installation.root);
    assert!(!d1.installation.root.exists());
    assert_eq!(fs::read_to_string(&state).unwrap(), "{\"kept\": true}");
    assert_eq!(names(&env.paths().installation_dir(&id)), ["2.0.0"]);

    // Same version from a folder: replaced in place, no backup left.
    v2.write("skills/audit/references/extra.md", "more");
    let d3 = env
        .manager
        .update(&id, &v2.root, ReviewAgain)
        .unwrap()
        .detail;
    assert_eq!(d3.installation.root, d2.installation.root);
    assert!(
        d3.installation
            .root
            .join("skills/audit/references/extra.md")
            .exists()
    );
    assert_ne!(
        d3.installation.content_sha256,
        d2.installation.content_sha256
    );
    assert_eq!(names(&env.paths().installation_dir(&id)), ["2.0.0"]);

    // A different plugin cannot replace it.
    let other = plugin("other", "3.0.0", "Other");
    let err = env
        .manager
        .update(&id, &other.root, ReviewAgain)
        .unwrap_err();
    assert_eq!(err.code(), "plugin/update-name-mismatch");
    // A failing update restores nothing because it changed nothing.
    assert_eq!(names(&env.paths().installation_dir(&id)), ["2.0.0"]);

    let missing: InstallationId = "0123456789abcdef0123456789abcdef".parse().unwrap();
    assert_eq!(
        env.manager
            .update(&missing, &v2.root, ReviewAgain)
            .unwrap_err()
            .code(),
        "plugin/installation-not-found"
    );
}

#[test]
fn uninstall_keeps_plugin_data_unless_asked() {
    let env = Env::new();
    let a = plugin("keep", "1.0.0", "K");
    let b = plugin("drop", "1.0.0", "D");
    let ka = env
        .manager
        .install(&a.root, false)
        .unwrap()
        .detail
        .installation
        .id;
    let kb = env
        .manager
        .install(&b.root, false)
        .unwrap()
        .detail
        .installation
        .id;
    env.manager.uninstall(&ka, false).unwrap();
    env.manager.uninstall(&kb, true).unwrap();
    assert!(env.paths().plugin_data_dir(&ka).is_dir());
    assert!(!env.paths().plugin_data_dir(&kb).exists());
    assert!(env.installed_entries().is_empty());
    assert_eq!(
        env.manager.uninstall(&ka, false).unwrap_err().code(),
        "plugin/installation-not-found"
    );
}

#[cfg(unix)]
#[test]
fn links_use_the_folder_in_place() {
    let env = Env::new();
    let f = plugin("dev", "0.1.0", "Dev");
    f.write("docs/guide.md", "guide");
    f.symlink("docs/guide.md", "GUIDE.md");
    let d = env.manager.link(&f.root, false).unwrap().detail;
    assert_eq!(d.installation.source_type, SourceType::Linked);
    assert_eq!(d.installation.root, f.root);
    assert!(!d.capabilities.updatable);
    assert!(d.capabilities.can_disable);
    let err = env
        .manager
        .update(&d.installation.id, &f.root, ReviewAgain)
        .unwrap_err();
    assert_eq!(err.code(), "plugin/linked-not-updatable");
    assert!(err.to_string().contains("source folder"));
    // Uninstalling a link never touches the folder.
    env.manager.uninstall(&d.installation.id, false).unwrap();
    assert!(f.root.join("plugin.json").exists());

    let g = plugin("escape", "0.1.0", "E");
    let outside = g.dir.path().join("outside.txt");
    fs::write(&outside, "x").unwrap();
    g.symlink(&outside, "leak.txt");
    // A link out of the root is reported, never a refusal: the valid
    // skill of the same package is linked and loads.
    let linked = env.manager.link(&g.root, false).unwrap().detail;
    let escaping: Vec<&str> = linked
        .inspection
        .diagnostics
        .iter()
        .filter(|d| d.code() == "plugin/escaping-symlink")
        .map(|d| d.diagnostic.message.as_str())
        .collect();
    assert_eq!(escaping.len(), 1);
    assert!(escaping[0].contains("leak.txt"), "{escaping:?}");
    assert_eq!(linked.inspection.valid_skills().count(), 1);
}

#[test]
fn bundled_plugins_are_listed_enabled_and_immutable() {
    let env = Env::new();
    let listing = env.manager.list();
    assert!(listing.diagnostics.is_empty(), "{:?}", listing.diagnostics);
    let bundled: Vec<_> = listing
        .plugins
        .iter()
        .filter(|p| p.installation.source_type == SourceType::Builtin)
        .collect();
    assert!(!bundled.is_empty());
    let b = &bundled[0];
    assert!(b.installation.enabled);
    assert_eq!(
        b.installation.id,
        InstallationId::builtin(&b.installation.name)
    );
    let caps = serde_json::to_value(b.capabilities).unwrap();
    assert_eq!(
        caps,
        json!({"editable": false, "packable": false, "updatable": false, "can_disable": false, "can_uninstall": false})
    );
    let id = b.installation.id.clone();
    for err in [
        env.manager.set_enabled(&id, false).unwrap_err(),
        env.manager.set_enabled(&id, true).unwrap_err(),
        env.manager.uninstall(&id, false).unwrap_err(),
        env.manager
            .update(&id, env.tmp.path(), ReviewAgain)
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), "plugin/builtin-immutable");
    }
    let shown = env.manager.show(&id).unwrap();
    assert!(shown.inspection.valid);
    // Bundled roots feed the bundled-plugin layer.
    let (roots, _) = env.manager.enabled_plugin_roots();
    assert!(
        roots
            .iter()
            .any(|r| r.bundled && r.installation == id.to_string())
    );
    // Never written to the registry.
    assert!(!env.paths().registry_file().exists());

    // The bundled tree can be neither installed, linked, packed, nor created in.
    let root = b.installation.root.clone();
    for err in [
        env.manager.install(&root, false).unwrap_err(),
        env.manager.link(&root, false).unwrap_err(),
        env.manager.pack(&root, None).unwrap_err(),
        env.manager
            .create(
                &root.join("new"),
                &CreateOptions {
                    name: "new".into(),
                    ..CreateOptions::default()
                },
            )
            .unwrap_err(),
    ] {
        assert_eq!(err.code(), "plugin/inside-bundled-tree");
    }
    let f = plugin("p", "1.0.0", "P");
    let err = env
        .manager
        .pack(&f.root, Some(env.paths().bundled_dir().join("p.evoplugin")))
        .unwrap_err();
    assert_eq!(err.code(), "plugin/pack-output-forbidden");
}

#[test]
fn create_scaffolds_a_valid_plugin_with_a_starter_skill() {
    let env = Env::new();
    let dest = env.tmp.path().join("my.plugin");
    let i = env
        .manager
        .create(
            &dest,
            &CreateOptions {
                name: "my.plugin".into(),
                description: Some("Mine".into()),
                version: Some("0.1.0".into()),
                skill: None,
            },
        )
        .unwrap();
    assert!(i.valid);
    assert_eq!(
        i.valid_skills().map(|s| s.dir.as_str()).collect::<Vec<_>>(),
        ["my-plugin"]
    );
    let m = i.manifest.unwrap();
    assert_eq!(m.version.as_deref(), Some("0.1.0"));
    let again = env.manager.create(
        &dest,
        &CreateOptions {
            name: "my.plugin".into(),
            ..CreateOptions::default()
        },
    );
    assert_eq!(
        again.unwrap_err().code(),
        "plugin/create-destination-exists"
    );
    let bad = env.manager.create(
        &env.tmp.path().join("bad"),
        &CreateOptions {
            name: "Bad".into(),
            ..CreateOptions::default()
        },
    );
    assert_eq!(bad.unwrap_err().code(), "plugin/create-name-invalid");
    assert!(!env.tmp.path().join("bad").exists());
}

#[cfg(unix)]
#[test]
fn credentials_are_masked_private_and_validated() {
    use std::os::unix::fs::PermissionsExt;
    let env = Env::new();
    let f = Fixture::empty();
    f.manifest(json!({
        "$schema": PLUGIN_SCHEMA_1_0_0,
        "name": "svc",
        "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
            {"key": "endpoint", "label": "Service URL", "type": "url", "env": "SERVICE_URL", "required": true},
            {"key": "token", "label": "API token", "type": "secret", "env": "SERVICE_API_TOKEN", "required": true}
        ]}}
    }));
    let id = env
        .manager
        .install(&f.root, false)
        .unwrap()
        .detail
        .installation
        .id;
    let state = env.manager.credentials(&id).unwrap();
    assert!(state.supported && !state.configured);

    let set = |pairs: &[(&str, &str)]| {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), CredentialChange::SetText((*v).to_owned())))
            .collect::<BTreeMap<_, _>>()
    };
    let err = env
        .manager
        .change_credentials(&id, &set(&[("endpoint", "not a url")]))
        .unwrap_err();
    assert_eq!(err.code(), "plugin/credential-invalid");
    let state = env
        .manager
        .change_credentials(
            &id,
            &set(&[
                ("endpoint", "https://svc.example"),
                ("token", "tok-SECRET-1"),
            ]),
        )
        .unwrap();
    assert!(state.configured);
    let file = env.paths().credentials_file(&id);
    assert_eq!(
        fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );
    for shown in [
        serde_json::to_string(&state).unwrap(),
        serde_json::to_string(&env.manager.show(&id).unwrap()).unwrap(),
        serde_json::to_string(&env.manager.list()).unwrap(),
    ] {
        assert!(!shown.contains("tok-SECRET-1"));
        assert!(shown.contains("********"));
    }
    assert!(fs::read_to_string(&file).unwrap().contains("tok-SECRET-1"));
    let cleared = env
        .manager
        .change_credentials(
            &id,
            &BTreeMap::from([("token".to_owned(), CredentialChange::Clear)]),
        )
        .unwrap();
    assert!(!cleared.configured);
    let unknown = env
        .manager
        .change_credentials(&id, &set(&[("nope", "x")]))
        .unwrap_err();
    assert_eq!(unknown.code(), "plugin/credential-unknown");
}

#[test]
fn malformed_registry_blocks_mutations_and_is_kept() {
    let env = Env::new();
    fs::create_dir_all(env.paths().home()).unwrap();
    fs::write(env.paths().registry_file(), "{oops").unwrap();
    let listing = env.manager.list();
    assert_eq!(listing.diagnostics[0].code, "plugin/registry-malformed");
    let f = plugin("demo", "1.0.0", "D");
    let err = env.manager.install(&f.root, false).unwrap_err();
    assert_eq!(err.code(), "plugin/registry-malformed");
    assert!(err.to_string().contains("repair"));
    assert_eq!(
        fs::read_to_string(env.paths().registry_file()).unwrap(),
        "{oops"
    );
    assert!(env.installed_entries().is_empty());
}

#[test]
fn leftovers_of_a_killed_process_are_recovered() {
    let env = Env::new();
    let f = plugin("demo", "1.0.0", "D");
    let d = env.manager.install(&f.root, false).unwrap().detail;
    let id = d.installation.id.clone();
    let home = env.paths().installation_dir(&id);

    // A killed install: an unregistered tree and an abandoned staging folder.
    let orphan = env
        .paths()
        .installed_dir()
        .join("ffffffffffffffffffffffffffffffff");
    fs::create_dir_all(orphan.join("1.0.0")).unwrap();
    fs::create_dir_all(env.paths().staging_dir().join("install-dead/package")).unwrap();
    // A killed same-version update: the old tree is in the backup and a
    // half-new tree is in place, but the registry was not committed.
    fs::rename(&d.installation.root, home.join(".update-backup-x")).unwrap();
    fs::create_dir_all(&d.installation.root).unwrap();
    fs::write(d.installation.root.join("plugin.json"), "{}").unwrap();
    // A killed different-version update: an unnamed version folder.
    fs::create_dir_all(home.join("2.0.0")).unwrap();

    // The next mutation recovers before it runs.
    let g = plugin("other", "1.0.0", "O");
    env.manager.install(&g.root, false).unwrap();
    assert_eq!(names(&home), ["1.0.0"]);
    assert!(!orphan.exists());
    assert!(names(&env.paths().staging_dir()).is_empty());
    let again = env.manager.show(&id).unwrap();
    assert!(again.inspection.valid);
    assert_eq!(
        again.inspection.content_sha256,
        d.installation.content_sha256
    );
}

#[test]
fn concurrent_installs_both_land() {
    let env = Env::new();
    let fixtures: Vec<Fixture> = (0..4)
        .map(|i| plugin(&format!("p{i}"), "1.0.0", "P"))
        .collect();
    std::thread::scope(|s| {
        for f in &fixtures {
            let m = env.manager.clone();
            s.spawn(move || m.install(&f.root, false).unwrap());
        }
    });
    let reg = env.registry_json();
    assert_eq!(reg["installations"].as_array().unwrap().len(), 4);
    assert_eq!(env.installed_entries().len(), 4);
}

#[test]
fn invalid_credentials_declaration_is_reported_not_fatal() {
    let f = Fixture::empty();
    f.manifest(json!({
        "$schema": PLUGIN_SCHEMA_1_0_0,
        "name": "svc",
        "extensions": {"org.evoelsewhere.evoflux.credentials": {"fields": [
            {"key": "u", "label": "U", "type": "url", "env": "U", "default": "not-a-url"}
        ]}}
    }));
    let i = f.inspect();
    assert!(i.valid);
    assert_eq!(
        common::codes_in(&i, "manifest"),
        ["plugin/credentials-declaration-invalid"]
    );
    assert!(
        i.diagnostics[0]
            .diagnostic
            .message
            .contains("absolute HTTP(S) URL")
    );
}

#[test]
fn kept_data_is_recorded_with_the_uninstall_and_reattached_by_a_link() {
    let env = Env::new();
    let f = plugin("keeper", "1.0.0", "K");
    let first = env.manager.install(&f.root, false).unwrap();
    assert!(!first.reattached_data);
    let id = first.detail.installation.id;
    // No kept data: the registry has no `kept_data` key at all.
    assert!(env.registry_json().get("kept_data").is_none());
    env.manager.uninstall(&id, false).unwrap();
    let reg = env.registry_json();
    assert_eq!(reg["installations"], json!([]));
    assert_eq!(reg["kept_data"][0]["id"], id.to_string());
    assert_eq!(reg["kept_data"][0]["name"], "keeper");

    // A link of the same plugin reattaches it just as an install would.
    let linked = env.manager.link(&f.root, false).unwrap();
    assert!(linked.reattached_data);
    assert_eq!(linked.detail.installation.id, id);
    assert!(env.registry_json().get("kept_data").is_none());

    // A kept record whose folder is gone is dropped, not reattached.
    env.manager.uninstall(&id, false).unwrap();
    fs::remove_dir_all(env.paths().plugin_data_dir(&id)).unwrap();
    let fresh = env.manager.install(&f.root, false).unwrap();
    assert!(!fresh.reattached_data);
    assert_ne!(fresh.detail.installation.id, id);
    assert!(env.manager.kept_data().kept.is_empty());
}
