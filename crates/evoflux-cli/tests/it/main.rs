//! Every integration test of the CLI in one test binary: each test binary
//! links all of evoflux, so one binary instead of one per file saves most
//! of a test build's link time. A test's name is its file's module and its
//! function (`run::name`); `cargo nextest run -p evoflux-cli -E
//! 'test(/^sandbox::/)'` runs one file's tests.

// Each former test crate allowed these at its root, which also covered
// `common`; the modules below keep their own copies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod acp;
mod acp_sdk;
mod agents;
mod approvals;
mod browser;
mod channels;
mod chat_screen;
mod chat_tui;
mod claude_agents;
mod claude_files;
mod claude_plugins;
mod cli;
mod code_context;
mod context_evals;
mod costs;
mod crash_loops;
mod delegation_depth;
mod doctor;
mod eval_truth;
mod evals;
mod first_contact;
mod fleet;
mod fleet_truth;
mod front_ends;
mod fuzz;
mod info;
mod lifetime;
mod limits;
mod local_run;
mod mcp;
mod mcp_add;
mod mcp_default_grant;
mod mcp_oauth;
mod other_harnesses;
mod plugin;
mod plugin_isolation;
mod preview;
mod private_files;
mod prompt_commands;
mod replay;
mod replicas;
mod responses_wire;
mod retention;
mod run;
mod sandbox;
mod schedules;
mod serve;
mod session_engine;
mod session_lease;
mod session_titles;
mod skills;
mod skills_run;
mod teams;
mod trust;
mod viewer;
mod web_browser;
mod web_delegation;
mod web_highlight;
mod web_long_sessions;
mod web_mcp;
mod web_mcp_login;
mod web_media;
mod web_preview;
mod web_scheduler;
mod web_session_titles;
mod web_trust;
mod web_ui;
mod web_webbridge;
