//! Agent Plugins (work in progress).
