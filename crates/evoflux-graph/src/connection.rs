//! Connections: MCP servers declared in an `mcp.json` of a user or project
//! root. Each entry is a `connections/<name>` candidate; entries are checked
//! here and started by the MCP client manager.

use std::collections::BTreeMap;
use std::path::Path;

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
    },
    StreamableHttp {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
    /// Legacy transport: valid, reported, never started.
    Sse {
        url: String,
        #[serde(default)]
        headers: BTreeMap<String, String>,
    },
}

pub fn is_env_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// Reads the entry names of an `mcp.json` (the file is read at discovery
/// because one file holds several slots; entries are parsed only when they
/// win). Returns the raw entries in file order.
pub fn entries(path: &Path, text: &str) -> Result<Vec<(String, Value)>, Diagnostic> {
    let invalid = |msg: String| Diagnostic::error("discover/mcp-json-invalid", msg).with_file(path);
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
    let def: ConnectionDefinition = match serde_json::from_value(value) {
        Ok(d) => d,
        Err(e) => {
            diags.push(err(
                "compile/connection-invalid",
                format!(
                    "server `{name}`: {e}; expected `type` = \"stdio\" (command, args, env, cwd), \
                     \"streamable-http\" (url, headers) or \"sse\" (url, headers)"
                ),
                "type",
            ));
            return None;
        }
    };
    let before = diags.count(evoflux_core::Severity::Error);
    match &def {
        ConnectionDefinition::Stdio { command, env, .. } => {
            if command.trim().is_empty() || command.chars().any(char::is_whitespace) {
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
        ConnectionDefinition::StreamableHttp { url, headers }
        | ConnectionDefinition::Sse { url, headers } => {
            if let Err(why) = check_url(url) {
                diags.push(err(
                    "compile/connection-invalid",
                    format!("server `{name}`: url `{url}` {why}"),
                    "url",
                ));
            }
            let mut seen = std::collections::BTreeSet::new();
            for h in headers.keys() {
                let valid = !h.is_empty()
                    && h.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if !valid || !seen.insert(h.to_ascii_lowercase()) {
                    diags.push(err(
                        "compile/connection-invalid",
                        format!("server `{name}`: header `{h}` is invalid or repeated"),
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

/// Remote URLs: absolute http(s), no userinfo or fragment; plain http only
/// for loopback hosts.
fn check_url(url: &str) -> Result<(), &'static str> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or("must be an absolute http(s) URL")?;
    if url.contains('#') {
        return Err("must not have a fragment");
    }
    let authority = rest.split(['/', '?']).next().unwrap_or("");
    if authority.is_empty() {
        return Err("has no host");
    }
    if authority.contains('@') {
        return Err("must not contain user information");
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    };
    match scheme {
        "https" => Ok(()),
        "http" if matches!(host, "localhost" | "::1") || host.starts_with("127.") => Ok(()),
        "http" => Err("must use https (plain http is allowed only for localhost)"),
        _ => Err("must be an http(s) URL"),
    }
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
            json!({"type": "http", "url": "https://x"}),
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
