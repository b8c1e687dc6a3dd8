//! `evoflux paths`: where evoflux reads and writes, and why there.

use std::fmt::Write as _;

use evoflux_core::dirs::DirKind;

use crate::output::{Exit, Output};

pub fn run(out: &Output) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    out.result(&dirs, || {
        let mut text = String::new();
        for kind in DirKind::ALL {
            let d = dirs.get(kind);
            let _ = writeln!(text, "{:<7} {}  ({})", kind, d.path.display(), d.source);
        }
        text
    });
    Ok(Exit::Ok)
}
