//! An app context in a temp folder, as every server test starts from:
//! the integration tests (`common`) and the crate's own unit tests
//! (`crate::testing`, included from here) share this one copy.

use std::ffi::OsString;
use std::path::Path;

use evoflux_app::AppContext;
use evoflux_core::dirs::Dirs;

/// An app context in `tmp`: its own HOME and admin dir, and a git
/// repository (`repo`) as the working directory.
pub fn app(tmp: &Path) -> AppContext {
    let home = tmp.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let admin = tmp.join("admin");
    let dirs = Dirs::resolve(|name| match name {
        "HOME" => Some(OsString::from(&home)),
        "EVOFLUX_ADMIN_DIR" => Some(OsString::from(&admin)),
        _ => None,
    })
    .unwrap();
    let cwd = tmp.join("repo");
    std::fs::create_dir_all(cwd.join(".git")).unwrap();
    AppContext {
        dirs,
        home: Some(home),
        cwd,
        trusted_checkouts: Vec::new(),
        remote_agents: None,
        database_url: None,
        artifacts_url: None,
    }
}

/// What every test starts from: the TLS crypto provider installed, a temp
/// folder and an [`app`] in it.
pub fn setup() -> (tempfile::TempDir, AppContext) {
    evoflux_core::tls::install_crypto_provider();
    let tmp = tempfile::tempdir().unwrap();
    let app = app(tmp.path());
    (tmp, app)
}
