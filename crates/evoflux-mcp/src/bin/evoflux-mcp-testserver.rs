//! The MCP test server of `evoflux-mcp` (see `evoflux_mcp::testserver`).
//!
//! ```text
//! evoflux-mcp-testserver [stdio|http] [--page-size N] [--filler-tools N] [--port N]
//! ```
//! `stdio` (the default) serves one client on stdin/stdout until stdin
//! closes. `http` serves Streamable HTTP on 127.0.0.1, prints the endpoint
//! URL on the first line of stdout, and runs until killed or stdin closes.

use std::io::Write;
use std::process::ExitCode;

use evoflux_mcp::testserver::{TestServerOptions, serve_http, serve_stdio};
use tokio::io::AsyncReadExt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Stdio,
    Http,
}

fn parse(args: &[String]) -> Result<(Mode, TestServerOptions, u16), String> {
    let mut mode = Mode::Stdio;
    let mut options = TestServerOptions::default();
    let mut port = 0u16;
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut number = |flag: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{flag} needs a number"))
        };
        match arg.as_str() {
            "stdio" => mode = Mode::Stdio,
            "http" => mode = Mode::Http,
            "--page-size" => options.page_size = number("--page-size")?,
            "--filler-tools" => options.filler_tools = number("--filler-tools")?,
            "--port" => {
                port = u16::try_from(number("--port")?).map_err(|e| e.to_string())?;
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok((mode, options, port))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (mode, options, port) = match parse(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("evoflux-mcp-testserver: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match mode {
        Mode::Stdio => serve_stdio(options).await,
        Mode::Http => match serve_http(options, port).await {
            Ok(server) => {
                println!("{}", server.url());
                let _ = std::io::stdout().flush();
                // Run until stdin closes (the parent went away) or a signal.
                let mut sink = Vec::new();
                let _ = tokio::io::stdin().read_to_end(&mut sink).await;
                drop(server);
                Ok(())
            }
            Err(e) => Err(e),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("evoflux-mcp-testserver: {e}");
            ExitCode::FAILURE
        }
    }
}
