//! Every integration test of evoflux-skills in one test binary: each test
//! binary links the crate and its dependencies again, so one binary instead
//! of one per file saves most of a test build's link time. A test's name is
//! its file's module and its function (`overlay::name`); `cargo nextest run -p
//! evoflux-skills -E 'test(/^overlay::/)'` runs one file's tests.

mod common;

mod catalog;
mod corpus;
mod evals;
mod fixtures;
mod invariants;
mod overlay;
