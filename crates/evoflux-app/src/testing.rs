//! An application in a temp folder, as the tests above the engine start
//! from: the engine's, the server's (its unit tests too), the CLI's and
//! this crate's own. One layout — a HOME, an admin dir and a git
//! repository as the working directory, side by side in one folder — and
//! one way to resolve its directories, so the suites cannot drift apart
//! the way their copies did. The CLI's tests run the binary in the same
//! layout with [`env`] as its environment.
//!
//! Behind the `testing` feature, which only dev-dependencies turn on: no
//! shipped binary compiles it.

// Test support: a setup that cannot be made is the test's failure, with
// the panic saying where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use evoflux_core::dirs::Dirs;

use crate::AppContext;

/// The application's HOME below `tmp`.
pub fn home(tmp: &Path) -> PathBuf {
    tmp.join("home")
}

/// The application's admin dir below `tmp` (`EVOFLUX_ADMIN_DIR`).
pub fn admin(tmp: &Path) -> PathBuf {
    tmp.join("admin")
}

/// The git repository below `tmp` the application works in.
pub fn repo(tmp: &Path) -> PathBuf {
    tmp.join("repo")
}

/// The whole environment of an application in `tmp`: its HOME and its
/// admin dir, nothing of the test process's.
pub fn env(tmp: &Path) -> [(&'static str, PathBuf); 2] {
    [("HOME", home(tmp)), ("EVOFLUX_ADMIN_DIR", admin(tmp))]
}

/// The directories of an application in `tmp`, resolved from [`env`] as
/// the binary resolves them from its environment.
pub fn dirs(tmp: &Path) -> Dirs {
    let env = env(tmp);
    Dirs::resolve(|name| {
        env.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| OsString::from(value))
    })
    .unwrap()
}

/// An app context in `tmp`: its own HOME and admin dir, and a git
/// repository (`repo`) as the working directory.
pub fn app(tmp: &Path) -> AppContext {
    let home = home(tmp);
    std::fs::create_dir_all(&home).unwrap();
    let cwd = repo(tmp);
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    AppContext {
        dirs: dirs(tmp),
        home: Some(home),
        cwd,
        trusted_checkouts: Vec::new(),
        remote_agents: None,
        database_url: None,
        artifacts_url: None,
    }
}

/// A temp folder and an [`app`] in it, with the TLS crypto provider
/// installed for the HTTP clients and servers the test starts.
pub fn setup() -> (tempfile::TempDir, AppContext) {
    evoflux_core::tls::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    (tmp, app)
}

/// Writes `yaml` as the script of the scripted model (`script.yaml` in
/// `tmp`) and returns the model's name.
pub fn script(tmp: &Path, yaml: &str) -> String {
    let path = tmp.join("script.yaml");
    std::fs::write(&path, yaml).unwrap();
    format!("scripted:{}", path.display())
}
