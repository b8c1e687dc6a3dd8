//! `evoflux sessions export` and `evoflux sessions replay`: thin over the
//! harness's `replay` module, which owns recording, export and replay.

use std::path::{Path, PathBuf};

use evoflux_app::replay::{self, DivergedPart, ReplayError, ReplayOptions, ReplayReport};
use evoflux_core::dirs::Dirs;
use evoflux_core::ids::SessionId;
use evoflux_harness::StoreError;
use serde::Serialize;

use crate::output::{Exit, Output};

#[derive(Serialize)]
struct Exported<'a> {
    session: String,
    file: &'a Path,
    steps: usize,
    redacted: &'a [replay::Redaction],
}

pub(crate) async fn export(
    out: &Output,
    dirs: &Dirs,
    id: SessionId,
    file: &Path,
) -> anyhow::Result<Exit> {
    let app = super::app_context(dirs)?;
    let store = app.open_store().await?;
    let secrets = replay::secrets(&app, utf8_vars());
    let exported = match replay::export(&store, id, &secrets).await {
        Ok(e) => e,
        Err(ReplayError::Store(e @ StoreError::SessionNotFound(_))) => {
            out.failure(&anyhow::anyhow!(
                "{e} [{}]; list sessions with `evoflux sessions list`",
                e.code()
            ));
            return Ok(Exit::Invalid);
        }
        Err(e @ ReplayError::NothingRecorded { .. }) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            return Ok(Exit::Invalid);
        }
        Err(e) => return Err(e.into()),
    };
    let yaml = exported.to_yaml()?;
    evoflux_core::atomic::write_atomic(file, yaml.as_bytes(), Default::default())
        .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", file.display()))?;
    let redacted = &exported.recording.redacted;
    out.result(
        &Exported {
            session: id.to_string(),
            file,
            steps: exported.steps(),
            redacted,
        },
        || {
            let mut s = format!(
                "wrote {} ({} model call(s) of session {id}); replay it with `evoflux sessions replay {}`\n",
                file.display(),
                exported.steps(),
                file.display()
            );
            for r in redacted {
                s.push_str(&format!(
                    "redacted: the value of {} (step {}, {})\n",
                    r.name, r.step, r.part
                ));
            }
            s
        },
    );
    Ok(Exit::Ok)
}

/// The environment's variables that are text (`std::env::vars` panics on
/// any other).
fn utf8_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect()
}

pub(crate) async fn replay(
    out: &Output,
    dirs: &Dirs,
    file: &Path,
    workspaces: &[PathBuf],
    keep: bool,
) -> anyhow::Result<Exit> {
    let app = super::app_context(dirs)?;
    let options = ReplayOptions {
        workspaces: workspaces.to_vec(),
        keep,
        secrets: replay::secrets(&app, utf8_vars()),
    };
    let report = match replay::replay(&app, file, &options).await {
        Ok(r) => r,
        Err(
            e @ (ReplayError::NotExported { .. }
            | ReplayError::NoWorkspace { .. }
            | ReplayError::Checkout { .. }
            | ReplayError::Setup(_)),
        ) => {
            out.failure(&anyhow::anyhow!("{e} [{}]", e.code()));
            return Ok(Exit::Invalid);
        }
        Err(e) => return Err(e.into()),
    };
    out.result(&report, || human(&report));
    Ok(if report.matched_all() {
        Exit::Ok
    } else {
        Exit::Failure
    })
}

fn human(r: &ReplayReport) -> String {
    let secs = r.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        r.matched as f64 / secs
    } else {
        0.0
    };
    let mut s = match &r.divergence {
        None => format!(
            "replay matched: {} model call(s) over {} turn(s) of session {} ({secs:.2}s, {rate:.0} steps/s)\n",
            r.steps, r.turns, r.session
        ),
        Some(d) => {
            let part = match d.part {
                DivergedPart::LastMessage => "the last message".to_owned(),
                DivergedPart::SystemPrompt => "the system prompt".to_owned(),
                DivergedPart::ToolList => "the tool list".to_owned(),
                DivergedPart::Input { index } => format!("new message {}", index + 1),
                DivergedPart::ExtraCall => "an extra model call".to_owned(),
                DivergedPart::MissingCalls { .. } => "fewer model calls".to_owned(),
                DivergedPart::TurnFailed => "a failed turn".to_owned(),
            };
            let mut s = format!(
                "replay diverged at step {} of {}{}: {part}\n  recorded: {}\n  this build: {}\n",
                d.step,
                r.steps,
                d.session
                    .as_ref()
                    .map(|l| format!(" ({l})"))
                    .unwrap_or_default(),
                d.expected,
                d.actual
            );
            if let Some(diff) = &d.diff {
                s.push_str(diff);
            }
            s
        }
    };
    if let Some(dir) = &r.kept {
        s.push_str(&format!("kept the replay's files in {}\n", dir.display()));
    }
    s
}
