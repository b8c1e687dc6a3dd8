//! Every integration test of evoflux-agents in one test binary: each test
//! binary links the crate and its dependencies again, so one binary
//! instead of one per file saves most of a test build's link time. A
//! test's name is its file's module and its function (`team::name`);
//! `cargo nextest run -p evoflux-agents -E 'test(/^worker_boundary::/)'`
//! runs one file's tests.

mod common;

mod dispatch_admission;
mod form_roundtrip;
mod result_contracts;
mod team;
mod worker_boundary;
