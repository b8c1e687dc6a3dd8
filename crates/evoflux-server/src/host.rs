//! The `Host` check, against DNS rebinding: a web page on a name its owner
//! points at this machine must not reach the server. A request is served
//! when every host it names (its `Host` header, and the authority of an
//! absolute or HTTP/2 target) is one of:
//!
//! - `localhost`, `127.0.0.1` or `[::1]` when the server listens on a
//!   loopback address (or on all addresses);
//! - the address it listens on, or any IP literal when it listens on all
//!   of them (`0.0.0.0`, `::`): an address cannot be rebound, only a name;
//! - a name among the allowed hosts (`ServeOptions::allowed_hosts`:
//!   `NAME`, any port; `NAME:PORT`, that port).
//!
//! Otherwise the answer is `421` with `server/host-not-allowed`. The port
//! of the built-in names is not checked: an SSH tunnel or a forwarded port
//! changes it, and rebinding needs a name of the attacker's.

use std::net::IpAddr;
use std::str::FromStr;

use axum::http::uri::Authority;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::error::ApiError;

/// The code of a refused host.
pub const HOST_NOT_ALLOWED: &str = "server/host-not-allowed";

/// An allowed host that is not a host name.
#[derive(Debug, thiserror::Error)]
#[error("the allowed host {value:?} is not a host name (NAME or NAME:PORT)")]
pub struct AllowedHostError {
    pub value: String,
}

/// A host the request may name: a name, or an address.
#[derive(Debug, Clone, PartialEq, Eq)]
enum HostName {
    Name(String),
    Ip(IpAddr),
}

/// One allowed host: the name, and the port when one was given.
#[derive(Debug, Clone)]
struct Allowed {
    host: HostName,
    port: Option<u16>,
}

/// Which hosts requests may name.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    bind: IpAddr,
    allowed: Vec<Allowed>,
}

/// `authority` (`name`, `name:port`, `[v6]:port`) as a host and port, or
/// `None` when it is not one.
fn parse(authority: &str) -> Option<(HostName, Option<u16>)> {
    // `Authority` takes `user@host` too; a Host never carries it.
    if authority.is_empty() || authority.contains('@') {
        return None;
    }
    let parsed = Authority::from_str(authority).ok()?;
    let host = parsed.host();
    let host = if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        HostName::Ip(IpAddr::V6(v6.parse().ok()?))
    } else if let Ok(v4) = host.parse::<std::net::Ipv4Addr>() {
        HostName::Ip(IpAddr::V4(v4))
    } else {
        let name = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
        if name.is_empty() {
            return None;
        }
        HostName::Name(name)
    };
    Some((host, parsed.port_u16()))
}

impl HostPolicy {
    /// The policy of a server listening on `bind` with these allowed
    /// hosts (`NAME` or `NAME:PORT`).
    pub fn new(bind: IpAddr, allowed_hosts: &[String]) -> Result<HostPolicy, AllowedHostError> {
        let allowed = allowed_hosts
            .iter()
            .map(|value| {
                parse(value.trim())
                    .map(|(host, port)| Allowed { host, port })
                    .ok_or_else(|| AllowedHostError {
                        value: value.clone(),
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(HostPolicy { bind, allowed })
    }

    /// Whether a request may name `authority`.
    pub fn allows(&self, authority: &str) -> bool {
        let Some((host, port)) = parse(authority) else {
            return false;
        };
        let local = self.bind.is_loopback() || self.bind.is_unspecified();
        let built_in = match &host {
            HostName::Name(name) => local && name == "localhost",
            HostName::Ip(ip) => {
                self.bind.is_unspecified()
                    || *ip == self.bind
                    || (self.bind.is_loopback() && ip.is_loopback())
            }
        };
        built_in
            || self
                .allowed
                .iter()
                .any(|a| a.host == host && a.port.is_none_or(|p| Some(p) == port))
    }

    /// `Ok` when the request may be served, else the refusal.
    pub fn check<B>(&self, request: &Request<B>) -> Result<(), Response> {
        let mut named = Vec::new();
        for value in request.headers().get_all(header::HOST) {
            named.push(value.to_str().unwrap_or("").to_owned());
        }
        if named.len() > 1 {
            return Err(refusal("the request has more than one Host header"));
        }
        if let Some(authority) = request.uri().authority() {
            named.push(authority.as_str().to_owned());
        }
        if named.is_empty() {
            return Err(refusal("the request names no host; send a Host header"));
        }
        match named.iter().find(|h| !self.allows(h)) {
            None => Ok(()),
            Some(host) => {
                let shown: String = host.chars().take(100).collect();
                Err(refusal(&format!(
                    "this server does not answer for the host {shown:?}; add the name to its \
                     allowed hosts to serve it"
                )))
            }
        }
    }
}

fn refusal(message: &str) -> Response {
    ApiError::new(StatusCode::MISDIRECTED_REQUEST, HOST_NOT_ALLOWED, message).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(bind: &str, allowed: &[&str]) -> HostPolicy {
        let allowed: Vec<String> = allowed.iter().map(|s| (*s).to_owned()).collect();
        HostPolicy::new(bind.parse().unwrap(), &allowed).unwrap()
    }

    #[test]
    fn a_loopback_bind_answers_only_local_names() {
        let p = policy("127.0.0.1", &[]);
        for ok in [
            "localhost",
            "localhost:4747",
            "LOCALHOST.:4747",
            "127.0.0.1:4747",
            "[::1]:4747",
            "[::1]",
        ] {
            assert!(p.allows(ok), "{ok}");
        }
        for no in [
            "evil.example:4747",
            "localhost.evil.example",
            "192.168.1.5:4747",
            "",
            "user@localhost",
            "local host",
        ] {
            assert!(!p.allows(no), "{no}");
        }
    }

    #[test]
    fn another_bind_answers_its_address_and_the_names_given() {
        let p = policy("192.168.1.5", &["evo.example", "Other.Example:8443"]);
        assert!(p.allows("192.168.1.5:4747"));
        assert!(p.allows("evo.example"));
        assert!(p.allows("EVO.example:443"));
        assert!(p.allows("other.example:8443"));
        assert!(!p.allows("other.example:4747"));
        assert!(!p.allows("localhost:4747"));
        assert!(!p.allows("10.0.0.1:4747"));
        let all = policy("0.0.0.0", &[]);
        assert!(all.allows("10.0.0.1:4747"));
        assert!(all.allows("localhost:4747"));
        assert!(!all.allows("evil.example:4747"));
    }

    #[test]
    fn a_refused_host_carries_the_code() {
        let p = policy("127.0.0.1", &[]);
        let request = |host: Option<&str>| {
            let mut b = Request::builder().uri("/api/health");
            if let Some(h) = host {
                b = b.header(header::HOST, h);
            }
            b.body(()).unwrap()
        };
        assert!(p.check(&request(Some("127.0.0.1:1"))).is_ok());
        for refused in [request(Some("evil.example")), request(None)] {
            let response = p.check(&refused).unwrap_err();
            assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
        }
        let absolute = Request::builder()
            .uri("http://evil.example/api/health")
            .header(header::HOST, "localhost")
            .body(())
            .unwrap();
        assert!(p.check(&absolute).is_err());
        assert_eq!(
            HostPolicy::new("127.0.0.1".parse().unwrap(), &["a/b".to_owned()])
                .unwrap_err()
                .value,
            "a/b"
        );
    }
}
