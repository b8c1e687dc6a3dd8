//! Every integration test of evoflux-fleet in one test binary: each test
//! binary links the crate and its dependencies again, so one binary instead
//! of one per file saves most of a test build's link time. A test's name is
//! its file's module and its function (`plan::name`); `cargo nextest run -p
//! evoflux-fleet -E 'test(/^executor::/)'` runs one file's tests.

mod common;

mod bind;
mod boundary;
mod contract;
mod executor;
mod graph;
mod plan;
mod render;
