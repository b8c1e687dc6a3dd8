//! Moving a store between backends: `evoflux store export` and `import`.
//!
//! An export is JSON lines: a header naming the format, its version and
//! the backend it came from, then one line per row (`{"table", "row"}`)
//! with every column as written (text, integer or null), table by table in
//! [`TABLES`] order, and a trailer with each table's row count so a cut-off
//! file is refused instead of half imported. Rows are streamed both ways;
//! neither side holds a table in memory.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyTypeInfoKind;
use sqlx::{Column, Row, TypeInfo, ValueRef};

use crate::database::Backend;
use crate::error::StoreError;
use crate::store::Store;

/// The format an export declares in its header.
pub const EXPORT_FORMAT: &str = "evoflux-store-export";
const EXPORT_VERSION: u32 = 1;

/// One table of the store and the key its rows are exported in, so an
/// export is the same whichever backend wrote it.
#[derive(Debug, Clone, Copy)]
pub struct Table {
    pub name: &'static str,
    key: &'static str,
    /// The database numbers its `id`: after an import the numbering
    /// continues after the highest imported id.
    numbered: bool,
}

const fn table(name: &'static str, key: &'static str, numbered: bool) -> Table {
    Table {
        name,
        key,
        numbered,
    }
}

/// Every table of the store, parents before the rows that refer to them.
/// A test holds this list to the schema, so a new table cannot be left out
/// of exports.
pub const TABLES: &[Table] = &[
    table("sessions", "id", false),
    table("transcript_entries", "session_id, seq", false),
    table("pending_inputs", "id", true),
    table("usage_totals", "session_id", false),
    table("approval_grants", "id", true),
    table("schedule_state", "name", false),
    table("schedule_runs", "id", true),
    table("connection_tools", "session_id, owner, server, tool", false),
    table("channel_threads", "route, thread", false),
    table("request_parts", "sha256", false),
    table("model_requests", "id", true),
    table("session_commits", "session_id, root", false),
    table("session_leases", "session_id", false),
    table("session_events", "session_id, id", false),
    table("session_signals", "id", true),
];

/// Tables that only index others (SQLite's full-text index of messages and
/// the tables FTS5 keeps for it, all named with this prefix): never
/// exported, rebuilt by triggers as an import writes the rows they index.
pub const DERIVED_TABLE_PREFIX: &str = "transcript_search";

/// One line of an export.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Line {
    Header {
        format: String,
        version: u32,
        backend: String,
    },
    Row {
        table: String,
        row: BTreeMap<String, Value>,
    },
    End {
        counts: BTreeMap<String, u64>,
    },
}

/// A column's value: the store writes only text, integers and nulls.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
enum Value {
    Null,
    Int(i64),
    Text(String),
}

/// What an export or import moved, by table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Transferred {
    pub counts: BTreeMap<String, u64>,
}

impl Transferred {
    pub fn rows(&self) -> u64 {
        self.counts.values().sum()
    }
}

impl Store {
    /// Each table's row count, by name.
    pub async fn row_counts(&self) -> Result<BTreeMap<&'static str, u64>, StoreError> {
        let mut out = BTreeMap::new();
        for table in TABLES {
            let n: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
                "SELECT COUNT(*) FROM {}",
                table.name
            )))
            .fetch_one(self.pool())
            .await?;
            out.insert(table.name, crate::store::to_u64("row count", n)?);
        }
        Ok(out)
    }

    /// Writes every row to `out` as JSON lines.
    pub async fn export(&self, out: &mut impl Write) -> Result<Transferred, StoreError> {
        let io = |e: std::io::Error| StoreError::Transfer {
            line: 0,
            detail: e.to_string(),
        };
        write_line(
            out,
            &Line::Header {
                format: EXPORT_FORMAT.to_owned(),
                version: EXPORT_VERSION,
                backend: self.backend().as_str().to_owned(),
            },
        )
        .map_err(io)?;
        let mut moved = Transferred::default();
        for table in TABLES {
            let mut rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT * FROM {} ORDER BY {}",
                table.name, table.key
            )))
            .fetch(self.pool());
            let table = &table.name;
            let mut n = 0u64;
            while let Some(row) = rows.try_next().await? {
                let mut values = BTreeMap::new();
                for (i, column) in row.columns().iter().enumerate() {
                    values.insert(column.name().to_owned(), value_of(&row, i, table)?);
                }
                write_line(
                    out,
                    &Line::Row {
                        table: (*table).to_owned(),
                        row: values,
                    },
                )
                .map_err(io)?;
                n += 1;
            }
            moved.counts.insert((*table).to_owned(), n);
        }
        write_line(
            out,
            &Line::End {
                counts: moved.counts.clone(),
            },
        )
        .map_err(io)?;
        out.flush().map_err(io)?;
        Ok(moved)
    }

    /// Reads an export into this store, which must hold no sessions: an
    /// import adds nothing to, and overwrites nothing of, a store in use.
    /// All or nothing: one transaction, committed only when the trailer's
    /// counts match what was read.
    pub async fn import(&self, input: impl BufRead) -> Result<Transferred, StoreError> {
        let existing = self.row_counts().await?;
        if let Some((table, _)) = existing.iter().find(|(_, n)| **n > 0) {
            return Err(StoreError::ImportIntoNonEmpty {
                database: self.database().describe(self.data_dir()),
                table: (*table).to_owned(),
            });
        }
        let bad = |line: usize, detail: String| StoreError::Transfer { line, detail };
        let mut tx = self.pool().begin().await?;
        let mut moved = Transferred::default();
        let mut header = false;
        let mut trailer = None;
        for (i, text) in input.lines().enumerate() {
            let number = i + 1;
            let text = text.map_err(|e| bad(number, e.to_string()))?;
            if text.trim().is_empty() {
                continue;
            }
            if trailer.is_some() {
                return Err(bad(number, "a line after the end of the export".into()));
            }
            let line: Line = serde_json::from_str(&text).map_err(|e| bad(number, e.to_string()))?;
            match line {
                Line::Header {
                    format, version, ..
                } => {
                    if header || format != EXPORT_FORMAT || version != EXPORT_VERSION {
                        return Err(bad(
                            number,
                            format!(
                                "expected one header of {EXPORT_FORMAT} version {EXPORT_VERSION}, found {format} version {version}"
                            ),
                        ));
                    }
                    header = true;
                }
                Line::Row { .. } | Line::End { .. } if !header => {
                    return Err(bad(number, format!("the file is not an {EXPORT_FORMAT}")));
                }
                Line::Row { table, row } => {
                    let Some(table) = TABLES.iter().find(|t| t.name == table) else {
                        return Err(bad(number, format!("unknown table `{table}`")));
                    };
                    insert(&mut tx, table.name, &row)
                        .await
                        .map_err(|e| bad(number, e.to_string()))?;
                    *moved.counts.entry(table.name.to_owned()).or_default() += 1;
                }
                Line::End { counts } => trailer = Some(counts),
            }
        }
        let Some(expected) = trailer else {
            return Err(bad(
                0,
                "the export ends without its trailer: it was cut off".into(),
            ));
        };
        let read: BTreeMap<String, u64> = moved
            .counts
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        let declared: BTreeMap<String, u64> =
            expected.into_iter().filter(|(_, n)| *n > 0).collect();
        if read != declared {
            return Err(bad(
                0,
                format!("the trailer declares {declared:?} rows but the file holds {read:?}"),
            ));
        }
        if let Backend::Postgres = self.backend() {
            for table in TABLES.iter().filter(|t| t.numbered) {
                let table = table.name;
                sqlx::query(sqlx::AssertSqlSafe(format!(
                    "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                     COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
                )))
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(moved)
    }
}

fn write_line(out: &mut impl Write, line: &Line) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

fn value_of(row: &sqlx::any::AnyRow, i: usize, table: &str) -> Result<Value, StoreError> {
    let raw = row.try_get_raw(i)?;
    if raw.is_null() {
        return Ok(Value::Null);
    }
    let kind = raw.type_info().kind();
    match kind {
        AnyTypeInfoKind::SmallInt | AnyTypeInfoKind::Integer | AnyTypeInfoKind::BigInt => {
            Ok(Value::Int(row.try_get(i)?))
        }
        AnyTypeInfoKind::Text => Ok(Value::Text(row.try_get(i)?)),
        AnyTypeInfoKind::Null
        | AnyTypeInfoKind::Bool
        | AnyTypeInfoKind::Real
        | AnyTypeInfoKind::Double
        | AnyTypeInfoKind::Blob => Err(StoreError::Corrupt {
            what: "exported column",
            detail: format!("{table}: a {} value", raw.type_info().name()),
        }),
    }
}

async fn insert(
    tx: &mut sqlx::Transaction<'_, sqlx::Any>,
    table: &str,
    row: &BTreeMap<String, Value>,
) -> Result<(), StoreError> {
    // A null is left out: every nullable column defaults to null, and a
    // typed null would not fit PostgreSQL's integer columns.
    let present: Vec<(&str, &Value)> = row
        .iter()
        .filter(|(_, v)| **v != Value::Null)
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let columns: Vec<&str> = present.iter().map(|(k, _)| *k).collect();
    if let Some(bad) = columns.iter().find(|c| {
        !c.chars()
            .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '_')
    }) {
        return Err(StoreError::Corrupt {
            what: "imported column",
            detail: format!("{table}.{bad}"),
        });
    }
    let placeholders: Vec<String> = (1..=columns.len()).map(|i| format!("${i}")).collect();
    let sql = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        columns.join(", "),
        placeholders.join(", ")
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
    for (_, value) in &present {
        query = match value {
            Value::Null => query,
            Value::Int(n) => query.bind(*n),
            Value::Text(s) => query.bind(s.clone()),
        };
    }
    query.execute(&mut **tx).await?;
    Ok(())
}
