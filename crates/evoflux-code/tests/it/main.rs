//! Every integration test of evoflux-code in one test binary: each test
//! binary links the crate and its dependencies again, so one binary instead
//! of one per file saves most of a test build's link time. A test's name is
//! its file's module and its function (`navigate::name`); `cargo nextest run -p
//! evoflux-code -E 'test(/^navigate::/)'` runs one file's tests.

mod call_forms;
mod navigate;
