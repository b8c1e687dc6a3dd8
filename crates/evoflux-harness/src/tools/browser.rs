//! `browser`'s handler: the session's headless Chromium
//! ([`evoflux_tools::browser`]), when Chromium is installed and the
//! session's network policy leaves the browser somewhere to go. Its
//! definition is [`evoflux_graph::tool::builtin::browser`].
//!
//! What the browser may reach follows the session's network access and
//! `sandbox.toml` ([`reach`]); its profile, downloads and screenshots live
//! in the session's folder (`<data>/artifacts/<session>/browser/`), so
//! cookies never leak between sessions. A screenshot goes to the model as
//! an image on the tool message (a model that takes no images gets a note
//! naming it instead) and stays in the folder as the artifact.

use std::path::Path;

use evoflux_graph::sandbox::{NetworkPolicy, SandboxPolicy};
use evoflux_model::ToolCall;
use evoflux_tools::browser::{Browser, BrowserConfig, Reach};
use evoflux_tools::web_fetch::NetworkAccess;

use super::{BuiltinTool, Handled, Offering, command_result};
use crate::events::ToolResult;
use crate::prepared::SessionCapabilities;
use crate::session::{Harness, RunSetup};

#[derive(Debug)]
pub(super) struct BrowserTool;

impl BuiltinTool for BrowserTool {
    fn gap(&self, caps: &SessionCapabilities) -> Option<&'static str> {
        caps.browser
    }

    /// Its definition is large and most turns need none: with a large
    /// catalog of MCP tools it waits for `connection_search` with them.
    fn offering(&self) -> Offering {
        Offering::DeferredWithConnections
    }

    fn execute<'a>(
        &'a self,
        session: &'a mut Harness,
        call: &'a ToolCall,
    ) -> Handled<'a, ToolResult> {
        Box::pin(async move {
            let Some(browser) = session.browser() else {
                return Ok(ToolResult::error(NO_CHROMIUM));
            };
            let out = browser.run(&call.arguments).await;
            let mut result = command_result(out.output);
            if let Some(shot) = out.screenshot {
                result.media.push(shot.into_media());
            }
            Ok(result)
        })
    }
}

use evoflux_tools::browser::NOT_INSTALLED as NO_CHROMIUM;
const NETWORK_OFF: &str = "network tools are turned off for this session";
const NETWORK_DENIED: &str = "sandbox.toml denies the network; set `browser_loopback = true` \
     there to let the browser reach this machine's loopback only";

/// Why a session set up with `setup` cannot run the browser, if so.
pub(crate) fn gap(setup: &RunSetup) -> Option<&'static str> {
    if setup.chromium.is_none() {
        return Some(NO_CHROMIUM);
    }
    if setup.network == NetworkAccess::Off {
        return Some(NETWORK_OFF);
    }
    reach(setup).is_none().then_some(NETWORK_DENIED)
}

/// Where the browser of a session set up with `setup` may go
/// ([`reach_under`]).
pub(crate) fn reach(setup: &RunSetup) -> Option<Reach> {
    reach_under(setup.network, setup.sandbox.as_ref().map(|s| &s.policy))
}

/// Where the browser may go: the session's network access, narrowed by
/// `sandbox.toml` (its `network` and `browser_loopback`); `None` when
/// nowhere.
fn reach_under(access: NetworkAccess, policy: Option<&SandboxPolicy>) -> Option<Reach> {
    let network = policy.map_or(NetworkPolicy::Allow, |p| p.network);
    let loopback = policy.is_some_and(|p| p.browser_loopback);
    match (access, network, loopback) {
        (NetworkAccess::Off, _, _) => None,
        (NetworkAccess::Any, NetworkPolicy::Allow, _) => Some(Reach::Any),
        (NetworkAccess::Any | NetworkAccess::PublicOnly, NetworkPolicy::Deny, true) => {
            Some(Reach::LoopbackOnly)
        }
        (NetworkAccess::Any | NetworkAccess::PublicOnly, NetworkPolicy::Deny, false) => None,
        (NetworkAccess::PublicOnly, NetworkPolicy::Allow, true) => Some(Reach::PublicAndLoopback),
        (NetworkAccess::PublicOnly, NetworkPolicy::Allow, false) => Some(Reach::Public),
    }
}

/// The browser of a session set up with `setup` whose folder is
/// `session_dir`; not started until its first call. `None` when the
/// session cannot run it.
pub(crate) fn for_session(setup: &RunSetup, session_dir: &Path) -> Option<Browser> {
    let chromium = setup.chromium.clone()?;
    let reach = reach(setup)?;
    Some(Browser::new(BrowserConfig {
        chromium,
        dir: session_dir.join("browser"),
        reach,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_toml_narrows_where_the_browser_goes() {
        let mut policy = SandboxPolicy::framework_default();
        let public = NetworkAccess::PublicOnly;
        assert_eq!(reach_under(public, Some(&policy)), Some(Reach::Public));
        assert_eq!(reach_under(NetworkAccess::Off, Some(&policy)), None);
        policy.browser_loopback = true;
        assert_eq!(
            reach_under(public, Some(&policy)),
            Some(Reach::PublicAndLoopback)
        );
        policy.network = NetworkPolicy::Deny;
        assert_eq!(
            reach_under(public, Some(&policy)),
            Some(Reach::LoopbackOnly)
        );
        assert_eq!(
            reach_under(NetworkAccess::Any, Some(&policy)),
            Some(Reach::LoopbackOnly),
            "the user's denial wins over an embedding's access"
        );
        policy.browser_loopback = false;
        assert_eq!(reach_under(public, Some(&policy)), None);
        assert_eq!(reach_under(NetworkAccess::Any, None), Some(Reach::Any));
    }
}
