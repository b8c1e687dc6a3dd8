//! Safe extraction of `.evoplugin` and `.zip` archives.
//!
//! The rules (names, links, collisions, sizes) and their stable
//! `plugin/archive-*` codes live in [`evoflux_core::archive`], the one
//! implementation every ZIP the host opens goes through; this module keeps
//! the plugin crate's paths to them.

pub use evoflux_core::archive::{
    CheckedEntry, ExtractError, ExtractLimits, ExtractReport, NameProblem, check_entries,
    check_entry_name, extract_archive,
};
