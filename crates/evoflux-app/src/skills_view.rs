//! The skills as Settings sees them, for every front end (`evoflux skills
//! list`, `GET /api/skills`, `GET /api/settings/skills`): the winner of each
//! slot even when it is invalid (so it can be repaired), with its
//! preferences, the modes it is effective in and its diagnostics.

use std::path::PathBuf;

use evoflux_core::dirs::Dirs;
use evoflux_core::{AppMode, Diagnostics};
use evoflux_graph::CompiledGraph;
use evoflux_skills::projection::{ManagementRole, management_choice};
use evoflux_skills::selection::{SkillSlot, skill_slots};
use evoflux_skills::{LoadOptions, ModeSet, PlaceholderDirs, SkillSettingsStore};
use serde::Serialize;

use crate::{AppContext, SessionError};

/// How far a view reads each slot: its winner settled, or every candidate.
pub use evoflux_skills::selection::Depth;

/// The skill slots of one compiled graph with the user's preferences.
#[derive(Debug)]
pub struct SkillsView {
    pub slots: Vec<SkillSlot>,
    pub store: SkillSettingsStore,
    pub diagnostics: Diagnostics,
}

/// One skill of the management projection.
#[derive(Debug, Clone, Serialize)]
pub struct SkillRow {
    pub name: String,
    pub description: String,
    pub source: String,
    pub role: ManagementRole,
    pub valid: bool,
    pub modes: ModeSet,
    pub effective_modes: ModeSet,
    pub implicit: bool,
    pub manual: bool,
    pub editable: bool,
    /// The opaque id preference changes are keyed by.
    pub settings_id: String,
    pub skill_file: String,
    pub diagnostics: Vec<String>,
}

impl SkillsView {
    /// Reads the skill slots of `graph` to `depth`, with the preference
    /// store of `dirs`.
    pub fn load(dirs: &Dirs, graph: &CompiledGraph, depth: Depth) -> SkillsView {
        let store = SkillSettingsStore::in_config_dir(dirs.config_dir());
        let snapshot = store.read();
        let options = LoadOptions::new(PlaceholderDirs::from_config_dir(dirs.config_dir()));
        let (slots, problems) = skill_slots(graph, &options, &snapshot, depth);
        let mut diagnostics: Diagnostics = graph
            .diagnostics
            .iter()
            .filter(|d| {
                d.locator
                    .slot
                    .as_ref()
                    .is_some_and(|s| s.kind == evoflux_core::SlotKind::Skill)
            })
            .cloned()
            .collect();
        diagnostics.extend(problems);
        diagnostics.extend(snapshot.diagnostics());
        SkillsView {
            slots,
            store,
            diagnostics,
        }
    }

    /// The slot of the skill `name` (its slot name or its winner's name).
    pub fn slot(&self, name: &str) -> Option<&SkillSlot> {
        self.slots
            .iter()
            .find(|s| s.name == name || s.candidates.first().is_some_and(|c| c.name == name))
    }

    /// The management projection, for `mode` or every mode.
    pub fn rows(&self, mode: Option<AppMode>) -> Vec<SkillRow> {
        self.slots
            .iter()
            .filter_map(|s| management_choice(&s.candidates, mode))
            .filter(|e| mode.is_none_or(|m| e.record.modes().contains(m) || !e.record.valid))
            .map(|e| SkillRow {
                name: e.record.name.clone(),
                description: e.record.description.clone(),
                source: e.record.origin.source.label(),
                role: e.role,
                valid: e.record.valid,
                modes: e.record.modes(),
                effective_modes: e.effective_modes,
                implicit: e.record.prefs.allow_implicit_invocation,
                manual: e.record.prefs.user_invocable,
                editable: e.record.editable,
                settings_id: e.record.settings_id.as_str().to_owned(),
                skill_file: e.record.skill_file.display().to_string(),
                diagnostics: e
                    .record
                    .diagnostics
                    .codes()
                    .into_iter()
                    .map(str::to_owned)
                    .collect(),
            })
            .collect()
    }
}

impl AppContext {
    /// The skills of the graph compiled for `workspaces`, read to `depth`,
    /// with the user's preferences: what a skills listing, a skill's page
    /// or a preference change starts from.
    pub fn skills_view(
        &self,
        workspaces: &[PathBuf],
        depth: Depth,
    ) -> Result<SkillsView, SessionError> {
        let graph = self.compile(workspaces)?;
        Ok(SkillsView::load(&self.dirs, &graph, depth))
    }
}
