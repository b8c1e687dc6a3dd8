//! Mode projections over one slot's candidates.
//!
//! The composer hands over, per `skills/<name>` slot, the candidates in
//! precedence order (highest first), each already overlaid. Two different
//! questions are asked of that list:
//!
//! * **runtime** (catalog, editor, composer, explicit selection, the skill
//!   tool): the first candidate that is valid *and* available in the mode.
//!   An invalid winner never blocks a valid fallback, and a fallback that is
//!   invalid never enters a runtime surface.
//! * **management** (Settings): the true winner, even if invalid, so it
//!   can be repaired; with a mode, that mode's effective choice, else the
//!   invalid winner, else nothing.

use evoflux_core::{AppMode, Diagnostic, Diagnostics};
use serde::Serialize;

use crate::bundle::SkillRecord;
use crate::modes::ModeSet;

/// The runtime choice for one slot in `mode`.
pub fn runtime_choice(candidates: &[SkillRecord], mode: AppMode) -> Option<&SkillRecord> {
    candidates.iter().find(|r| r.is_runnable_in(mode))
}

/// Why Settings shows a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ManagementRole {
    /// The effective implementation (unscoped: the precedence winner, which
    /// is also valid).
    Effective,
    /// An invalid winner shown only so it can be repaired; never runtime.
    InvalidWinner,
}

/// What Settings shows for one slot.
#[derive(Debug, Clone, Serialize)]
pub struct ManagementEntry<'a> {
    pub record: &'a SkillRecord,
    pub role: ManagementRole,
    /// The modes that have an effective (valid, available) implementation
    /// in this slot.
    pub effective_modes: ModeSet,
    pub diagnostics: Diagnostics,
}

/// The management choice for one slot; `mode = None` is the unscoped view.
pub fn management_choice(
    candidates: &[SkillRecord],
    mode: Option<AppMode>,
) -> Option<ManagementEntry<'_>> {
    let winner = candidates.first()?;
    let work = runtime_choice(candidates, AppMode::Work);
    let coding = runtime_choice(candidates, AppMode::Coding);
    let effective_modes = [(AppMode::Work, work), (AppMode::Coding, coding)]
        .into_iter()
        .filter(|(_, r)| r.is_some())
        .map(|(m, _)| m)
        .collect();
    let mut diagnostics = Diagnostics::new();
    if let (Some(w), Some(c)) = (work, coding)
        && !std::ptr::eq(w, c)
    {
        diagnostics.push(
            Diagnostic::warning(
                "skill/mode-specific-collision",
                format!(
                    "`{}` resolves to different bundles in Work ({}) and Coding ({})",
                    winner.name,
                    w.skill_file.display(),
                    c.skill_file.display()
                ),
            )
            .with_file(&winner.skill_file),
        );
    }
    let (record, role) = match mode {
        None => {
            let role = if winner.valid {
                ManagementRole::Effective
            } else {
                ManagementRole::InvalidWinner
            };
            (winner, role)
        }
        Some(m) => match runtime_choice(candidates, m) {
            Some(r) => (r, ManagementRole::Effective),
            None if !winner.valid => (winner, ManagementRole::InvalidWinner),
            None => return None,
        },
    };
    Some(ManagementEntry {
        record,
        role,
        effective_modes,
        diagnostics,
    })
}

/// The runtime projection of many slots: one record per slot that has a
/// runtime choice, then one per name (a later slot whose winner declares a
/// name already taken is shadowed, with a warning), sorted by name.
pub fn runtime_projection<'a, I>(slots: I, mode: AppMode) -> (Vec<&'a SkillRecord>, Diagnostics)
where
    I: IntoIterator<Item = &'a [SkillRecord]>,
{
    let mut chosen: Vec<&SkillRecord> = Vec::new();
    let mut diagnostics = Diagnostics::new();
    for slot in slots {
        let Some(record) = runtime_choice(slot, mode) else {
            continue;
        };
        match chosen.iter().find(|c| c.name == record.name) {
            Some(first) => diagnostics.push(
                Diagnostic::warning(
                    "skill/shadowed-duplicate",
                    format!(
                        "skill name `{}` is already provided by {}; this bundle is shadowed",
                        record.name,
                        first.skill_file.display()
                    ),
                )
                .with_file(&record.skill_file),
            ),
            None => chosen.push(record),
        }
    }
    chosen.sort_by(|a, b| a.name.cmp(&b.name));
    (chosen, diagnostics)
}
