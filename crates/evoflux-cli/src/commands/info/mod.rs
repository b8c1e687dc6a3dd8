//! `evoflux info`: the projection of the compiled graph, as JSON with
//! `--json` (the graph's typed model) or as text ([`render`]).

mod render;

use crate::cli::InfoArgs;
use crate::output::{Exit, Output};

pub fn run(out: &Output, args: &InfoArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = super::app_context(&dirs)?;
    let graph = app.compile(&args.sources.workspaces)?;
    let projection = app.info(&graph, &args.sources.workspaces, args.mode)?;
    out.result(&projection, || render::render_human(&projection));
    Ok(if graph.has_errors() {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}
