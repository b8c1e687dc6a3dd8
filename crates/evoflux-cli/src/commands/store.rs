//! `evoflux store`: the session database itself. Migrate it, and move it
//! between backends: export from one (the data directory's SQLite file, or
//! the PostgreSQL server `EVOFLUX_DATABASE_URL` or `[store] url` names),
//! import into another that is still empty.

use std::io::{BufReader, BufWriter, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use evoflux_app::SessionError;
use evoflux_core::{Diagnostic, Diagnostics};
use evoflux_harness::StoreError;
use serde_json::json;

use crate::output::{Exit, Output};

#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Create the configured database's tables, or bring them up to date,
    /// and say which database it is. `evoflux serve` does the same when it
    /// starts; run it ahead to migrate before replicas roll out.
    Migrate,
    /// Write every session, transcript, pending input, usage total, grant
    /// and schedule run of the configured database to FILE as JSON lines
    /// (`-` for stdout). An existing FILE is left alone.
    Export { file: PathBuf },
    /// Read an export into the configured database, which must be empty:
    /// all of it or, when the file is cut off or damaged, nothing.
    Import { file: PathBuf },
}

pub fn run(out: &Output, command: &StoreCommand) -> anyhow::Result<Exit> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run_async(out, command))
}

async fn run_async(out: &Output, command: &StoreCommand) -> anyhow::Result<Exit> {
    let dirs = match super::resolve_dirs(out) {
        Ok(d) => d,
        Err(exit) => return Ok(exit),
    };
    let app = super::app_context(&dirs)?;
    let store = match app.open_store().await {
        Ok(store) => store,
        Err(e) => return Ok(refused(out, &e)),
    };
    let database = store.database().describe(store.data_dir());
    let backend = store.backend();
    match command {
        StoreCommand::Migrate => {
            let counts = store.row_counts().await?;
            let sessions = counts.get("sessions").copied().unwrap_or(0);
            out.result(
                &json!({ "database": database, "backend": backend.as_str(), "sessions": sessions }),
                || format!("{backend} database {database} is up to date ({sessions} sessions)\n"),
            );
            Ok(Exit::Ok)
        }
        StoreCommand::Export { file } => {
            let moved = if file.as_os_str() == "-" {
                let stdout = std::io::stdout();
                let mut writer = BufWriter::new(stdout.lock());
                let moved = store.export(&mut writer).await;
                writer.flush()?;
                moved
            } else {
                let created = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(file)
                    .with_context(|| {
                        format!(
                            "cannot create {} (an existing file is never overwritten; name a new one)",
                            file.display()
                        )
                    })?;
                let mut writer = BufWriter::new(created);
                let moved = store.export(&mut writer).await;
                writer.flush()?;
                moved
            };
            let moved = match moved {
                Ok(m) => m,
                Err(e) => return Ok(store_refused(out, &e)),
            };
            if file.as_os_str() != "-" {
                out.result(
                    &json!({ "database": database, "file": file, "tables": moved.counts }),
                    || {
                        format!(
                            "exported {} rows from {database} to {}\n",
                            moved.rows(),
                            file.display()
                        )
                    },
                );
            }
            Ok(Exit::Ok)
        }
        StoreCommand::Import { file } => {
            let reader = std::fs::File::open(file)
                .with_context(|| format!("cannot read the export {}", file.display()))?;
            match store.import(BufReader::new(reader)).await {
                Ok(moved) => {
                    out.result(
                        &json!({ "database": database, "file": file, "tables": moved.counts }),
                        || {
                            format!(
                                "imported {} rows from {} into {database}\n",
                                moved.rows(),
                                file.display()
                            )
                        },
                    );
                    Ok(Exit::Ok)
                }
                Err(e) => Ok(store_refused(out, &e)),
            }
        }
    }
}

/// Reports why the store could not be opened, with its codes.
fn refused(out: &Output, e: &SessionError) -> Exit {
    match e.diagnostics() {
        Some(d) => out.diagnostics(d),
        None => out.diagnostics(&Diagnostics::from(vec![Diagnostic::error(
            e.code(),
            e.to_string(),
        )])),
    }
    Exit::Failure
}

fn store_refused(out: &Output, e: &StoreError) -> Exit {
    out.diagnostics(&Diagnostics::from(vec![e.to_diagnostic()]));
    Exit::Failure
}
