//! Which database holds the sessions, and how a pool on it is opened.
//!
//! One set of queries serves both backends: they are written in the
//! dialect SQLite and PostgreSQL share (`$N` placeholders, `ON CONFLICT`,
//! `RETURNING`, `CAST(… AS BIGINT)` around sums) and run through sqlx's
//! `Any` driver, so there is one store, not two copies of every rule. Each
//! backend has its own migrations (`migrations/sqlite`,
//! `migrations/postgres`), because their DDL differs.

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, ConnectOptions, Executor};

use crate::error::StoreError;

/// Other processes (a second CLI, the server) may hold SQLite's write lock
/// for a moment; wait this long before reporting the database as busy.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Connections per process. SQLite takes one writer at a time, and a second
/// connection of the same process waiting for its lock sleeps in SQLite's
/// busy handler (1, 2, 5, 10, 25 ms…) rather than queueing: with four, a
/// server under load spent its latency there (per-event p99 16 ms against 7
/// with one). One connection makes the process's statements an async queue
/// in arrival order; readers of other processes still read beside it (WAL).
/// A PostgreSQL server is shared by every replica, so each takes a few.
const SQLITE_CONNECTIONS: u32 = 1;
const POSTGRES_CONNECTIONS: u32 = 8;

/// The advisory lock replicas take around migrating one PostgreSQL
/// database (any constant no other lock of evoflux's uses).
const MIGRATION_LOCK: i64 = 0x0065_766f_666c_7578;

/// Where the session database lives. Closed: every rule that differs
/// between the two matches on it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Database {
    /// `<data>/evoflux.db`: the embedded default, one machine.
    #[default]
    Sqlite,
    /// A PostgreSQL server that several `evoflux serve` replicas share.
    Postgres(DatabaseUrl),
}

/// Which SQL dialect a store speaks; the URL-less half of [`Database`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    pub const fn as_str(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Database {
    pub fn backend(&self) -> Backend {
        match self {
            Database::Sqlite => Backend::Sqlite,
            Database::Postgres(_) => Backend::Postgres,
        }
    }

    /// Reads a configured database URL: `postgres://` or `postgresql://`
    /// selects PostgreSQL. `sqlite` (or an empty value) is the embedded
    /// default; a SQLite file elsewhere is not offered, because Work
    /// folders and artifacts live beside it in the data directory.
    pub fn parse(url: &str) -> Result<Database, StoreError> {
        let trimmed = url.trim();
        if trimmed.is_empty() || trimmed == "sqlite" {
            return Ok(Database::Sqlite);
        }
        match url::Url::parse(trimmed) {
            Ok(parsed) if matches!(parsed.scheme(), "postgres" | "postgresql") => {
                Ok(Database::Postgres(DatabaseUrl(parsed.to_string())))
            }
            Ok(parsed) => Err(StoreError::DatabaseUrl {
                url: redact(trimmed),
                reason: format!(
                    "the scheme `{}` is not a database evoflux stores sessions in; use `postgres://user@host/db`, or `sqlite` for the embedded default",
                    parsed.scheme()
                ),
            }),
            Err(e) => Err(StoreError::DatabaseUrl {
                url: redact(trimmed),
                reason: e.to_string(),
            }),
        }
    }

    /// What the database is, as messages and `info` name it: the SQLite
    /// file's path, or the PostgreSQL URL without its password.
    pub fn describe(&self, data_dir: &Path) -> String {
        match self {
            Database::Sqlite => data_dir.join(crate::DB_FILE).display().to_string(),
            Database::Postgres(url) => url.to_string(),
        }
    }
}

/// A PostgreSQL URL. Its password never reaches a message, a log or
/// `Debug` output: both print it redacted.
#[derive(Clone, PartialEq, Eq)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    pub(crate) fn new(url: &str) -> DatabaseUrl {
        DatabaseUrl(url.to_owned())
    }

    /// The URL as given, password included: for connecting only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({self})")
    }
}

/// `url` with any password replaced by `***`.
fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) if parsed.password().is_some() => {
            let _ = parsed.set_password(Some("***"));
            parsed.to_string()
        }
        Ok(parsed) => parsed.to_string(),
        Err(_) => "<unparseable url>".to_owned(),
    }
}

/// Opens a pool on `database` and applies its pending migrations.
/// `data_dir` holds the SQLite file.
pub(crate) async fn connect(database: &Database, data_dir: &Path) -> Result<AnyPool, StoreError> {
    sqlx::any::install_default_drivers();
    let described = database.describe(data_dir);
    let open_error = |source| StoreError::Open {
        database: described.clone(),
        source,
    };
    let pool = match database {
        Database::Sqlite => {
            let path = data_dir.join(crate::DB_FILE);
            let url = sqlx::sqlite::SqliteConnectOptions::new()
                .filename(&path)
                .create_if_missing(true)
                .to_url_lossy();
            let options = AnyConnectOptions::from_url(&url).map_err(open_error)?;
            AnyPoolOptions::new()
                .max_connections(SQLITE_CONNECTIONS)
                // A connection to a local file does not go stale the way a
                // network one does; pinging it before every use doubled the
                // round trips to the connection's thread of a small write.
                .test_before_acquire(false)
                .after_connect(|conn, _meta| {
                    Box::pin(async move {
                        // WAL lets readers in other processes see committed
                        // rows while one writer appends; NORMAL sync in WAL
                        // mode keeps every committed transaction across a
                        // process kill (only a power cut may lose the last
                        // ones), without an fsync on every append.
                        conn.execute(sqlx::AssertSqlSafe(format!(
                            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                             PRAGMA foreign_keys = ON; PRAGMA busy_timeout = {};",
                            SQLITE_BUSY_TIMEOUT.as_millis()
                        )))
                        .await?;
                        Ok(())
                    })
                })
                .connect_with(options)
                .await
                .map_err(open_error)?
        }
        Database::Postgres(url) => {
            let options = AnyConnectOptions::from_str(url.expose()).map_err(open_error)?;
            AnyPoolOptions::new()
                .max_connections(POSTGRES_CONNECTIONS)
                .connect_with(options)
                .await
                .map_err(open_error)?
        }
    };
    let migrate_error = |source| StoreError::Migrate {
        database: described.clone(),
        source,
    };
    match database.backend() {
        Backend::Sqlite => {
            // Processes opening a new data directory together take turns:
            // sqlx cannot lock a SQLite database around its migrations.
            let path = data_dir.join(crate::DB_FILE);
            let target = path.clone();
            let lock = tokio::task::spawn_blocking(move || {
                evoflux_core::lock::FileLock::acquire(&target, SQLITE_BUSY_TIMEOUT)
            })
            .await
            .map_err(std::io::Error::other)
            .and_then(|locked| locked.map_err(std::io::Error::other))
            .map_err(|source| StoreError::DataDir {
                path: data_dir.to_path_buf(),
                source,
            })?;
            let migrated = sqlx::migrate!("migrations/sqlite")
                .run(&pool)
                .await
                .map_err(migrate_error);
            drop(lock);
            migrated?;
            // SQLite creates its files with the umask's mode; they hold
            // every transcript, so they are the owner's alone.
            for suffix in ["", "-wal", "-shm"] {
                let mut file = path.clone().into_os_string();
                file.push(suffix);
                let _ = evoflux_core::private::tighten(Path::new(&file));
            }
        }
        Backend::Postgres => {
            // Replicas starting together take turns: sqlx's migrator locks
            // only after creating its own table, and two concurrent
            // `CREATE TABLE IF NOT EXISTS` can collide in PostgreSQL's
            // catalog.
            let mut conn = pool.acquire().await.map_err(open_error)?;
            sqlx::query("SELECT pg_advisory_lock($1)")
                .bind(MIGRATION_LOCK)
                .execute(&mut *conn)
                .await
                .map_err(open_error)?;
            // The lock is the session's; the migrator takes another
            // connection of the pool.
            let migrated = sqlx::migrate!("migrations/postgres")
                .run(&pool)
                .await
                .map_err(migrate_error);
            let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
                .bind(MIGRATION_LOCK)
                .execute(&mut *conn)
                .await;
            migrated?;
            unlocked.map_err(open_error)?;
        }
    }
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_selects_its_backend_and_hides_its_password() {
        assert_eq!(Database::parse("").unwrap(), Database::Sqlite);
        assert_eq!(Database::parse("sqlite").unwrap(), Database::Sqlite);
        let pg = Database::parse("postgres://evo:s3cret@db.internal:5432/evoflux").unwrap();
        assert_eq!(pg.backend(), Backend::Postgres);
        let shown = pg.describe(Path::new("/d"));
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(format!("{pg:?}").contains("***"));
        let e = Database::parse("mysql://u:pw@h/db").unwrap_err();
        assert_eq!(e.code(), "store/database-url");
        assert!(!e.to_string().contains("pw@"), "{e}");
        assert_eq!(
            Database::parse("not a url").unwrap_err().code(),
            "store/database-url"
        );
    }
}
