//! The database a benchmark runs against (SQLite in a temporary directory, or a fresh
//! PostgreSQL database created on a server and dropped at the end) and which one the
//! environment asks for; and latency arithmetic.

use std::time::Duration;

use anyhow::{bail, Context};
use memvault::config::Settings;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::AssertSqlSafe;
use uuid::Uuid;

/// The database under test: created before the first server starts, removed at the end.
pub enum Database {
    Sqlite(tempfile::TempDir),
    Postgres {
        admin: PgPool,
        name: String,
        url: String,
    },
}

impl Database {
    /// A fresh database on the PostgreSQL server at `postgres_url`, else a SQLite directory.
    pub async fn create(postgres_url: Option<&str>) -> anyhow::Result<Self> {
        let Some(admin_url) = postgres_url else {
            let dir = tempfile::tempdir().context("cannot create a temporary directory")?;
            return Ok(Database::Sqlite(dir));
        };
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect(admin_url)
            .await
            .with_context(|| {
                format!(
                    "cannot connect to {}",
                    memvault::config::mask_url_password(admin_url)
                )
            })?;
        let name = format!("memvault_bench_{}", Uuid::new_v4().simple());
        sqlx::query(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&admin)
            .await
            .with_context(|| format!("cannot create the database {name}"))?;
        let mut url = url::Url::parse(admin_url).context("invalid PostgreSQL URL")?;
        url.set_path(&format!("/{name}"));
        Ok(Database::Postgres {
            admin,
            name,
            url: url.to_string(),
        })
    }

    pub fn configure(&self, settings: &mut Settings) {
        match self {
            Database::Sqlite(dir) => settings.storage.data_dir = dir.path().to_path_buf(),
            Database::Postgres { url, .. } => {
                settings.storage.database_url = Some(memvault::config::ServiceUrl::new(url.clone()))
            }
        }
    }

    /// `sqlite` when SQLite, else the PostgreSQL server's version.
    pub async fn describe(&self, sqlite: &str) -> String {
        match self {
            Database::Sqlite(_) => sqlite.to_string(),
            Database::Postgres { admin, .. } => {
                let version: Option<String> = sqlx::query_scalar("SHOW server_version")
                    .fetch_one(admin)
                    .await
                    .ok();
                format!(
                    "PostgreSQL {}",
                    version.as_deref().unwrap_or("(unknown version)")
                )
            }
        }
    }

    /// Drops the database (or keeps it, saying where, when `keep`).
    pub async fn remove(self, keep: bool) -> anyhow::Result<()> {
        if keep {
            match self {
                Database::Sqlite(dir) => eprintln!("kept the database in {}", dir.keep().display()),
                Database::Postgres { admin, url, .. } => {
                    eprintln!(
                        "kept the database {}",
                        memvault::config::mask_url_password(&url)
                    );
                    admin.close().await;
                }
            }
            return Ok(());
        }
        match self {
            Database::Sqlite(dir) => dir.close().context("cannot remove the SQLite directory"),
            Database::Postgres { admin, name, .. } => {
                sqlx::query(AssertSqlSafe(format!(
                    "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
                )))
                .execute(&admin)
                .await
                .with_context(|| format!("cannot drop the database {name}; drop it by hand"))?;
                admin.close().await;
                Ok(())
            }
        }
    }
}

/// Runs `bench` on a fresh database (see [`Database::create`]), then removes it, or keeps it
/// when `keep`, whether `bench` succeeded or not.
pub async fn with_database<T>(
    postgres_url: Option<&str>,
    keep: bool,
    bench: impl AsyncFnOnce(&Database) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let database = Database::create(postgres_url).await?;
    let outcome = bench(&database).await;
    let removed = database.remove(keep).await;
    let value = outcome?;
    removed?;
    Ok(value)
}

/// Whether a database URL names PostgreSQL.
pub fn is_postgres(url: &str) -> bool {
    url.starts_with("postgres://") || url.starts_with("postgresql://")
}

/// The PostgreSQL server to run against, from the environment: `MEMVAULT_BENCH_DATABASE_URL`
/// (an error when it is set to anything but a `postgres://` URL), else `DATABASE_URL` when it
/// is one; `None` runs on SQLite.
pub fn postgres_url_from_env() -> anyhow::Result<Option<String>> {
    match std::env::var("MEMVAULT_BENCH_DATABASE_URL") {
        Ok(url) if is_postgres(&url) => Ok(Some(url)),
        Ok(url) if !url.trim().is_empty() => {
            bail!("MEMVAULT_BENCH_DATABASE_URL must be a postgres:// URL")
        }
        // `DATABASE_URL` may name the SQLite file of a development setup: ignored then.
        _ => Ok(std::env::var("DATABASE_URL")
            .ok()
            .filter(|url| is_postgres(url))),
    }
}

/// Nearest-rank percentile of sorted latencies, in milliseconds.
pub fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    millis(sorted[rank.clamp(1, sorted.len()) - 1])
}

pub fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1_000.0
}
