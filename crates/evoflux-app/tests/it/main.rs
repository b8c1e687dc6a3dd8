//! Every integration test of the application crate in one test binary:
//! each test binary links all of evoflux, so one binary instead of one per
//! file saves most of a test build's link time. A test's name is its
//! file's module and its function (`replay::name`); `cargo nextest run -p
//! evoflux-app -E 'test(/^scheduler::/)'` runs one file's tests.

// Each former test crate allowed these at its root, which also covered
// `common`; the modules below keep their own copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod replay;
mod scheduler;
mod session_builder;
