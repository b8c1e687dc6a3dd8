//! What the browser's own traffic may reach, and the check every request
//! of the page passes (the page, its redirects, its scripts, images and
//! fetches: the browser pauses each one and asks, see `Fetch.requestPaused`).
//!
//! The session's network access (as for `web_fetch`: public addresses
//! only by default) and `sandbox.toml` decide it: where the user denies
//! the network (`network = "deny"`), the browser reaches nothing, unless
//! `browser_loopback = true` lets it reach this machine's loopback
//! addresses only (local work: a dev server, a test page). With the
//! network allowed, `browser_loopback = true` adds loopback to the public
//! addresses. Private and link-local addresses are never reached.
//!
//! One exception, whatever the reach: the session's own running previews
//! ([`PreviewOrigins`]), so `preview(action='snapshot')` can load the app
//! the agent is building. It admits exactly each preview's loopback socket
//! address (an IP literal and a port, compared as a [`SocketAddr`]), never
//! a host name or a prefix of a URL: another port on loopback stays as
//! closed as `browser_loopback` leaves it.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use url::{Host, Url};

use crate::sync::lock;
use crate::web_fetch::{is_public, resolve};

/// Where the browser may go. Closed: [`Reach::allows`] decides each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Public addresses only (the default).
    Public,
    /// Public addresses and this machine's loopback.
    PublicAndLoopback,
    /// Loopback only: `sandbox.toml` denies the network and allows the
    /// browser's loopback.
    LoopbackOnly,
    /// Anything (an embedding or a test that opted in).
    Any,
}

impl Reach {
    /// Whether a request to `ip` may leave.
    pub fn allows(self, ip: IpAddr) -> bool {
        let loopback = ip.to_canonical().is_loopback();
        match self {
            Reach::Public => is_public(ip),
            Reach::PublicAndLoopback => is_public(ip) || loopback,
            Reach::LoopbackOnly => loopback,
            Reach::Any => true,
        }
    }

    /// What a refused request is told, to say how to change it.
    fn refusal(self) -> &'static str {
        match self {
            Reach::Public => {
                "the browser only reaches public addresses; set `browser_loopback = true` in \
                 sandbox.toml to let it reach this machine's loopback"
            }
            Reach::PublicAndLoopback => {
                "the browser reaches public and loopback addresses, never private ones"
            }
            Reach::LoopbackOnly => {
                "sandbox.toml denies the network; the browser only reaches this machine's \
                 loopback (`browser_loopback = true`)"
            }
            Reach::Any => "",
        }
    }

    /// Whether Chromium itself is started with no route out but loopback
    /// (a proxy that does not exist, which loopback bypasses): the network
    /// is denied, so even what the page check cannot see (a service
    /// worker's requests) goes nowhere.
    pub(crate) fn loopback_only(self) -> bool {
        match self {
            Reach::LoopbackOnly => true,
            Reach::Public | Reach::PublicAndLoopback | Reach::Any => false,
        }
    }

    /// Checks one URL the page asks for: only `http`, `https`, and the
    /// page's own `data:`/`blob:`/`about:blank` content; the host must
    /// resolve to addresses this reach allows.
    pub async fn check(self, url: &str) -> Result<(), String> {
        self.check_parsed(url, &parse(url)?).await
    }

    /// [`Reach::check`] on `url` parsed as `parsed`.
    async fn check_parsed(self, url: &str, parsed: &Url) -> Result<(), String> {
        match parsed.scheme() {
            "http" | "https" => {}
            "data" | "blob" => return Ok(()),
            "about" if parsed.path() == "blank" => return Ok(()),
            other => {
                return Err(format!(
                    "`{other}:` URLs are refused (local files and the browser's own pages are \
                     never opened); use http or https"
                ));
            }
        }
        if self == Reach::Any {
            return Ok(());
        }
        let addrs = resolve(parsed).await?;
        match addrs.iter().find(|ip| !self.allows(**ip)) {
            Some(ip) => Err(format!("{url} resolves to {ip}: {}", self.refusal())),
            None => Ok(()),
        }
    }
}

/// The loopback addresses of the session's running previews, which its
/// browser reaches whatever its [`Reach`]. The process runtime sets them
/// after every `preview` call (a stopped preview's address is dropped);
/// clones share one set.
#[derive(Debug, Clone, Default)]
pub struct PreviewOrigins(Arc<Mutex<Vec<SocketAddr>>>);

impl PreviewOrigins {
    /// Replaces the set with `addresses`; any that is not loopback is
    /// ignored (a preview is found listening on loopback only).
    pub fn set(&self, addresses: impl IntoIterator<Item = SocketAddr>) {
        *lock(&self.0) = addresses
            .into_iter()
            .filter(|a| a.ip().to_canonical().is_loopback())
            .collect();
    }

    /// The addresses admitted now.
    pub fn addresses(&self) -> Vec<SocketAddr> {
        lock(&self.0).clone()
    }

    /// Whether `url` is `http` to exactly one of the addresses: its host an
    /// IP literal (no name is resolved) and its port that address's.
    fn admits(&self, url: &Url) -> bool {
        if url.scheme() != "http" {
            return false;
        }
        let ip = match url.host() {
            Some(Host::Ipv4(v4)) => IpAddr::V4(v4),
            Some(Host::Ipv6(v6)) => IpAddr::V6(v6),
            Some(Host::Domain(_)) | None => return false,
        };
        let Some(port) = url.port_or_known_default() else {
            return false;
        };
        lock(&self.0).contains(&SocketAddr::new(ip, port))
    }
}

/// What every request of the browser passes: the session's [`Reach`], or
/// one of its own [`PreviewOrigins`].
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    pub reach: Reach,
    pub previews: PreviewOrigins,
}

impl Gate {
    pub(crate) async fn check(&self, url: &str) -> Result<(), String> {
        let parsed = parse(url)?;
        if self.previews.admits(&parsed) {
            return Ok(());
        }
        self.reach.check_parsed(url, &parsed).await
    }
}

fn parse(url: &str) -> Result<Url, String> {
    Url::parse(url).map_err(|e| format!("`{url}` is not a valid URL: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn schemes_other_than_the_web_s_are_refused() {
        for url in [
            "file:///etc/passwd",
            "chrome://settings",
            "view-source:http://example.com",
            "javascript:alert(1)",
            "ftp://example.com/x",
        ] {
            assert!(Reach::Any.check(url).await.is_err(), "{url}");
        }
        assert!(Reach::Any.check("about:blank").await.is_ok());
        assert!(Reach::Any.check("data:text/html,hi").await.is_ok());
    }

    #[tokio::test]
    async fn loopback_needs_the_opt_in_and_private_addresses_are_never_reached() {
        let local = "http://127.0.0.1:8080/";
        assert!(Reach::Public.check(local).await.is_err());
        assert!(Reach::PublicAndLoopback.check(local).await.is_ok());
        assert!(Reach::LoopbackOnly.check(local).await.is_ok());
        assert!(Reach::LoopbackOnly.check("http://[::1]/").await.is_ok());
        for reach in [Reach::Public, Reach::PublicAndLoopback, Reach::LoopbackOnly] {
            assert!(
                reach.check("http://192.168.1.1/").await.is_err(),
                "{reach:?}"
            );
            assert!(
                reach.check("http://169.254.169.254/").await.is_err(),
                "{reach:?}"
            );
        }
        assert!(Reach::LoopbackOnly.check("http://1.1.1.1/").await.is_err());
        assert!(Reach::Public.check("http://1.1.1.1/").await.is_ok());
    }

    #[tokio::test]
    async fn a_running_preview_is_reached_by_its_exact_address_only() {
        let gate = Gate {
            reach: Reach::Public,
            previews: PreviewOrigins::default(),
        };
        let own = "http://127.0.0.1:8123/static/app.js?v=1";
        assert!(gate.check(own).await.is_err(), "no preview yet");
        gate.previews.set([
            "127.0.0.1:8123".parse().unwrap(),
            "[::1]:8124".parse().unwrap(),
            "192.168.1.5:8125".parse().unwrap(),
        ]);
        assert!(gate.check(own).await.is_ok());
        assert!(gate.check("http://[::1]:8124/").await.is_ok());
        for refused in [
            "http://127.0.0.1:8124/",
            "http://127.0.0.2:8123/",
            "https://127.0.0.1:8123/",
            "http://localhost:8123/",
            "http://192.168.1.5:8125/",
            "file:///etc/passwd",
        ] {
            assert!(gate.check(refused).await.is_err(), "{refused}");
        }
        assert_eq!(gate.previews.addresses().len(), 2, "loopback only");
        gate.previews.set([]);
        assert!(gate.check(own).await.is_err(), "a stopped preview");
    }
}
