//! Which folders of prompt commands a session reads, so a Claude Code or
//! codex user's own commands work as `/name` in every front end: a
//! trusted repository's `.claude/commands` (from the workspace up to its
//! git root, nearest first), then the user's `~/.claude/commands` and
//! `~/.codex/prompts`. A repository's commands are prompts its authors
//! wrote for the model, so they are read only from a repository the user
//! trusts, as its Claude subagents are. The files are never written;
//! parsing and expansion are the harness's
//! ([`evoflux_harness::prompt_commands`]).

use std::path::PathBuf;

use evoflux_core::Diagnostic;
use evoflux_harness::prompt_commands::{self, CommandDir, CommandFolder, FileCommand};

use crate::{AppContext, SessionError};

/// Where Claude Code keeps custom commands, in a project and in the home.
pub const CLAUDE_COMMANDS: &str = ".claude/commands";
/// Where codex keeps custom prompts, in the home.
pub const CODEX_PROMPTS: &str = ".codex/prompts";

impl AppContext {
    /// The command folders for a session over `workspaces` (the start
    /// directory when empty), in precedence order.
    pub fn prompt_command_dirs(
        &self,
        workspaces: &[PathBuf],
    ) -> Result<Vec<CommandDir>, SessionError> {
        let opts = self.root_options(workspaces)?;
        let mut dirs: Vec<CommandDir> = Vec::new();
        let mut push = |dir: PathBuf, folder| {
            if !dirs.iter().any(|d| d.dir == dir) {
                dirs.push(CommandDir { dir, folder });
            }
        };
        for ws in &opts.workspaces {
            let repo = evoflux_core::trust::repository_root(ws);
            if !opts.trusted.contains(&repo) {
                continue;
            }
            for dir in evoflux_graph::discover::dirs_to_git_root(ws) {
                push(dir.join(CLAUDE_COMMANDS), CommandFolder::ClaudeCommands);
            }
        }
        if let Some(home) = &self.home {
            push(home.join(CLAUDE_COMMANDS), CommandFolder::ClaudeCommands);
            push(home.join(CODEX_PROMPTS), CommandFolder::CodexPrompts);
        }
        Ok(dirs)
    }

    /// The commands of those folders, with what could not be read.
    pub fn prompt_files(
        &self,
        workspaces: &[PathBuf],
    ) -> Result<(Vec<FileCommand>, Vec<Diagnostic>), SessionError> {
        Ok(prompt_commands::load_files(
            &self.prompt_command_dirs(workspaces)?,
        ))
    }
}
