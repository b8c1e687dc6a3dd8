//! Every integration test of evoflux-core in one test binary: each test
//! binary links the crate and its dependencies again, so one binary
//! instead of one per file saves most of a test build's link time. A
//! test's name is its file's module and its function (`nesting::name`);
//! `cargo nextest run -p evoflux-core -E 'test(/^layering::/)'` runs one
//! file's tests.

mod cross_process;
mod git_hardening;
mod layering;
mod nesting;
