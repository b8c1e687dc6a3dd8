//! `evoflux trust`: show what a repository would be allowed to run, ask,
//! and record that it may act for the user.

use std::fmt::Write as _;
use std::io::{BufRead, IsTerminal, Write as _};
use std::path::PathBuf;

use clap::Args;
use evoflux_app::trust_review::{ReviewItem, TrustReview, describe};
use evoflux_core::trust::{CHANGED_SINCE_TRUST, GrantStatus, TrustState, repository_root};
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
    /// List the trusted repositories, whether each still is, and what
    /// changed in each since it was trusted.
    #[arg(long)]
    pub list: bool,
    /// Trust without asking (for scripts); what it grants is still listed.
    #[arg(long, short = 'y', conflicts_with_all = ["list", "revoke"])]
    pub yes: bool,
}

#[derive(Serialize)]
struct Entry {
    path: PathBuf,
    remote: Option<String>,
    trust: TrustState,
    /// What changed, or was added, since the repository was trusted; it
    /// waits until the repository is trusted again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    changed: Vec<ReviewItem>,
}

/// The outcome of `evoflux trust DIR`: what it grants, and whether it does.
#[derive(Serialize)]
struct Granted<'a> {
    path: &'a std::path::Path,
    remote: Option<&'a str>,
    trust: TrustState,
    items: &'a [ReviewItem],
}

pub fn run(out: &Output, args: &TrustArgs) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = super::app_context(&dirs)?;
    let mut list = app.trust_list()?;
    if args.list {
        return list_trusted(out, &app, &list);
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
            changed: Vec::new(),
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
    let review = app.trust_review(&dir)?;
    out.diagnostics(&review.diagnostics);
    if !out.json {
        print!("{}", render_review(&review));
        let _ = std::io::stdout().flush();
    }
    let answer = if !review.grants_anything_new() || args.yes {
        Answer::Yes
    } else if std::io::stdin().is_terminal() {
        ask(&review)?
    } else {
        Answer::NoTerminal
    };
    match answer {
        Answer::Yes => {}
        Answer::No | Answer::NoTerminal => {
            out.result(
                &Granted {
                    path: &review.repository,
                    remote: review.remote.as_deref(),
                    trust: list.state(&repo),
                    items: &review.items,
                },
                || "nothing was trusted\n".to_owned(),
            );
            if answer == Answer::No {
                return Ok(Exit::Failure);
            }
            out.diagnostics(&Diagnostics::from(vec![
                Diagnostic::error(
                    "trust/confirmation-needed",
                    format!(
                        "nothing was trusted: `evoflux trust` asks before it grants what it \
                         lists, and stdin is not a terminal; pass --yes to trust {} as listed",
                        review.repository.display()
                    ),
                )
                .with_file(&review.repository),
            ]));
            return Ok(Exit::Invalid);
        }
    }
    let record = app.grant(&review)?;
    let granted = Granted {
        path: &record.path,
        remote: record.remote.as_deref(),
        trust: app.trust_list()?.state(&record.path),
        items: &review.items,
    };
    out.result(&granted, || {
        format!(
            "trusted {}{}: from the next run what is listed above may run, and its config may \
             define providers (never key variables); what changes or is added later waits \
             until you trust it again\n",
            granted.path.display(),
            granted
                .remote
                .map(|r| format!(" (origin {r})"))
                .unwrap_or_default()
        )
    });
    Ok(Exit::Ok)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    Yes,
    No,
    NoTerminal,
}

/// Asks on the terminal; anything but `y`/`yes` is no.
fn ask(review: &TrustReview) -> anyhow::Result<Answer> {
    eprint!("Trust {}? [y/N] ", review.repository.display());
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(match line.trim() {
        "y" | "Y" | "yes" | "Yes" => Answer::Yes,
        _ => Answer::No,
    })
}

fn list_trusted(
    out: &Output,
    app: &evoflux_app::AppContext,
    list: &evoflux_core::trust::TrustList,
) -> anyhow::Result<Exit> {
    let mut diags = Diagnostics::new();
    let mut entries = Vec::new();
    for r in list.repositories() {
        let trust = list.state(&r.path);
        let changed: Vec<ReviewItem> = match (&trust, r.path.is_dir()) {
            (TrustState::Trusted, true) => app
                .trust_review(&r.path)?
                .items
                .into_iter()
                .filter(|i| i.status != GrantStatus::Granted)
                .collect(),
            _ => Vec::new(),
        };
        diags.extend(changed.iter().map(|i| {
            let d = Diagnostic::warning(
                CHANGED_SINCE_TRUST,
                format!(
                    "`{}` ({}) {} since you trusted {}: it waits until you trust the repository \
                     again (evoflux trust)",
                    i.slot,
                    i.source,
                    status_words(i.status),
                    r.path.display()
                ),
            )
            .with_file(&i.file);
            // A review names its slot by the text trust records keep.
            match i.slot.parse() {
                Ok(slot) => d.with_slot(slot),
                Err(_) => d,
            }
        }));
        entries.push(Entry {
            path: r.path.clone(),
            remote: r.remote.clone(),
            trust,
            changed,
        });
    }
    out.diagnostics(&diags);
    out.result(&entries, || {
        let mut text = String::new();
        if entries.is_empty() {
            text.push_str("no trusted repositories\n");
        }
        for e in &entries {
            let state = match &e.trust {
                TrustState::Trusted if !e.changed.is_empty() => {
                    format!("trusted; {} changed since", e.changed.len())
                }
                TrustState::Trusted => "trusted".to_owned(),
                TrustState::Untrusted => "untrusted".to_owned(),
                TrustState::RemoteChanged { .. } => "untrusted (its remote changed)".to_owned(),
            };
            let _ = writeln!(
                text,
                "{}  {}  {state}",
                e.path.display(),
                e.remote.as_deref().unwrap_or("(no remote)")
            );
            for i in &e.changed {
                let _ = writeln!(text, "  {} {}  {}", i.status.as_str(), i.slot, i.source);
            }
        }
        text
    });
    Ok(Exit::Ok)
}

fn status_words(status: GrantStatus) -> &'static str {
    match status {
        GrantStatus::Granted => "granted",
        GrantStatus::Changed => "changed",
        GrantStatus::Added => "was added",
    }
}

/// The listing of what trusting a repository grants, one line per source
/// with what it runs, and the changes since it was last trusted marked.
pub(crate) fn render_review(review: &TrustReview) -> String {
    let mut text = String::new();
    let origin = review
        .remote
        .as_deref()
        .map(|r| format!(" (origin {r})"))
        .unwrap_or_default();
    if review.items.is_empty() {
        let _ = writeln!(
            text,
            "{}{origin} defines nothing that trust would let run",
            review.repository.display()
        );
        return text;
    }
    let _ = writeln!(
        text,
        "Trusting {}{origin} lets it:",
        review.repository.display()
    );
    for item in &review.items {
        let mark = match (review.trusted, item.status) {
            (false, _) | (true, GrantStatus::Granted) => "",
            (true, GrantStatus::Changed) => "  [changed since you trusted it]",
            (true, GrantStatus::Added) => "  [new since you trusted it]",
        };
        let _ = writeln!(text, "  {}{mark}\n      {}", describe(item), item.source);
    }
    text.push_str(
        "Keys never reach it: a repository's MCP servers and tools get no key variable from \
         your environment, and its providers no key.\n",
    );
    text
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
