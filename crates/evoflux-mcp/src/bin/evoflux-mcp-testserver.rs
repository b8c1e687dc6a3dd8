//! The MCP test server of `evoflux-mcp` (see `evoflux_mcp::testserver`).
//!
//! ```text
//! evoflux-mcp-testserver [stdio|http|oauth] [--page-size N] [--filler-tools N] [--port N]
//!                        [--start-delay-ms N] [--ignore-eof]
//! ```
//! `stdio` (the default) serves one client on stdin/stdout until stdin
//! closes. `http` serves Streamable HTTP on 127.0.0.1, prints the endpoint
//! URL on the first line of stdout, and runs until killed or stdin closes.
//! `oauth` is `http` behind a bearer check, with a fake authorization
//! server beside it (`evoflux_mcp::testserver_oauth`; only the default
//! options), printed the same way.
//!
//! `--start-delay-ms N` sleeps N milliseconds before serving anything (in
//! `http` mode, before the port is bound and the URL printed): a server
//! that is slow to start, so tests can exercise start-up timeouts with the
//! real server rather than a stand-in like `sleep`.
//!
//! `--ignore-eof` (stdio) keeps the process running after stdin closes, as
//! servers that ignore end-of-input do, so tests can check that shutdown
//! still ends it quickly (`SIGTERM` after the end-of-input grace).

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use evoflux_mcp::testserver::{
    TestServerOptions, serve_http, serve_stdio, serve_stdio_ignoring_eof,
};
use tokio::io::AsyncReadExt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Stdio,
    Http,
    OAuth,
}

/// What the command line asks for.
#[derive(Debug, Clone)]
struct Args {
    mode: Mode,
    options: TestServerOptions,
    port: u16,
    /// How long to wait before serving (`--start-delay-ms`).
    start_delay: Duration,
    /// Keep running after stdin closes (`--ignore-eof`).
    ignore_eof: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let mut mode = Mode::Stdio;
    let mut options = TestServerOptions::default();
    let mut port = 0u16;
    let mut start_delay = Duration::ZERO;
    let mut ignore_eof = false;
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
            "oauth" => mode = Mode::OAuth,
            "--page-size" => options.page_size = number("--page-size")?,
            "--filler-tools" => options.filler_tools = number("--filler-tools")?,
            "--port" => {
                port = u16::try_from(number("--port")?).map_err(|e| e.to_string())?;
            }
            "--start-delay-ms" => {
                let ms = u64::try_from(number("--start-delay-ms")?).map_err(|e| e.to_string())?;
                start_delay = Duration::from_millis(ms);
            }
            "--ignore-eof" => ignore_eof = true,
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(Args {
        mode,
        options,
        port,
        start_delay,
        ignore_eof,
    })
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Args {
        mode,
        options,
        port,
        start_delay,
        ignore_eof,
    } = match parse(&args) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("evoflux-mcp-testserver: {e}");
            return ExitCode::from(2);
        }
    };
    tokio::time::sleep(start_delay).await;
    let result = match mode {
        Mode::Stdio if ignore_eof => serve_stdio_ignoring_eof(options).await,
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
        Mode::OAuth => match evoflux_mcp::testserver_oauth::OAuthFixture::start().await {
            Ok(fixture) => {
                println!("{}", fixture.mcp_url);
                let _ = std::io::stdout().flush();
                let mut sink = Vec::new();
                let _ = tokio::io::stdin().read_to_end(&mut sink).await;
                drop(fixture);
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
