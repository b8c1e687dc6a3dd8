//! Every integration test of evoflux-mcp in one test binary: each test
//! binary links the crate and its dependencies again, so one binary instead
//! of one per file saves most of a test build's link time. A test's name is
//! its file's module and its function (`manager::name`); `cargo nextest run -p
//! evoflux-mcp -E 'test(/^manager::/)'` runs one file's tests.

// Each former test crate allowed these at its root, which also covered
// `common`; the modules below keep their own copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod bounds;
mod everything;
mod live;
mod manager;
mod oauth;
mod plugins;
mod prompts;
mod python_sdk;
