//! The typed event stream of a session: the protocol's events
//! ([`evoflux_protocol::events`]) and where the engine sends them.

use std::fmt;
use std::sync::Mutex;

pub use evoflux_protocol::events::*;

/// Where events go. Implementations must not block for long: the loop
/// emits from its own task.
pub trait EventSink: Send + Sync + fmt::Debug {
    fn emit(&self, event: &Event);
}

/// Forwards a child session's events to its parent's sink, each wrapped
/// with the dispatching call, so one stream shows the whole tree.
#[derive(Debug)]
pub struct ChildEvents {
    pub parent: std::sync::Arc<dyn EventSink>,
    pub call_id: String,
}

impl EventSink for ChildEvents {
    fn emit(&self, event: &Event) {
        self.parent.emit(&Event::Child {
            call_id: self.call_id.clone(),
            event: Box::new(event.clone()),
        });
    }
}

/// Drops every event.
#[derive(Debug, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn emit(&self, _event: &Event) {}
}

/// Keeps every event, for tests and for callers that render afterwards.
#[derive(Debug, Default)]
pub struct CollectEvents(Mutex<Vec<Event>>);

impl CollectEvents {
    pub fn take(&self) -> Vec<Event> {
        match self.0.lock() {
            Ok(mut v) => std::mem::take(&mut *v),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

impl EventSink for CollectEvents {
    fn emit(&self, event: &Event) {
        match self.0.lock() {
            Ok(mut v) => v.push(event.clone()),
            Err(poisoned) => poisoned.into_inner().push(event.clone()),
        }
    }
}
