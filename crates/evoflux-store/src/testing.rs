//! Fresh databases for tests, so the same suite runs on both backends.
//!
//! `EVOFLUX_TEST_POSTGRES_URL` names a PostgreSQL server the tests may
//! create databases on (`.ci/run` starts one on a loopback port with
//! `scripts/test-postgres.sh`). Without it the PostgreSQL half of a suite
//! is skipped, saying so, like the other tests that need an outside
//! program.

use sqlx::{Connection, Executor};

use crate::database::{Database, DatabaseUrl};

/// The variable naming the test server.
pub const POSTGRES_ENV: &str = "EVOFLUX_TEST_POSTGRES_URL";

/// A new, empty database on the test server, or `None` (with a note on
/// stderr) when no server is configured.
///
/// # Panics
/// When the server is configured but cannot create a database, or in CI
/// when none is configured: a test must fail then, not pass without
/// running.
pub async fn postgres_database() -> Option<Database> {
    let Ok(admin) = std::env::var(POSTGRES_ENV) else {
        evoflux_core::prerequisite::missing(
            &format!("a PostgreSQL server ({POSTGRES_ENV})"),
            "install the Debian package `postgresql` and run \
             `export EVOFLUX_TEST_POSTGRES_URL=$(bash scripts/test-postgres.sh start)`",
        );
        return None;
    };
    sqlx::any::install_default_drivers();
    let name = format!("evoflux_t_{}", uuid::Uuid::now_v7().simple());
    let mut conn = sqlx::AnyConnection::connect(&admin)
        .await
        .unwrap_or_else(|e| panic!("{POSTGRES_ENV}: cannot connect: {e}"));
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .unwrap_or_else(|e| panic!("{POSTGRES_ENV}: cannot create a database: {e}"));
    let _ = conn.close().await;
    let mut url = url::Url::parse(&admin).unwrap_or_else(|e| panic!("{POSTGRES_ENV}: {e}"));
    url.set_path(&name);
    Some(Database::Postgres(DatabaseUrl::new(url.as_str())))
}
