//! The integration tests of the ACP crate in one test binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod remote;
