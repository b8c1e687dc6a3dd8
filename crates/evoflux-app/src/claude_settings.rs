//! Claude Code's settings files as the application reads them: which
//! files serve a session (`~/.claude/settings.json`, then each
//! repository's `.claude/settings.json` and `.claude/settings.local.json`
//! from its top down to the workspace), whether a repository is trusted
//! enough for its allow rules, and what `./path` means. The rules and how
//! they meet evoflux's own approvals are the engine's
//! ([`evoflux_harness::permission_rules`]); the session, `doctor` and
//! `info` all come here, so what is reported is what runs. The files are
//! only ever read.

use std::path::{Path, PathBuf};

use evoflux_core::Diagnostics;
use evoflux_core::trust::TrustState;
use evoflux_harness::permission_rules::{self, PermissionRules, RuleBase};

use crate::AppContext;

/// The settings files Claude Code reads in a project, in its order.
const PROJECT_FILES: [&str; 2] = [".claude/settings.json", ".claude/settings.local.json"];
/// The user's.
const USER_FILE: &str = ".claude/settings.json";

/// Claude Code's permission rules for a session's repositories.
#[derive(Debug, Clone, Default)]
pub struct ClaudePermissions {
    pub rules: PermissionRules,
    /// Each file read, with how many of its rules apply.
    pub files: Vec<(PathBuf, usize)>,
    /// What could not be read or mapped (`claude/…` codes).
    pub diagnostics: Diagnostics,
}

impl AppContext {
    /// The user's own instruction files of other harnesses that join a
    /// Coding session's instructions (`[compat] instructions`), from this
    /// application's home.
    pub fn user_instructions(
        &self,
        config: &evoflux_core::config::HarnessConfig,
    ) -> evoflux_harness::workspace_instructions::UserFiles {
        evoflux_harness::workspace_instructions::UserFiles::in_home(
            self.home.as_deref(),
            evoflux_harness::workspace_instructions::InstructionFiles::from_compat(
                config.compat.instructions,
            ),
        )
    }

    /// The rules of Claude Code's settings for `repositories` (canonical
    /// workspace roots; none for a Work session, which reads the user's
    /// file only). `enabled` is `[compat] permissions`.
    pub fn claude_permissions(&self, repositories: &[PathBuf], enabled: bool) -> ClaudePermissions {
        let mut out = ClaudePermissions::default();
        if !enabled {
            return out;
        }
        let cwd = repositories
            .first()
            .cloned()
            .unwrap_or_else(|| self.cwd.clone());
        if let Some(home) = &self.home {
            let base = RuleBase {
                project: home.clone(),
                cwd: cwd.clone(),
                home: Some(home.clone()),
            };
            read_file(&home.join(USER_FILE), &base, true, &mut out);
        }
        if repositories.is_empty() {
            return out;
        }
        let trust = self.trust_states(repositories).unwrap_or_default();
        let mut seen: Vec<PathBuf> = Vec::new();
        for root in repositories {
            let repo = evoflux_core::trust::repository_root(root);
            let trusted = trust
                .iter()
                .any(|(r, state)| *r == repo && *state == TrustState::Trusted);
            let mut chain = evoflux_graph::discover::dirs_to_git_root(root);
            chain.reverse();
            for dir in chain {
                for rel in PROJECT_FILES {
                    let file = dir.join(rel);
                    if seen.contains(&file) {
                        continue;
                    }
                    seen.push(file.clone());
                    let base = RuleBase {
                        project: dir.clone(),
                        cwd: cwd.clone(),
                        home: self.home.clone(),
                    };
                    read_file(&file, &base, trusted, &mut out);
                }
            }
        }
        out
    }
}

fn read_file(file: &Path, base: &RuleBase, trusted: bool, out: &mut ClaudePermissions) {
    let text = match evoflux_core::source::read_source_up_to(
        file,
        evoflux_core::source::MAX_SOURCE_FILE_BYTES,
    ) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(evoflux_core::source::SourceReadError::Io(e))
            if e.kind() == std::io::ErrorKind::NotFound =>
        {
            return;
        }
        Err(e) => {
            out.diagnostics.push(
                evoflux_core::Diagnostic::warning(
                    permission_rules::INVALID,
                    format!("Claude Code's settings are not read: {e}"),
                )
                .with_file(file),
            );
            return;
        }
    };
    let rules =
        permission_rules::from_claude_settings(file, &text, base, trusted, &mut out.diagnostics);
    out.files.push((file.to_path_buf(), rules.len()));
    out.rules.rules.extend(rules);
}
