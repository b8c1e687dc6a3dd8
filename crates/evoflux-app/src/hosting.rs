//! How the application opens a session for the engine's session host
//! (`evoflux_harness::host`): a builder wired to the host's events and
//! approval broker ([`WireBuilder`]), and the builder that opens a hosted
//! session again when the host asks ([`ReopenBuilder`]). The host itself
//! knows nothing of the builder; a front end's
//! [`HostFrontEnd::reopen`](evoflux_harness::HostFrontEnd::reopen) opens
//! the session with these, and a [`SessionError`]
//! becomes the host's [`ReopenError`] with its code and words.

use evoflux_harness::{HostWiring, Limits, Reopen, ReopenError};

use crate::{AppContext, SessionBuilder, SessionError, SessionOptions};

/// A session builder wired to a host.
pub trait WireBuilder {
    /// `builder` with this wiring's events and approvals.
    fn wire<'b>(&self, builder: SessionBuilder<'b>) -> SessionBuilder<'b>;
}

impl WireBuilder for HostWiring {
    fn wire<'b>(&self, builder: SessionBuilder<'b>) -> SessionBuilder<'b> {
        builder.events(self.events()).approver(self.approver())
    }
}

/// The builder of a session the host opens again.
pub trait ReopenBuilder {
    /// A builder that opens the session again as the host asks: resumed,
    /// wired to the host, its model client kept, under the lease when one
    /// is held. The front end adds what is its own (store, process runtime,
    /// client files).
    fn builder(self, app: &AppContext, limits: Limits) -> SessionBuilder<'_>;
}

impl ReopenBuilder for Reopen<'_> {
    fn builder(self, app: &AppContext, limits: Limits) -> SessionBuilder<'_> {
        let options = SessionOptions {
            mode: None,
            workspaces: Vec::new(),
            lead: None,
            model: None,
            resume: Some(self.session),
            limits,
        };
        let builder = self
            .wiring
            .wire(SessionBuilder::new(app, options))
            .reuse_model(self.model);
        match self.lease {
            Some(lease) => builder.held_lease(lease),
            None => builder,
        }
    }
}

impl From<SessionError> for ReopenError {
    fn from(e: SessionError) -> ReopenError {
        ReopenError {
            code: e.code().to_owned(),
            message: e.to_string(),
        }
    }
}
