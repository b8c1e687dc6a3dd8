//! What is stored beside a tool result: one typed record, defined with
//! the rest of the event protocol in `evoflux-protocol`.

pub use evoflux_protocol::metadata::{FileChange, ObservationReuse, Offloaded, ResultMetadata};
