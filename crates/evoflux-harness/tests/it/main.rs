//! Every integration test of the session engine in one test binary: each
//! test binary links the engine and everything below it again, so one
//! binary instead of one per file saves most of a test build's link time.
//! A test's name is its file's module and its function (`host::name`);
//! `cargo nextest run -p evoflux-harness -E 'test(/^context::/)'` runs one
//! file's tests.

// Each former test crate allowed these at its root, which also covered
// `common` and `context_support`; the modules below keep their own copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
mod context_support;

mod agent_loop;
mod connection_search;
mod context;
mod file_changes;
mod host;
mod lease;
mod mcp_list_changed;
mod mcp_live;
mod media;
mod provider_tools;
mod remote;
mod skills;
mod team;
mod webbridge;
