//! The screen of `evoflux chat`'s full-screen terminal UI.
//!
//! [`app::App`] is a state machine: the CLI feeds it the session's
//! [`evoflux_protocol::Event`]s, the terminal's keys, pastes, mouse and
//! size, and the approvals and questions the session host puts to the
//! user; it answers with [`app::Action`]s (send this message, cancel the
//! turn, this decision) and draws itself into a ratatui frame. It holds no
//! session logic: what a message, a cancellation or a decision does is
//! the harness's, reached by the CLI through the session host. Because it
//! is pure, every screen is tested with ratatui's `TestBackend`.
//!
//! The pieces: the [`transcript`] of cells (messages, tool calls with
//! their [`tools`] summaries and [`diff`]s, delegated children nested and
//! named by their [`lineage`]),
//! rendered [`markdown`] wrapped at word boundaries ([`wrap`]), the
//! [`composer`] at the bottom, [`picker`]s and the completion popup, the
//! [`status`] line, all styled by role through the [`theme`].

pub mod app;
pub mod composer;
pub mod diff;
pub mod lineage;
pub mod markdown;
pub mod picker;
pub mod status;
pub mod text;
pub mod theme;
pub mod tools;
pub mod transcript;
pub mod wrap;

pub use app::{Action, App};
pub use theme::Theme;
