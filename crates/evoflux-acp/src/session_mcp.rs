//! The MCP servers an editor passes in `session/new` and `session/load`
//! (`mcpServers`), as evoflux's server definitions for that one session.
//!
//! ACP requires agents to run the stdio servers a client passes (Zed
//! passes its context servers this way), so they are not a hint: each one
//! becomes a session server of `evoflux-mcp`
//! ([`evoflux_mcp::session_stdio`], [`evoflux_mcp::session_http`]),
//! started, named, bounded and stopped exactly like a configured server.
//! An entry that cannot be run is refused with an error naming its field
//! before anything starts, so the editor shows the user what to fix; a
//! legacy SSE entry is kept as a skipped server and named in a notice,
//! because the rest of the session works without it.

use std::collections::{BTreeMap, BTreeSet};

use agent_client_protocol::v1::schema::{HttpHeader, McpServer};
use evoflux_mcp::ServerDefinition;

/// Why an entry of `mcpServers` cannot be run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub(crate) struct InvalidServer {
    /// The field, as `mcpServers[<i>].<name>`.
    pub(crate) field: String,
    pub(crate) problem: String,
}

impl InvalidServer {
    pub(crate) const CODE: &'static str = "acp/mcp-server-invalid";
}

/// The client's servers as session servers, and the notices to show: the
/// entries evoflux lists but does not run.
#[derive(Debug, Default)]
pub(crate) struct ClientServers {
    pub(crate) definitions: Vec<ServerDefinition>,
    pub(crate) notices: Vec<String>,
}

/// Reads the client's `mcpServers`. Refused: an empty or repeated name, or
/// one with a `/` (a plugin server's reference), a stdio entry without a
/// command, an HTTP entry whose URL is not an
/// absolute `http(s)` URL, a header or variable without a name.
pub(crate) fn client_servers(servers: &[McpServer]) -> Result<ClientServers, InvalidServer> {
    let mut out = ClientServers::default();
    let mut names = BTreeSet::new();
    for (i, server) in servers.iter().enumerate() {
        let invalid = |name: &str, problem: String| InvalidServer {
            field: format!("mcpServers[{i}].{name}"),
            problem,
        };
        let mut named = |name: &str| {
            if name.trim().is_empty() {
                return Err(invalid("name", "is empty; give the server a name".into()));
            }
            if name.contains('/') {
                return Err(invalid(
                    "name",
                    format!(
                        "`{name}` has a `/`, which evoflux reads as `<plugin>/<server>`; \
                         rename the server"
                    ),
                ));
            }
            if !names.insert(name.to_owned()) {
                return Err(invalid(
                    "name",
                    format!("`{name}` is given to two servers; names must be unique"),
                ));
            }
            Ok(())
        };
        let definition = match server {
            McpServer::Stdio(s) => {
                named(&s.name)?;
                if s.command.as_os_str().is_empty() {
                    return Err(invalid(
                        "command",
                        format!(
                            "server `{}` has no command; give the program to run",
                            s.name
                        ),
                    ));
                }
                let mut env = BTreeMap::new();
                for (j, var) in s.env.iter().enumerate() {
                    if var.name.is_empty() || var.name.contains('=') {
                        return Err(invalid(
                            &format!("env[{j}].name"),
                            format!("`{}` is not a variable name", var.name),
                        ));
                    }
                    env.insert(var.name.clone(), var.value.clone());
                }
                evoflux_mcp::session_stdio(&s.name, s.command.clone(), s.args.clone(), env)
            }
            McpServer::Http(s) => {
                named(&s.name)?;
                check_url(&s.url).map_err(|problem| invalid("url", problem))?;
                let headers = headers(&s.headers)
                    .map_err(|(j, problem)| invalid(&format!("headers[{j}].name"), problem))?;
                evoflux_mcp::session_http(&s.name, s.url.clone(), headers)
            }
            McpServer::Sse(s) => {
                named(&s.name)?;
                out.notices.push(format!(
                    "the editor's MCP server `{}` uses SSE, which evoflux does not run \
                     (mcpCapabilities.sse is false); give it as a Streamable HTTP server [{}]",
                    s.name,
                    evoflux_mcp::codes::TRANSPORT_UNSUPPORTED
                ));
                evoflux_mcp::session_sse(&s.name)
            }
            _ => {
                return Err(invalid(
                    "type",
                    "is a transport evoflux does not know; pass a stdio or an http server".into(),
                ));
            }
        };
        out.definitions.push(definition);
    }
    Ok(out)
}

fn check_url(url: &str) -> Result<(), String> {
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => Ok(()),
        Ok(u) => Err(format!(
            "`{url}` is a {} URL; give an http:// or https:// URL",
            u.scheme()
        )),
        Err(e) => Err(format!(
            "`{url}` is not a URL ({e}); give an http:// or https:// URL"
        )),
    }
}

fn headers(headers: &[HttpHeader]) -> Result<BTreeMap<String, String>, (usize, String)> {
    let mut out = BTreeMap::new();
    for (j, h) in headers.iter().enumerate() {
        if h.name.trim().is_empty() {
            return Err((j, "is empty; give the header a name".into()));
        }
        out.insert(h.name.clone(), h.value.clone());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::{
        EnvVariable, McpServerHttp, McpServerSse, McpServerStdio,
    };

    #[test]
    fn stdio_and_http_servers_become_session_servers() {
        let servers = vec![
            McpServer::Stdio(
                McpServerStdio::new("local", "/usr/bin/srv")
                    .args(vec!["--x".into()])
                    .env(vec![EnvVariable::new("TOKEN", "t")]),
            ),
            McpServer::Http(
                McpServerHttp::new("remote", "https://example.com/mcp")
                    .headers(vec![HttpHeader::new("Authorization", "Bearer t")]),
            ),
        ];
        let got = client_servers(&servers).unwrap();
        assert!(got.notices.is_empty());
        assert_eq!(got.definitions.len(), 2);
        assert_eq!(got.definitions[0].name, "local");
        assert_eq!(got.definitions[0].owner, evoflux_mcp::session_owner());
        match &got.definitions[0].launch {
            evoflux_mcp::Launch::Stdio(l) => {
                assert_eq!(l.program, std::path::PathBuf::from("/usr/bin/srv"));
                assert_eq!(l.args, ["--x"]);
                assert_eq!(l.env["TOKEN"], "t");
            }
            other => panic!("{other:?}"),
        }
        match &got.definitions[1].launch {
            evoflux_mcp::Launch::StreamableHttp(l) => {
                assert_eq!(l.url, "https://example.com/mcp");
                assert_eq!(l.headers["Authorization"], "Bearer t");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_entry_is_refused_naming_its_field() {
        let field = |servers: Vec<McpServer>| client_servers(&servers).unwrap_err().field;
        assert_eq!(
            field(vec![McpServer::Stdio(McpServerStdio::new("a", ""))]),
            "mcpServers[0].command"
        );
        assert_eq!(
            field(vec![McpServer::Stdio(McpServerStdio::new(" ", "srv"))]),
            "mcpServers[0].name"
        );
        assert_eq!(
            field(vec![
                McpServer::Stdio(McpServerStdio::new("a", "srv")),
                McpServer::Http(McpServerHttp::new("a", "https://x"))
            ]),
            "mcpServers[1].name"
        );
        for url in ["not a url", "ftp://x/y", "/relative"] {
            assert_eq!(
                field(vec![McpServer::Http(McpServerHttp::new("h", url))]),
                "mcpServers[0].url",
                "{url}"
            );
        }
        assert_eq!(
            field(vec![McpServer::Stdio(McpServerStdio::new("a/b", "srv"))]),
            "mcpServers[0].name"
        );
        assert_eq!(
            field(vec![McpServer::Stdio(
                McpServerStdio::new("a", "srv").env(vec![EnvVariable::new("", "v")])
            )]),
            "mcpServers[0].env[0].name"
        );
    }

    #[test]
    fn an_sse_server_is_listed_skipped_and_named_in_a_notice() {
        let got =
            client_servers(&[McpServer::Sse(McpServerSse::new("old", "https://x/sse"))]).unwrap();
        assert_eq!(got.definitions[0].launch, evoflux_mcp::Launch::Unsupported);
        assert_eq!(got.notices.len(), 1);
        assert!(got.notices[0].contains(evoflux_mcp::codes::TRANSPORT_UNSUPPORTED));
    }
}
