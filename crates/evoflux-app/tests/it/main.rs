//! Every integration test of the application crate in one test binary:
//! each test binary links all of evoflux, so one binary instead of one per
//! file saves most of a test build's link time. A test's name is its
//! file's module and its function (`replay::name`); `cargo nextest run -p
//! evoflux-app -E 'test(/^scheduler::/)'` runs one file's tests.

// What the tests start from, an application in a temp folder, is
// `evoflux_app::testing`, which the crates above share.

mod models;
mod replay;
mod scheduler;
mod session_builder;
