//! Every integration test of the tools' executors in one test binary: each
//! test binary links the crate and its dependencies again, so one binary
//! instead of one per file saves most of a test build's link time. A
//! test's name is its file's module and its function (`shell::name`);
//! `cargo nextest run -p evoflux-tools -E 'test(/^confinement::/)'` runs
//! one file's tests.

mod browser;
mod common;
mod confinement;
mod preview;
mod race;
mod shell;
mod spec;
mod tools;
mod web_fetch;
