//! What the application's tests share: an app context in a temp folder
//! and a scripted model.

use std::ffi::OsString;
use std::path::Path;

use evoflux_app::AppContext;
use evoflux_core::dirs::Dirs;

/// An app context in `tmp`: its own HOME and admin dir, and `repo` as the
/// working directory.
pub fn app(tmp: &Path) -> AppContext {
    let home = tmp.join("home");
    let admin = tmp.join("admin");
    std::fs::create_dir_all(&home).unwrap();
    let cwd = tmp.join("repo");
    std::fs::create_dir_all(&cwd).unwrap();
    let dirs = Dirs::resolve(|name| match name {
        "HOME" => Some(OsString::from(&home)),
        "EVOFLUX_ADMIN_DIR" => Some(OsString::from(&admin)),
        _ => None,
    })
    .unwrap();
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

/// Writes `yaml` as the script of the scripted model (`script.yaml` in
/// `tmp`) and returns the model's name.
pub fn script(tmp: &Path, yaml: &str) -> String {
    let path = tmp.join("script.yaml");
    std::fs::write(&path, yaml).unwrap();
    format!("scripted:{}", path.display())
}
