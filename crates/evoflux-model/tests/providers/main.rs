//! Provider tests against fake servers on 127.0.0.1 that speak the real
//! wire protocols, plus the scripted provider. One binary for the crate.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod anthropic;
mod common;
mod faults;
mod openai;
mod responses;
mod scripted;
