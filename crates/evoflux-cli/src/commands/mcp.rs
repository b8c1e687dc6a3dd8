//! `evoflux mcp`: the MCP servers evoflux would run (the global
//! `connections/*` of the compiled graph and every enabled plugin's
//! servers), their state and tools, one-off tool calls, and the OAuth
//! login of a server over HTTP (`login`).
//!
//! Each command starts the servers it needs, waits for them to settle,
//! reports, and stops them again: nothing keeps running after it exits.
//! A repository's server that waits for trust is listed apart and never
//! started.

use std::time::Duration;

use anyhow::{Context, bail};
use clap::Subcommand;
use evoflux_app::CompiledGraph;
use evoflux_app::mcp_config::McpServerChange;
use evoflux_app::mcp_servers::{McpRuntime, ServerListing};
use evoflux_core::trust::CHANGED_SINCE_TRUST;
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_graph::compose::CompositionEntry;
use evoflux_mcp::{McpManager, ServerStatus};
use serde::Serialize;
use serde_json::Value;

use crate::cli::SourceArgs;
use crate::commands::{app_context, resolve_dirs};
use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum McpCommand {
    /// List every MCP server with its owner, transport, state, tools and last error.
    List {
        /// Seconds to wait for servers to start before reporting.
        #[arg(long, default_value_t = 30)]
        wait: u64,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Start one server and list its tools. SERVER is a global server name,
    /// or `<plugin>/<server>` for a plugin's server.
    Tools {
        server: String,
        #[arg(long, default_value_t = 30)]
        wait: u64,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Start one server and call one of its tools; exit 1 when the tool reports an error.
    Call {
        server: String,
        tool: String,
        /// The arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Seconds the call may take.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[arg(long, default_value_t = 30)]
        wait: u64,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Add a server to your mcp.json (or, with `--scope project`, to the
    /// repository's `.evoflux/mcp.json`): `--command` for a local server over
    /// stdio, `--url` for one over Streamable HTTP. Write secrets as `${VAR}`
    /// references (in single quotes), which are resolved when the server starts.
    #[command(group(clap::ArgGroup::new("transport").required(true).args(["command", "url"])))]
    Add {
        /// The server's name: lowercase letters, digits and `-`.
        name: String,
        /// The program to start (stdio).
        #[arg(long, conflicts_with = "url")]
        command: Option<String>,
        /// One argument of the program (repeatable, in order).
        #[arg(
            long = "arg",
            value_name = "ARG",
            requires = "command",
            conflicts_with = "url",
            allow_hyphen_values = true
        )]
        args: Vec<String>,
        /// One environment variable of the program, `KEY=VALUE` (repeatable).
        #[arg(
            long = "env",
            value_name = "KEY=VALUE",
            requires = "command",
            conflicts_with = "url",
            value_parser = key_value
        )]
        env: Vec<(String, String)>,
        /// The server's address (Streamable HTTP).
        #[arg(long)]
        url: Option<String>,
        /// One HTTP header, `NAME=VALUE` (repeatable).
        #[arg(
            long = "header",
            value_name = "NAME=VALUE",
            requires = "url",
            conflicts_with = "command",
            value_parser = key_value
        )]
        headers: Vec<(String, String)>,
        /// Which mcp.json: `user` (yours, the default) or `project` (the
        /// repository's `.evoflux/mcp.json`, shared with whoever clones it).
        #[arg(long, value_enum, default_value_t = Scope::User)]
        scope: Scope,
        /// Replace a server of that name in the same file.
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Remove a server from your mcp.json (or the repository's, `--scope project`).
    Remove {
        name: String,
        #[arg(long, value_enum, default_value_t = Scope::User)]
        scope: Scope,
        #[command(flatten)]
        sources: SourceArgs,
    },
    /// Log in to a server over HTTP that asks for an OAuth login: prints the
    /// address to open in a browser, waits for it to come back to a
    /// loopback port, stores the tokens (in the data directory) and starts
    /// the server.
    Login {
        server: String,
        /// Seconds to wait for the login in the browser.
        #[arg(long, default_value_t = 300)]
        timeout: u64,
        #[arg(long, default_value_t = 30)]
        wait: u64,
        #[command(flatten)]
        sources: SourceArgs,
    },
}

/// Which `mcp.json` `add` and `remove` write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// The user's own `<config>/mcp.json`.
    User,
    /// The repository's `.evoflux/mcp.json`.
    Project,
}

/// `KEY=VALUE` of `--env` and `--header`.
fn key_value(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!(
            "`{s}` is not KEY=VALUE: write the name, `=`, then the value (a secret as \
             '${{VAR}}' in single quotes)"
        )),
    }
}

pub fn run(out: &Output, command: &McpCommand) -> anyhow::Result<Exit> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(run_async(out, command))
}

/// Whether an invocation reports the problems of every server's setup:
/// `mcp list` does; `tools` and `call` are about one server and do not
/// repeat warnings about unrelated plugins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Report {
    Every,
    Quiet,
}

/// A repository's server that is not started until the user trusts the
/// repository (again, when it changed since: `changed_since_trust`).
#[derive(Debug, Serialize)]
struct AwaitingServer {
    server: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<std::path::PathBuf>,
    changed_since_trust: bool,
}

fn awaiting_servers(graph: &CompiledGraph) -> Vec<AwaitingServer> {
    graph
        .composition
        .entries
        .iter()
        .filter_map(|e| match e {
            CompositionEntry::AwaitingTrust { source } => {
                let server = source.slot.strip_prefix("connections/")?;
                Some(AwaitingServer {
                    server: server.to_owned(),
                    file: source.file().map(std::path::Path::to_path_buf),
                    changed_since_trust: graph.diagnostics.iter().any(|d| {
                        d.code == CHANGED_SINCE_TRUST
                            && d.locator.source_id.as_deref() == Some(source.source_id.as_str())
                    }),
                })
            }
            CompositionEntry::Shadowed { .. }
            | CompositionEntry::Disabled { .. }
            | CompositionEntry::Layered { .. } => None,
        })
        .collect()
}

/// The error for a server that is not in the runtime.
fn not_found(server: &str, awaiting: &[AwaitingServer]) -> anyhow::Error {
    match awaiting.iter().find(|a| a.server == server) {
        Some(a) => anyhow::anyhow!(
            "the repository's MCP server `{server}` {}is not started until you trust the \
             repository (evoflux trust) [{}]",
            if a.changed_since_trust {
                "changed since you trusted it and "
            } else {
                ""
            },
            if a.changed_since_trust {
                CHANGED_SINCE_TRUST
            } else {
                "trust/withheld"
            }
        ),
        None => anyhow::anyhow!("no MCP server is named `{server}` (see `evoflux mcp list`)"),
    }
}

/// Every manager of this invocation, not started, and the repository
/// servers that wait for trust.
fn load(
    out: &Output,
    sources: &SourceArgs,
    report: Report,
) -> anyhow::Result<Result<(McpRuntime, Vec<AwaitingServer>), Exit>> {
    let dirs = match resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(Err(exit)),
    };
    let app = app_context(&dirs)?;
    let graph = app.compile(&sources.workspaces)?;
    let roots = app.root_options(&sources.workspaces)?.workspaces;
    let (runtime, mut diagnostics) = app.mcp_servers(&graph, roots)?;
    match report {
        Report::Every => {
            // A server that changed since its repository was trusted is
            // why it is missing from the list: say so here too.
            diagnostics.extend(
                graph
                    .diagnostics
                    .iter()
                    .filter(|d| {
                        d.code == CHANGED_SINCE_TRUST
                            && d.locator
                                .slot
                                .as_ref()
                                .is_some_and(|s| s.kind == evoflux_core::SlotKind::Connection)
                    })
                    .cloned(),
            );
            out.diagnostics(&Diagnostics::from(diagnostics));
        }
        Report::Quiet => {}
    }
    Ok(Ok((runtime, awaiting_servers(&graph))))
}

/// `name`, or `<plugin>/<name>` for a plugin's server.
fn display_name(status: &ServerStatus) -> String {
    status.owner.server_ref(&status.name)
}

/// The manager holding `server` (as [`display_name`] writes it).
fn find<'a>(runtime: &'a McpRuntime, server: &str) -> Option<(&'a McpManager, String)> {
    runtime.managers().into_iter().find_map(|m| {
        m.statuses()
            .into_iter()
            .find(|s| display_name(s) == server)
            .map(|s| (m, s.name))
    })
}

async fn run_async(out: &Output, command: &McpCommand) -> anyhow::Result<Exit> {
    match command {
        McpCommand::Login {
            server,
            timeout,
            wait,
            sources,
        } => login(out, server, *timeout, *wait, sources).await,
        McpCommand::Add {
            name,
            command,
            args,
            env,
            url,
            headers,
            scope,
            force,
            sources,
        } => {
            let entry = entry_of(command.as_deref(), args, env, url.as_deref(), headers);
            let change = McpServerChange::Add {
                name: name.clone(),
                entry: entry.clone(),
            };
            edit(out, sources, *scope, change, *force, Some(&entry)).await
        }
        McpCommand::Remove {
            name,
            scope,
            sources,
        } => {
            let change = McpServerChange::Remove { name: name.clone() };
            edit(out, sources, *scope, change, false, None).await
        }
        McpCommand::List { wait, sources } => {
            let (runtime, awaiting) = match load(out, sources, Report::Every)? {
                Ok(r) => r,
                Err(exit) => return Ok(exit),
            };
            runtime.start_all();
            runtime.settle(Duration::from_secs(*wait)).await;
            let rows = runtime.listing();
            runtime.shutdown().await;
            out.result(
                &serde_json::json!({ "servers": rows, "awaiting_trust": awaiting }),
                || render_list(&rows, &awaiting),
            );
            Ok(Exit::Ok)
        }
        McpCommand::Tools {
            server,
            wait,
            sources,
        } => {
            let (runtime, awaiting) = match load(out, sources, Report::Quiet)? {
                Ok(r) => r,
                Err(exit) => return Ok(exit),
            };
            let Some((manager, name)) = find(&runtime, server) else {
                return Err(not_found(server, &awaiting));
            };
            let status = start_one(manager, &name, *wait).await?;
            runtime.shutdown().await;
            let status = status?;
            out.result(
                &serde_json::json!({ "server": server, "tools": status.tools }),
                || {
                    let mut text = String::new();
                    for t in &status.tools {
                        let description = t.description.as_deref().unwrap_or("");
                        text.push_str(&format!("{}\t{}\n", t.name, first_line(description)));
                    }
                    text
                },
            );
            Ok(Exit::Ok)
        }
        McpCommand::Call {
            server,
            tool,
            args,
            timeout,
            wait,
            sources,
        } => {
            let args: Value = serde_json::from_str(args).context("--args is not valid JSON")?;
            if !args.is_object() {
                bail!("--args must be a JSON object");
            }
            let (runtime, awaiting) = match load(out, sources, Report::Quiet)? {
                Ok(r) => r,
                Err(exit) => return Ok(exit),
            };
            let Some((manager, name)) = find(&runtime, server) else {
                return Err(not_found(server, &awaiting));
            };
            let ready = start_one(manager, &name, *wait).await?;
            let result = match ready {
                Ok(_) => Ok(manager
                    .call_server_tool(&name, tool, args, Duration::from_secs(*timeout))
                    .await),
                Err(e) => Err(e),
            };
            runtime.shutdown().await;
            // The call's error with its stable code (`mcp/result-too-large`,
            // `mcp/call-timeout`, ...).
            let result = result?.map_err(|e| anyhow::anyhow!("{e} ({})", e.code()))?;
            out.result(&result, || {
                let mut text = result.to_text();
                if !text.ends_with('\n') {
                    text.push('\n');
                }
                text
            });
            Ok(if result.is_error {
                Exit::Failure
            } else {
                Exit::Ok
            })
        }
    }
}

/// The `mcp.json` entry of `add`'s flags: `command` (stdio) or `url`
/// (Streamable HTTP; clap requires exactly one), values as written.
fn entry_of(
    command: Option<&str>,
    args: &[String],
    env: &[(String, String)],
    url: Option<&str>,
    headers: &[(String, String)],
) -> Value {
    let pairs = |kv: &[(String, String)]| {
        Value::Object(
            kv.iter()
                .map(|(k, v)| (k.clone(), Value::from(v.as_str())))
                .collect(),
        )
    };
    let mut entry = serde_json::Map::new();
    match (command, url) {
        (Some(command), _) => {
            entry.insert("type".into(), "stdio".into());
            entry.insert("command".into(), command.into());
            if !args.is_empty() {
                entry.insert("args".into(), args.iter().map(String::as_str).collect());
            }
            if !env.is_empty() {
                entry.insert("env".into(), pairs(env));
            }
        }
        (None, url) => {
            entry.insert("type".into(), "http".into());
            entry.insert("url".into(), url.unwrap_or_default().into());
            if !headers.is_empty() {
                entry.insert("headers".into(), pairs(headers));
            }
        }
    }
    Value::Object(entry)
}

/// `entry` as `add` prints it: each `env` and `headers` value that holds
/// no `${VAR}` reference masked, since it may be a secret.
fn masked(entry: &Value) -> Value {
    let mut entry = entry.clone();
    for key in ["env", "headers"] {
        if let Some(map) = entry.get_mut(key).and_then(Value::as_object_mut) {
            for v in map.values_mut() {
                if !v.as_str().is_some_and(|s| s.contains("${")) {
                    *v = Value::from(evoflux_plugins::credentials::MASK);
                }
            }
        }
    }
    entry
}

/// A literal value given for an environment variable or header whose name
/// says it holds a secret: a warning to write a `${VAR}` reference, so the
/// secret stays out of the file.
fn literal_secrets(name: &str, entry: &Value, file: &std::path::Path) -> Vec<Diagnostic> {
    const SECRET_WORDS: [&str; 6] = [
        "TOKEN",
        "SECRET",
        "KEY",
        "PASSWORD",
        "AUTHORIZATION",
        "CREDENTIAL",
    ];
    let mut out = Vec::new();
    for key in ["env", "headers"] {
        let Some(map) = entry.get(key).and_then(Value::as_object) else {
            continue;
        };
        for (var, v) in map {
            let upper = var.to_uppercase();
            let literal = !v.as_str().is_some_and(|s| s.contains("${"));
            if literal && SECRET_WORDS.iter().any(|w| upper.contains(w)) {
                out.push(
                    Diagnostic::warning(
                        "mcp/literal-secret",
                        format!(
                            "{key} `{var}` of server `{name}` is written into the file as \
                             given; write it as a reference, e.g. '{var}=${{{env_var}}}', to \
                             keep the secret in your environment",
                            env_var = upper.replace('-', "_")
                        ),
                    )
                    .with_file(file)
                    .with_field(format!("mcpServers.{name}.{key}.{var}")),
                );
            }
        }
    }
    out
}

/// `evoflux mcp add` and `remove`: one change to the chosen `mcp.json`
/// through the MCP config editor (the one the web UI uses), refused with
/// the editor's coded diagnostics. `--force` turns an `add` of a name the
/// same file holds into a replace.
async fn edit(
    out: &Output,
    sources: &SourceArgs,
    scope: Scope,
    change: McpServerChange,
    force: bool,
    entry: Option<&Value>,
) -> anyhow::Result<Exit> {
    let dirs = match resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = app_context(&dirs)?;
    let file = match scope {
        Scope::User => app.user_mcp_file(),
        Scope::Project => {
            let workspaces = app.root_options(&sources.workspaces)?.workspaces;
            let Some(workspace) = workspaces.first() else {
                bail!("no workspace to write the project's mcp.json in");
            };
            app.project_mcp_file(workspace)
        }
    };
    // Every server as it is listed now (none started): a name another
    // file or a plugin holds is refused with where to change it.
    let graph = app.compile(&sources.workspaces)?;
    let roots = app.root_options(&sources.workspaces)?.workspaces;
    let (runtime, _) = app.mcp_servers(&graph, roots)?;
    let listed = runtime.listing();
    runtime.shutdown().await;
    // `--force` is the editor's: a name the same file holds is replaced.
    let result = match &change {
        McpServerChange::Add { name, entry } => app
            .add_mcp_server(&file, &listed, name, entry, force)
            .map(|added| added == evoflux_app::mcp_config::McpAdded::Replaced),
        McpServerChange::Replace { .. } | McpServerChange::Remove { .. } => app
            .change_mcp_server_in(&file, &listed, &change)
            .map(|()| false),
    };
    let replaced = match result {
        Ok(replaced) => replaced,
        Err(e) => {
            out.diagnostics(&e.to_diagnostics(&file));
            return Ok(Exit::Invalid);
        }
    };
    let name = change.name();
    let warnings = entry
        .map(|e| literal_secrets(name, e, &file))
        .unwrap_or_default();
    out.diagnostics(&Diagnostics::from(warnings));
    let action = match (&change, replaced) {
        (McpServerChange::Remove { .. }, _) => Action::Removed,
        (_, true) => Action::Replaced,
        (_, false) => Action::Added,
    };
    let mut report = serde_json::json!({
        "server": name,
        "action": action,
        "scope": scope,
        "file": file,
    });
    if let Some(entry) = entry {
        report["entry"] = masked(entry);
    }
    out.result(&report, || {
        let trust = match scope {
            Scope::Project => {
                " (a repository's servers start once you trust its current content: evoflux trust)"
            }
            Scope::User => "",
        };
        let (done, at) = match action {
            Action::Added => ("Added", "to"),
            Action::Replaced => ("Replaced", "in"),
            Action::Removed => ("Removed", "from"),
        };
        format!(
            "{done} MCP server `{name}` {at} {}{trust}\n",
            file.display()
        )
    });
    Ok(Exit::Ok)
}

/// What `add` or `remove` did.
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "lowercase")]
enum Action {
    Added,
    Replaced,
    Removed,
}

/// An OAuth error as the command reports it: its message and code.
fn oauth_failure(e: evoflux_app::mcp_servers::OAuthError) -> anyhow::Error {
    anyhow::anyhow!("{e} ({})", e.code())
}

/// `evoflux mcp login`: the login through a loopback redirect, then the
/// server started with the stored tokens.
async fn login(
    out: &Output,
    server: &str,
    timeout: u64,
    wait: u64,
    sources: &SourceArgs,
) -> anyhow::Result<Exit> {
    use evoflux_app::mcp_servers::{OAuthError, OAuthLogins};
    let (runtime, awaiting) = match load(out, sources, Report::Quiet)? {
        Ok(r) => r,
        Err(exit) => return Ok(exit),
    };
    let target = match runtime.login_target(server) {
        Ok(t) => t,
        Err(OAuthError::UnknownServer(_)) => return Err(not_found(server, &awaiting)),
        Err(e) => return Err(oauth_failure(e)),
    };
    let redirect = evoflux_mcp::LoopbackRedirect::bind()
        .await
        .map_err(oauth_failure)?;
    let logins = OAuthLogins::new();
    let redirect_uri = redirect.redirect_uri.clone();
    let start = logins
        .begin(target, &redirect_uri)
        .await
        .map_err(oauth_failure)?;
    eprintln!(
        "Open this address in a browser to log in to `{server}` (waiting {timeout} s):\n{}",
        start.authorization_url
    );
    let callback = redirect
        .wait(Duration::from_secs(timeout))
        .await
        .map_err(oauth_failure)?;
    logins.complete(&callback).await.map_err(oauth_failure)?;
    let Some((manager, name)) = find(&runtime, server) else {
        return Err(not_found(server, &awaiting));
    };
    let status = start_one(manager, &name, wait).await?;
    runtime.shutdown().await;
    let status = status?;
    out.result(
        &serde_json::json!({
            "server": server,
            "state": status.state,
            "tools": status.tools.len(),
        }),
        || {
            format!(
                "Logged in to {server}: {} with {} tools.\n",
                status.state.as_str(),
                status.tools.len()
            )
        },
    );
    Ok(Exit::Ok)
}

/// Starts one server and waits for it; `Err` inside when it is not ready.
async fn start_one(
    manager: &McpManager,
    name: &str,
    wait: u64,
) -> anyhow::Result<anyhow::Result<ServerStatus>> {
    manager.start(name)?;
    manager.wait_settled(Duration::from_secs(wait)).await;
    let status = manager.status(name)?;
    if status.state != evoflux_mcp::ServerState::Ready {
        let why = status
            .last_error
            .as_ref()
            .map(|e| format!(": {} ({})", e.message, e.code))
            .unwrap_or_default();
        return Ok(Err(anyhow::anyhow!(
            "MCP server `{name}` is {}{why}",
            status.state.as_str()
        )));
    }
    Ok(Ok(status))
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

fn render_list(rows: &[ServerListing], awaiting: &[AwaitingServer]) -> String {
    let mut text = String::new();
    if rows.is_empty() && awaiting.is_empty() {
        text.push_str("no MCP servers configured\n");
    }
    if !rows.is_empty() {
        text.push_str("SERVER\tOWNER\tTRANSPORT\tSTATE\tTOOLS\tLAST ERROR\n");
    }
    for r in rows {
        let s = &r.status;
        let error = s
            .last_error
            .as_ref()
            .map(|e| format!("{}: {}", e.code, first_line(&e.message)))
            .unwrap_or_default();
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            r.server,
            s.owner.label(),
            s.transport.map(|t| t.as_str()).unwrap_or("unknown"),
            s.state.as_str(),
            s.tools.len(),
            error
        ));
    }
    if !awaiting.is_empty() {
        text.push_str(
            "awaiting trust (not started until you trust the repository: evoflux trust):\n",
        );
    }
    for a in awaiting {
        let file = a
            .file
            .as_deref()
            .map(|f| format!("\t{}", f.display()))
            .unwrap_or_default();
        let changed = if a.changed_since_trust {
            "\tchanged since you trusted it"
        } else {
            ""
        };
        text.push_str(&format!("  {}{file}{changed}\n", a.server));
    }
    text
}
