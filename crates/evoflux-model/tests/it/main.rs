//! Every integration test of evoflux-model in one test binary: provider
//! tests against fake servers on 127.0.0.1 that speak the real wire
//! protocols, the scripted provider, and (with the `local` feature) the
//! in-process GGUF provider. A test's name is its file's module and its
//! function (`openai::name`); `cargo nextest run -p evoflux-model -E
//! 'test(/^local::/)'` runs one file's tests.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod common;
mod faults;
#[cfg(feature = "local")]
mod local;
mod media;
mod openai;
mod responses;
mod scripted;
