//! `evoflux info`: the projection of the compiled graph.

use evoflux_graph::info;

use crate::cli::InfoArgs;
use crate::output::{Exit, Output};

pub fn run(out: &Output, args: &InfoArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let graph = super::compile_graph(&dirs, &args.sources)?;
    let projection = info::project(&graph, args.mode);
    out.result(&projection, || info::render_human(&projection));
    Ok(if graph.has_errors() {
        Exit::Invalid
    } else {
        Exit::Ok
    })
}
