//! Connections: MCP servers declared in an `mcp.json` of a user or project
//! root. Each entry is a `connections/<name>` candidate; entries are checked
//! here and started by the MCP client manager.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use evoflux_core::{Diagnostic, Diagnostics};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A server declaration, one closed shape per transport.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ConnectionDefinition {
    Stdio {
        command: String,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// Seconds this server may take to start (spawn, handshake, first
        /// tool list) before it is reported failed. Some servers (`npx`
        /// fetching a package, a JVM) need longer than the manager's
        /// default, and one slow server should not stretch every other
        /// server's limit; `None` keeps the default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        startup_timeout_secs: Option<u64>,
    },
    StreamableHttp {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
        /// As for `stdio`: a remote server behind a cold start may need
        /// longer than the default.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        startup_timeout_secs: Option<u64>,
    },
    /// Legacy transport: valid, reported, never started.
    Sse {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

pub use evoflux_core::placeholder::is_env_name;

/// The longest `startup_timeout_secs` an entry may ask for. A caller that
/// waits for servers to settle waits as long as the slowest may take, so
/// an unbounded value would let one entry stall a session's start; ten
/// minutes covers a package download on a slow link.
pub const MAX_STARTUP_TIMEOUT_SECS: u64 = 600;

/// Where a stdio server's `command` points, its `mcp.json` being in
/// `base_dir`: a bare name is looked up on `PATH` and stays bare; anything
/// with a separator is a path, relative to `base_dir`. The one rule, for
/// the launch and for what trusting a repository's server covers.
pub fn stdio_program(command: &str, base_dir: Option<&Path>) -> PathBuf {
    if command.contains('/') {
        resolve_path(command, base_dir)
    } else {
        PathBuf::from(command)
    }
}

/// A path of a server's entry (`cwd`, a command path) against the folder
/// of its `mcp.json`: an absolute path stays as it is.
pub fn resolve_path(path: &str, base_dir: Option<&Path>) -> PathBuf {
    let p = Path::new(path);
    match base_dir {
        Some(base) if p.is_relative() => base.join(p),
        _ => p.to_path_buf(),
    }
}

/// Reads the entry names of an `mcp.json` (the file is read at discovery
/// because one file holds several slots; entries are parsed only when they
/// win). Returns the raw entries in file order.
pub fn entries(path: &Path, text: &str) -> Result<Vec<(String, Value)>, Diagnostic> {
    let invalid = |msg: String| Diagnostic::error("discover/mcp-json-invalid", msg).with_file(path);
    evoflux_core::nesting::check_json(text).map_err(|e| e.to_diagnostic(path))?;
    let root: Value = serde_json::from_str(text).map_err(|e| {
        invalid(format!("mcp.json is not valid JSON: {e}"))
            .with_line(u32::try_from(e.line()).unwrap_or(0))
    })?;
    let Value::Object(mut root) = root else {
        return Err(invalid(
            "mcp.json must be an object with `mcpServers`".to_owned(),
        ));
    };
    if let Some(extra) = root.keys().find(|k| *k != "$schema" && *k != "mcpServers") {
        return Err(invalid(format!(
            "unknown top-level key `{extra}` in mcp.json: only `$schema` and `mcpServers` are allowed"
        ))
        .with_field(extra.clone()));
    }
    match root.remove("mcpServers") {
        Some(Value::Object(servers)) => Ok(servers.into_iter().collect()),
        Some(_) => {
            Err(invalid("`mcpServers` must be an object".to_owned()).with_field("mcpServers"))
        }
        None => {
            Err(invalid("mcp.json has no `mcpServers` object".to_owned()).with_field("mcpServers"))
        }
    }
}

/// The `type` other harnesses write, in evoflux's words: Claude Code's
/// and VS Code's `"http"` is Streamable HTTP, and an entry without a type
/// is stdio when it has a `command` and Streamable HTTP when it has a
/// `url` (Claude Code's and Cursor's default). Agent Plugins packages keep
/// their own strict rules; this is for the user's and projects' files.
fn with_known_type(mut value: Value) -> Value {
    if let Value::Object(entry) = &mut value {
        let known = match entry.get("type") {
            Some(Value::String(t)) if t == "http" => Some("streamable-http"),
            None if entry.contains_key("command") => Some("stdio"),
            None if entry.contains_key("url") => Some("streamable-http"),
            Some(_) | None => None,
        };
        if let Some(t) = known {
            entry.insert("type".to_owned(), Value::from(t));
        }
    }
    value
}

/// Checks one winning entry.
pub fn parse(
    path: &Path,
    name: &str,
    value: Value,
    diags: &mut Diagnostics,
) -> Option<ConnectionDefinition> {
    let field = |f: &str| format!("mcpServers.{name}.{f}");
    let err = |code: &'static str, msg: String, f: &str| {
        Diagnostic::error(code, msg)
            .with_file(path)
            .with_field(field(f))
    };
    let def: ConnectionDefinition = match serde_json::from_value(with_known_type(value)) {
        Ok(d) => d,
        Err(e) => {
            diags.push(err(
                "compile/connection-invalid",
                format!(
                    "server `{name}`: {e}; expected `type` = \"stdio\" (command, args, env, cwd, \
                     startup_timeout_secs), \"streamable-http\" (url, headers, \
                     startup_timeout_secs) or \"sse\" (url, headers)"
                ),
                "type",
            ));
            return None;
        }
    };
    let before = diags.count(evoflux_core::Severity::Error);
    if let ConnectionDefinition::Stdio {
        startup_timeout_secs: Some(secs),
        ..
    }
    | ConnectionDefinition::StreamableHttp {
        startup_timeout_secs: Some(secs),
        ..
    } = &def
        && !(1..=MAX_STARTUP_TIMEOUT_SECS).contains(secs)
    {
        diags.push(err(
            "compile/connection-bad-startup-timeout",
            format!(
                "server `{name}`: `startup_timeout_secs` is {secs}; it must be between 1 and \
                 {MAX_STARTUP_TIMEOUT_SECS} seconds"
            ),
            "startup_timeout_secs",
        ));
    }
    match &def {
        ConnectionDefinition::Stdio { command, env, .. } => {
            if !evoflux_core::child_env::is_one_executable(command) {
                diags.push(err(
                    "compile/connection-invalid",
                    format!(
                        "server `{name}`: command `{command}` must be one executable (put \
                         arguments in `args`)"
                    ),
                    "command",
                ));
            }
            for key in env.keys().filter(|k| !is_env_name(k)) {
                diags.push(err(
                    "compile/connection-invalid",
                    format!("server `{name}`: `{key}` is not an environment variable name"),
                    "env",
                ));
            }
        }
        ConnectionDefinition::StreamableHttp { url, headers, .. }
        | ConnectionDefinition::Sse { url, headers } => {
            if let Err(why) = check_url(url) {
                diags.push(err(
                    "compile/connection-invalid",
                    format!("server `{name}`: url `{url}` {why}"),
                    "url",
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            for (h, value) in headers {
                let problem = if !is_header_name(h) {
                    Some("is not a valid HTTP header name")
                } else if !seen.insert(h.to_ascii_lowercase()) {
                    Some("repeats another header (names are case-insensitive)")
                } else if !is_header_value(value) {
                    Some("has a value with control characters")
                } else {
                    None
                };
                if let Some(why) = problem {
                    diags.push(err(
                        "compile/connection-invalid",
                        format!("server `{name}`: header `{h}` {why}"),
                        "headers",
                    ));
                }
            }
        }
    }
    if let ConnectionDefinition::Sse { .. } = &def {
        diags.push(
            Diagnostic::warning(
                "compile/connection-sse-unsupported",
                format!("server `{name}` uses the legacy `sse` transport; it is listed but never started"),
            )
            .with_file(path)
            .with_field(field("type")),
        );
    }
    (diags.count(evoflux_core::Severity::Error) == before).then_some(def)
}

/// Why a remote MCP URL is refused. Shared by the global `mcp.json`
/// connections and plugin `mcp.json` declarations: one rule set for both.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlProblem {
    #[error("is not an absolute URL: {0}")]
    Unparsable(String),
    #[error("has surrounding whitespace")]
    Whitespace,
    #[error("must use http or https")]
    Scheme,
    #[error("must not carry user information")]
    UserInfo,
    #[error("must not carry a fragment")]
    Fragment,
    #[error("has no host")]
    NoHost,
    #[error("must use https unless the host is localhost or a loopback address")]
    PlainHttpRemote,
}

/// Checks a remote MCP URL: absolute `http(s)`, no user information, no
/// fragment, and plain `http` only for `localhost` or a loopback IP
/// literal. The checks run in that order, so `Err(PlainHttpRemote)` means
/// every other rule passed. Returns the host and port as written, for
/// trust review and display.
pub fn check_url(raw: &str) -> Result<String, UrlProblem> {
    if raw.trim() != raw {
        return Err(UrlProblem::Whitespace);
    }
    let url = url::Url::parse(raw).map_err(|e| UrlProblem::Unparsable(e.to_string()))?;
    let https = match url.scheme() {
        "https" => true,
        "http" => false,
        _ => return Err(UrlProblem::Scheme),
    };
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlProblem::UserInfo);
    }
    if url.fragment().is_some() {
        return Err(UrlProblem::Fragment);
    }
    let loopback = match url.host() {
        None => return Err(UrlProblem::NoHost),
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
    };
    if !https && !loopback {
        return Err(UrlProblem::PlainHttpRemote);
    }
    let host = url.host_str().unwrap_or_default();
    Ok(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

/// An HTTP field name: one or more `tchar`s (RFC 9110 token).
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// An HTTP field value: no control characters other than horizontal tab
/// (a CR or LF would let a configured value inject further headers).
pub fn is_header_value(value: &str) -> bool {
    value.chars().all(|c| c == '\t' || !c.is_control())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn check(v: Value) -> (Option<ConnectionDefinition>, Vec<String>) {
        let mut d = Diagnostics::new();
        let r = parse(Path::new("mcp.json"), "gh", v, &mut d);
        (r, d.codes().into_iter().map(str::to_owned).collect())
    }

    #[test]
    fn hostile_nesting_is_refused_before_parsing() {
        let text = format!(
            "{{\"mcpServers\": {{\"gh\": {{\"args\": {}{}}}}}}}",
            "[".repeat(100_000),
            "]".repeat(100_000)
        );
        let d = entries(Path::new("/r/.evoflux/mcp.json"), &text).unwrap_err();
        assert_eq!(
            (d.code.as_ref(), d.locator.line),
            ("json/too-deep", Some(1))
        );
        assert!(d.is_error());
    }

    #[test]
    fn shapes() {
        let (ok, codes) = check(json!({"type": "stdio", "command": "npx", "args": ["-y", "x"]}));
        assert!(ok.is_some() && codes.is_empty());
        let (ok, _) =
            check(json!({"type": "streamable-http", "url": "https://api.example.com/mcp"}));
        assert!(ok.is_some());
        let (ok, codes) = check(json!({"type": "sse", "url": "http://127.0.0.1:9/sse"}));
        assert!(ok.is_some());
        assert_eq!(codes, ["compile/connection-sse-unsupported"]);
    }

    #[test]
    fn invalid_entries() {
        for v in [
            json!({"type": "stdio"}),
            json!({"type": "websocket", "url": "https://x"}),
            json!({"type": "stdio", "command": "npx", "url": "https://x"}),
            json!({"type": "stdio", "command": "npx -y server"}),
            json!({"type": "streamable-http", "url": "http://example.com/mcp"}),
            json!({"type": "streamable-http", "url": "https://u:p@example.com/mcp"}),
            json!({"type": "streamable-http", "url": "https://x/mcp", "headers": {"A": "1", "a": "2"}}),
        ] {
            let (ok, codes) = check(v.clone());
            assert!(ok.is_none(), "{v}");
            assert!(
                codes.contains(&"compile/connection-invalid".to_owned()),
                "{v}: {codes:?}"
            );
        }
    }

    #[test]
    fn startup_timeout_is_read_per_server_and_bounded() {
        let text = r#"{"mcpServers": {
            "slow": {"command": "npx", "startup_timeout_secs": 90},
            "remote": {"url": "https://x/mcp", "startup_timeout_secs": 600}
        }}"#;
        let mut parsed = BTreeMap::new();
        for (name, value) in entries(Path::new("mcp.json"), text).unwrap() {
            let mut d = Diagnostics::new();
            let def = parse(Path::new("mcp.json"), &name, value, &mut d);
            assert!(d.codes().is_empty(), "{name}: {:?}", d.codes());
            parsed.insert(name, def);
        }
        assert!(matches!(
            parsed["slow"],
            Some(ConnectionDefinition::Stdio {
                startup_timeout_secs: Some(90),
                ..
            })
        ));
        assert!(matches!(
            parsed["remote"],
            Some(ConnectionDefinition::StreamableHttp {
                startup_timeout_secs: Some(600),
                ..
            })
        ));
        // Absent: the manager's default, and nothing is written back.
        let (def, _) = check(json!({"command": "npx"}));
        let shown = serde_json::to_value(def.unwrap()).unwrap();
        assert!(shown.get("startup_timeout_secs").is_none(), "{shown}");
        for bad in [0, 601] {
            let (def, codes) = check(json!({"command": "npx", "startup_timeout_secs": bad}));
            assert!(def.is_none(), "{bad}");
            assert_eq!(codes, ["compile/connection-bad-startup-timeout"], "{bad}");
        }
        // `sse` is never started, so it has no start-up to time.
        let (def, codes) = check(json!({"type": "sse", "url": "http://127.0.0.1:9/sse",
                                        "startup_timeout_secs": 5}));
        assert!(def.is_none());
        assert_eq!(codes, ["compile/connection-invalid"]);
    }

    #[test]
    fn other_harnesses_types_are_read_in_evoflux_words() {
        for (v, expected) in [
            (
                json!({"type": "http", "url": "https://x/mcp"}),
                "streamable-http",
            ),
            (json!({"url": "https://x/mcp"}), "streamable-http"),
            (json!({"command": "npx", "args": ["-y", "srv"]}), "stdio"),
        ] {
            let (def, codes) = check(v.clone());
            assert!(codes.is_empty(), "{v}: {codes:?}");
            let shown = serde_json::to_value(def.unwrap()).unwrap();
            assert_eq!(shown["type"], expected, "{v}");
        }
    }

    #[test]
    fn url_rules() {
        assert_eq!(check_url("https://example.com/mcp").unwrap(), "example.com");
        assert_eq!(
            check_url("http://127.0.0.1:43187/x?v=$A").unwrap(),
            "127.0.0.1:43187"
        );
        assert_eq!(check_url("http://localhost:8/").unwrap(), "localhost:8");
        assert_eq!(check_url("http://[::1]:9/").unwrap(), "[::1]:9");
        assert_eq!(
            check_url("http://example.com/"),
            Err(UrlProblem::PlainHttpRemote)
        );
        assert_eq!(
            check_url("http://127.0.0.1.example.com/"),
            Err(UrlProblem::PlainHttpRemote)
        );
        assert_eq!(
            check_url("https://u:p@example.com/"),
            Err(UrlProblem::UserInfo)
        );
        assert_eq!(
            check_url("https://example.com/#x"),
            Err(UrlProblem::Fragment)
        );
        assert_eq!(
            check_url("https://example.com/#"),
            Err(UrlProblem::Fragment)
        );
        assert_eq!(check_url("ftp://example.com/"), Err(UrlProblem::Scheme));
        assert!(matches!(
            check_url("/relative"),
            Err(UrlProblem::Unparsable(_))
        ));
        assert_eq!(check_url(" https://a.b/"), Err(UrlProblem::Whitespace));
    }

    #[test]
    fn header_grammar() {
        assert!(is_header_name("X-Api-Key"));
        assert!(!is_header_name("X Api"));
        assert!(!is_header_name(""));
        assert!(!is_header_name("X:Y"));
        assert!(is_header_value("Bearer a\tb"));
        assert!(!is_header_value("a\r\nInjected: x"));
        let (ok, codes) = check(json!({
            "type": "streamable-http",
            "url": "https://x/mcp",
            "headers": {"X-Ok": "a\r\nInjected: 1"}
        }));
        assert!(ok.is_none());
        assert_eq!(codes, ["compile/connection-invalid"]);
    }

    #[test]
    fn top_level_rules() {
        let p = Path::new("mcp.json");
        assert_eq!(
            entries(p, r#"{"mcpServers": {"a": {}, "b": {}}}"#)
                .unwrap()
                .len(),
            2
        );
        for bad in [
            "[]",
            "{",
            r#"{"servers": {}}"#,
            r#"{"mcpServers": []}"#,
            r#"{"mcpServers": {}, "x": 1}"#,
        ] {
            assert_eq!(
                entries(p, bad).unwrap_err().code,
                "discover/mcp-json-invalid",
                "{bad}"
            );
        }
    }
}
