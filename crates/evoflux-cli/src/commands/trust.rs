//! `evoflux trust`: record that a repository may act for the user.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::Args;
use evoflux_core::trust::{TrustState, repository_root};
use evoflux_core::{Diagnostic, Diagnostics};
use serde::Serialize;

use crate::output::{Exit, Output};

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// A directory of the repository (default: the current directory); the
    /// repository is the nearest enclosing directory with `.git`.
    pub dir: Option<PathBuf>,
    /// Forget the trust given to this repository.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List the trusted repositories and whether each still is.
    #[arg(long)]
    pub list: bool,
}

#[derive(Serialize)]
struct Entry {
    path: PathBuf,
    remote: Option<String>,
    trust: TrustState,
}

pub fn run(out: &Output, args: &TrustArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = super::app_context(&dirs)?;
    let mut list = app.trust_list()?;
    if args.list {
        let entries: Vec<Entry> = list
            .repositories()
            .iter()
            .map(|r| Entry {
                path: r.path.clone(),
                remote: r.remote.clone(),
                trust: list.state(&r.path),
            })
            .collect();
        out.result(&entries, || {
            let mut text = String::new();
            if entries.is_empty() {
                text.push_str("no trusted repositories\n");
            }
            for e in &entries {
                let state = match &e.trust {
                    TrustState::Trusted => "trusted",
                    TrustState::Untrusted => "untrusted",
                    TrustState::RemoteChanged { .. } => "untrusted (its remote changed)",
                };
                let _ = writeln!(
                    text,
                    "{}  {}  {state}",
                    e.path.display(),
                    e.remote.as_deref().unwrap_or("(no remote)")
                );
            }
            text
        });
        return Ok(Exit::Ok);
    }
    let dir = match &args.dir {
        Some(d) => app.cwd.join(d),
        None => app.cwd.clone(),
    };
    let dir = match dir.canonicalize() {
        Ok(d) if d.is_dir() => d,
        Ok(d) => return Ok(not_a_directory(out, &d, "it is not a directory".into())),
        Err(e) => return Ok(not_a_directory(out, &dir, e.to_string())),
    };
    let repo = repository_root(&dir);
    if args.revoke {
        let was = list.untrust(&repo)?;
        let entry = Entry {
            trust: list.state(&repo),
            remote: None,
            path: repo,
        };
        out.result(&entry, || match was {
            true => format!(
                "{} is no longer trusted: its command tools, MCP servers, channels and schedules \
                 wait for trust again\n",
                entry.path.display()
            ),
            false => format!("{} was not trusted\n", entry.path.display()),
        });
        return Ok(Exit::Ok);
    }
    let remote = list.trust(&repo)?.remote.clone();
    let entry = Entry {
        trust: list.state(&repo),
        remote,
        path: repo,
    };
    out.result(&entry, || {
        format!(
            "trusted {}{}: from the next run its command tools, MCP servers, channels and \
             schedules load, and its config may define providers (never key variables)\n",
            entry.path.display(),
            entry
                .remote
                .as_deref()
                .map(|r| format!(" (origin {r})"))
                .unwrap_or_default()
        )
    });
    Ok(Exit::Ok)
}

fn not_a_directory(out: &Output, dir: &std::path::Path, why: String) -> Exit {
    out.diagnostics(&Diagnostics::from(vec![
        Diagnostic::error(
            "trust/not-a-directory",
            format!("cannot trust {}: {why}", dir.display()),
        )
        .with_file(dir),
    ]));
    Exit::Invalid
}
