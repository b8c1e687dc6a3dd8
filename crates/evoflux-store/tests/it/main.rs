//! Every integration test of evoflux-store in one test binary: each test
//! binary links the crate and its dependencies again, so one binary instead
//! of one per file saves most of a test build's link time. A test's name is
//! its file's module and its function (`sessions::name`); `cargo nextest run -p
//! evoflux-store -E 'test(/^sessions::/)'` runs one file's tests.

mod cross_process;
#[macro_use]
mod sessions;
mod finding;
mod transfer;
