//! Every integration test of evoflux-server in one test binary, each
//! against the real server on a loopback port: each test binary links the
//! crate and its dependencies again, so one binary instead of one per file
//! saves most of a test build's link time. A test's name is its file's
//! module and its function (`idle_sessions::name`); `cargo nextest run -p
//! evoflux-server -E 'test(/^idle_sessions::/)'` runs one file's tests.

// Each former test crate allowed these at its root, which also covered
// `common`; the modules below keep their own copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod attachments;

mod connection_floods;
mod highlight;
mod idle_sessions;
mod mcp_forms;
mod preview_links;
mod scheduled_runs;
mod session_list;
mod session_snapshot;
