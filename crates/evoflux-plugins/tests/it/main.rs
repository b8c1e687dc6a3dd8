//! Every integration test of evoflux-plugins in one test binary: each test
//! binary links the crate and its dependencies again, so one binary instead
//! of one per file saves most of a test build's link time. A test's name is
//! its file's module and its function (`lifecycle::name`); `cargo nextest run -p
//! evoflux-plugins -E 'test(/^lifecycle::/)'` runs one file's tests.

mod common;

mod archive;
mod corpus;
mod lifecycle;
mod mcp;
mod pack;
mod package;
mod skills;
mod trust;
