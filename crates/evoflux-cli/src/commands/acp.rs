//! `evoflux acp`: evoflux as an Agent Client Protocol agent on stdin and
//! stdout, for editors; thin over `evoflux-acp`.

use std::sync::Arc;

use clap::Args;
use evoflux_harness::Limits;

use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct AcpArgs {
    /// The lead new sessions run (default: Coding mode's default lead).
    #[arg(long, value_name = "NAME")]
    pub lead: Option<String>,
    /// The model new sessions run on, as `provider:model` (default: the
    /// agent's, else config.toml's).
    #[arg(long, value_name = "PROVIDER:MODEL")]
    pub model: Option<String>,
    /// Most model calls one prompt may make.
    #[arg(long, value_name = "N", default_value_t = Limits::default().model_calls_per_turn)]
    pub max_model_calls: u32,
}

pub fn run(out: &Output, args: &AcpArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = Arc::new(super::app_context(&dirs)?);
    let processes = evoflux_harness::ProcessRuntime::new(app.runtime_config());
    let options = evoflux_acp::AgentOptions {
        model: args.model.clone(),
        lead: args.lead.clone(),
        limits: Limits {
            model_calls_per_turn: args.max_model_calls,
            ..Limits::default()
        },
    };
    let rt = crate::frontend::runtime()?;
    rt.block_on(async {
        tokio::select! {
            served = evoflux_acp::serve_stdio(app, processes, options) => match served {
                Ok(()) => Ok(Exit::Ok),
                Err(e) => {
                    out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
                    Ok(Exit::Failure)
                }
            },
            () = crate::frontend::signals::shutdown_signal() => Ok(Exit::Interrupted),
        }
    })
}
