//! The SQL probe: reads the state straight from the receiver's own database
//! (Postgres through tokio-postgres, SQLite through rusqlite), so a receiver
//! on the default schema (docs/state.md) needs no admin endpoint at all.
//!
//! The default queries fit the default schema (`webhook_inbox(task_id, body,
//! received_at, processed_at)`, `answers(task_id, job_key, status,
//! created_at, response)`) and select no column it lacks, so they
//! also work on schemas that add `account`, `error` and more. Rows map to the
//! state by column name (`key` or `task_id`, `account`, `processed` or
//! `processed_at`, `error`, `job_key`, `status`, `created_at`, `count`,
//! `resource`, `sequence`), whatever their SQL type: text, booleans,
//! integers 0/1 and timestamps (returned as RFC 3339) all convert. An empty
//! query string switches a section off.
//!
//! Rows are read through a cursor (rusqlite's row iterator, tokio-postgres's
//! row stream) and handed to the caller's sink one at a time: a
//! million-row inbox is never a list in the harness.

use std::collections::HashMap;

use serde::Deserialize;

use super::error::ProbeError;
use super::redact::redact_url;
use crate::state::stream::{Row as StateRow, Section, StateSink};
use crate::state::{Effect, InboxRow, ResourceRow, ResultRow, Winner};

/// Takes the rows of a query run as its cursor reads them.
trait OnRow {
    /// Query `i` (a section's index in [`Section::ALL`]) begins.
    fn begin(&mut self, i: usize) -> Result<(), ProbeError>;
    /// Row `n` of query `i`.
    fn row(&mut self, i: usize, n: usize, row: &Row) -> Result<(), ProbeError>;
}

/// Collects `column_name`s.
struct Columns(Vec<String>);

impl OnRow for Columns {
    fn begin(&mut self, _: usize) -> Result<(), ProbeError> {
        Ok(())
    }
    fn row(&mut self, _: usize, _: usize, row: &Row) -> Result<(), ProbeError> {
        if let Some(Cell::Text(t)) = row.get("column_name") {
            self.0.push(t.clone());
        }
        Ok(())
    }
}

/// Converts rows to state rows for a sink.
struct Rows<S>(S);

impl<S: StateSink> OnRow for Rows<S> {
    fn begin(&mut self, i: usize) -> Result<(), ProbeError> {
        self.0.section(Section::ALL[i]).map_err(ProbeError::from)
    }
    fn row(&mut self, i: usize, n: usize, row: &Row) -> Result<(), ProbeError> {
        let section = Section::ALL[i];
        let r = RowReader {
            section: section.name(),
            n,
            row,
        };
        self.0.row(convert(section, &r)?).map_err(ProbeError::from)
    }
}

/// The default inbox query on the default schema (every backend). When the
/// table also has `account`, `error` or `last_error` columns, the default
/// query selects them too (see [`default_inbox_query`]), so a receiver that
/// records a poison row's error settles it without any override.
pub const DEFAULT_INBOX: &str =
    "select task_id as key, processed_at is not null as processed from webhook_inbox";
/// Lists a table's columns (Postgres); `{table}` is the table.
const COLUMNS_POSTGRES: &str = "select column_name from information_schema.columns \
     where table_name = '{table}' and table_schema = current_schema()";
/// Lists a table's columns (SQLite); `{table}` is the table.
const COLUMNS_SQLITE: &str = "select name as column_name from pragma_table_info('{table}')";
/// The reporting query per account (Postgres), for an `answers`
/// table that has an `account` column.
const DEFAULT_WINNERS_POSTGRES_BY_ACCOUNT: &str =
    "select distinct on (account, job_key) account, job_key, task_id from answers \
     where status = 'COMPLETED' order by account, job_key, created_at desc, task_id desc";
/// The same for SQLite.
const DEFAULT_WINNERS_SQLITE_BY_ACCOUNT: &str =
    "select a.account, a.job_key, a.task_id from answers a \
     where a.status = 'COMPLETED' and not exists (select 1 from answers b \
     where b.status = 'COMPLETED' and b.job_key = a.job_key and b.account = a.account \
     and (b.created_at > a.created_at or (b.created_at = a.created_at and b.task_id > a.task_id)))";

fn has_column(columns: &[String], c: &str) -> bool {
    columns.iter().any(|x| x.eq_ignore_ascii_case(c))
}

/// The default results query for an `answers` table with these columns:
/// the default schema's, plus `account` where the table scopes results by account.
pub fn default_results_query(columns: &[String]) -> String {
    if has_column(columns, "account") {
        "select task_id, account, job_key, status, created_at from answers".to_string()
    } else {
        DEFAULT_RESULTS.to_string()
    }
}

/// The default winners query (the latest COMPLETED task per job), per account
/// where the `answers` table has an `account` column.
pub fn default_winners_query(postgres: bool, columns: &[String]) -> String {
    let by_account = has_column(columns, "account");
    match (postgres, by_account) {
        (true, false) => DEFAULT_WINNERS_POSTGRES,
        (true, true) => DEFAULT_WINNERS_POSTGRES_BY_ACCOUNT,
        (false, false) => DEFAULT_WINNERS_SQLITE,
        (false, true) => DEFAULT_WINNERS_SQLITE_BY_ACCOUNT,
    }
    .to_string()
}

/// The default inbox query for a `webhook_inbox` table with these columns:
/// the default schema's columns plus `account` and the error (`error`, or
/// `last_error`) where the table has them.
pub fn default_inbox_query(columns: &[String]) -> String {
    let has = |c: &str| has_column(columns, c);
    if columns.is_empty() {
        return DEFAULT_INBOX.to_string();
    }
    let mut select = vec!["task_id as key"];
    if has("account") {
        select.push("account");
    }
    select.push("processed_at is not null as processed");
    if has("error") {
        select.push("error");
    } else if has("last_error") {
        select.push("last_error as error");
    }
    format!("select {} from webhook_inbox", select.join(", "))
}
/// The default results query (every backend).
pub const DEFAULT_RESULTS: &str = "select task_id, job_key, status, created_at from answers";
/// The reporting query (Postgres), with the task id as tie-break.
pub const DEFAULT_WINNERS_POSTGRES: &str =
    "select distinct on (job_key) job_key, task_id from answers \
     where status = 'COMPLETED' order by job_key, created_at desc, task_id desc";
/// The same for SQLite, which has no `distinct on`.
pub const DEFAULT_WINNERS_SQLITE: &str = "select a.job_key, a.task_id from answers a \
     where a.status = 'COMPLETED' and not exists (select 1 from answers b \
     where b.status = 'COMPLETED' and b.job_key = a.job_key \
     and (b.created_at > a.created_at or (b.created_at = a.created_at and b.task_id > a.task_id)))";

/// The `[state.sql]` section.
#[derive(Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SqlProbeConfig {
    /// `postgres://user:password@host/db` or `sqlite:///path/to/file.db`.
    pub url: String,
    /// Inbox query (default [`DEFAULT_INBOX`]).
    pub inbox: Option<String>,
    /// Results query (default [`DEFAULT_RESULTS`]; empty: not reported).
    pub results: Option<String>,
    /// Winners query (default: the latest COMPLETED task per job).
    pub winners: Option<String>,
    /// Effects query (default: not reported).
    pub effects: Option<String>,
    /// Resources query (default: not reported).
    pub resources: Option<String>,
    /// Statements that empty the receiver's tables before a scenario.
    pub reset: Option<Vec<String>>,
    /// Statements run by `setup` (`{state}` is replaced by the setup state name).
    pub setup: Option<Vec<String>>,
}

impl std::fmt::Debug for SqlProbeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlProbeConfig")
            .field("url", &redact_url(&self.url))
            .field("inbox", &self.inbox)
            .field("results", &self.results)
            .field("winners", &self.winners)
            .field("effects", &self.effects)
            .field("resources", &self.resources)
            .field("reset", &self.reset)
            .field("setup", &self.setup)
            .finish()
    }
}

#[derive(Clone)]
enum Backend {
    Postgres(String),
    Sqlite(String),
}

/// A configured SQL source.
#[derive(Clone)]
pub(crate) struct SqlSource {
    backend: Backend,
    /// The inbox query; `None`: the default, fitted to the table's columns.
    inbox: Option<String>,
    results: Option<String>,
    winners: Option<String>,
    /// `results` and `winners` are the defaults, fitted to `answers`' columns.
    results_default: bool,
    winners_default: bool,
    effects: Option<String>,
    resources: Option<String>,
}

/// One value of a row, whatever the backend returned.
#[derive(Debug, Clone, PartialEq)]
enum Cell {
    Null,
    Text(String),
    Int(i64),
    Real(f64),
}

type Row = HashMap<String, Cell>;

fn section(q: &Option<String>, default: Option<&str>) -> Option<String> {
    match q {
        Some(q) if q.trim().is_empty() => None,
        Some(q) => Some(q.clone()),
        None => default.map(str::to_string),
    }
}

impl SqlSource {
    pub fn new(cfg: &SqlProbeConfig) -> Result<SqlSource, ProbeError> {
        let url = cfg.url.trim();
        let backend = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Backend::Postgres(url.to_string())
        } else if let Some(path) = url
            .strip_prefix("sqlite://")
            .or_else(|| url.strip_prefix("sqlite:"))
        {
            if path.is_empty() {
                return Err(ProbeError::Config(
                    "sqlite url has no path (hint: sqlite:///abs/path.db)".into(),
                ));
            }
            Backend::Sqlite(path.to_string())
        } else {
            return Err(ProbeError::Config(format!(
                "sql url {}: expected postgres://… or sqlite:///path",
                redact_url(url)
            )));
        };
        let winners_default = match backend {
            Backend::Postgres(_) => DEFAULT_WINNERS_POSTGRES,
            Backend::Sqlite(_) => DEFAULT_WINNERS_SQLITE,
        };
        Ok(SqlSource {
            backend,
            inbox: match &cfg.inbox {
                Some(q) if q.trim().is_empty() => {
                    return Err(ProbeError::Config("the inbox query cannot be empty".into()))
                }
                q => q.clone(),
            },
            results: section(&cfg.results, Some(DEFAULT_RESULTS)),
            winners: section(&cfg.winners, Some(winners_default)),
            results_default: cfg.results.is_none(),
            winners_default: cfg.winners.is_none(),
            effects: section(&cfg.effects, None),
            resources: section(&cfg.resources, None),
        })
    }

    pub fn describe(&self) -> String {
        match &self.backend {
            Backend::Postgres(u) => redact_url(u),
            Backend::Sqlite(p) => format!("sqlite://{p}"),
        }
    }

    /// Runs the queries, handing each row to `on` as the cursor reads it.
    async fn run<H: OnRow + Send + 'static>(
        &self,
        queries: Vec<Option<String>>,
        on: H,
    ) -> Result<H, ProbeError> {
        match &self.backend {
            Backend::Postgres(url) => pg_query(url, queries, on).await,
            Backend::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || sqlite_query(&path, queries, on))
                    .await
                    .map_err(|e| ProbeError::Io(format!("sqlite: {e}")))?
            }
        }
    }

    /// The columns a table has (empty when it does not exist).
    async fn columns(&self, table: &str) -> Result<Vec<String>, ProbeError> {
        let list = match self.backend {
            Backend::Postgres(_) => COLUMNS_POSTGRES,
            Backend::Sqlite(_) => COLUMNS_SQLITE,
        };
        let q = vec![Some(list.replace("{table}", table))];
        Ok(self.run(q, Columns(Vec::new())).await?.0)
    }

    /// Reads every configured section row by row into `sink`; default
    /// queries are fitted to the columns the receiver's tables really have.
    pub async fn read_into<S: StateSink + Send + 'static>(&self, sink: S) -> Result<S, ProbeError> {
        let queries = self.queries().await?;
        let mut rows = self.run(queries, Rows(sink)).await?;
        rows.0.finish().map_err(ProbeError::from)?;
        Ok(rows.0)
    }

    /// The five queries (`None`: section not reported), defaults fitted.
    async fn queries(&self) -> Result<Vec<Option<String>>, ProbeError> {
        let inbox = match &self.inbox {
            Some(q) => q.clone(),
            None => default_inbox_query(&self.columns("webhook_inbox").await?),
        };
        let (mut results, mut winners) = (self.results.clone(), self.winners.clone());
        if self.results_default || self.winners_default {
            let cols = self.columns("answers").await?;
            let postgres = matches!(self.backend, Backend::Postgres(_));
            if self.results_default {
                results = Some(default_results_query(&cols));
            }
            if self.winners_default {
                winners = Some(default_winners_query(postgres, &cols));
            }
        }
        Ok(vec![
            Some(inbox),
            results,
            winners,
            self.effects.clone(),
            self.resources.clone(),
        ])
    }

    /// Runs statements (reset, setup).
    pub async fn execute(&self, statements: Vec<String>) -> Result<(), ProbeError> {
        match &self.backend {
            Backend::Postgres(url) => {
                let client = pg_connect(url).await?;
                for s in &statements {
                    client.batch_execute(s).await.map_err(pg_err)?;
                }
                Ok(())
            }
            Backend::Sqlite(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || {
                    let db = sqlite_open(&path)?;
                    for s in &statements {
                        db.execute_batch(s)
                            .map_err(|e| ProbeError::Sql(format!("{e} (in: {s})")))?;
                    }
                    Ok(())
                })
                .await
                .map_err(|e| ProbeError::Io(format!("sqlite: {e}")))?
            }
        }
    }
}

fn pg_err(e: tokio_postgres::Error) -> ProbeError {
    match e.as_db_error() {
        Some(db) => ProbeError::Sql(db.message().to_string()),
        None => ProbeError::Sql(e.to_string()),
    }
}

async fn pg_connect(url: &str) -> Result<tokio_postgres::Client, ProbeError> {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .map_err(|e| ProbeError::Io(format!("connecting to {}: {e}", redact_url(url))))?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    client
        .batch_execute("set timezone to 'UTC'")
        .await
        .map_err(pg_err)?;
    Ok(client)
}

async fn pg_query<H: OnRow>(
    url: &str,
    queries: Vec<Option<String>>,
    mut on: H,
) -> Result<H, ProbeError> {
    use futures_util::StreamExt;
    use tokio_postgres::SimpleQueryMessage;
    let client = pg_connect(url).await?;
    let err = |q: &str, e| ProbeError::Sql(format!("{} (in: {q})", pg_err(e)));
    for (i, q) in queries.into_iter().enumerate() {
        let Some(q) = q else { continue };
        on.begin(i)?;
        let stream = client.simple_query_raw(&q).await.map_err(|e| err(&q, e))?;
        let mut stream = std::pin::pin!(stream);
        let mut row = Row::new();
        let mut n = 0;
        while let Some(m) = stream.next().await {
            if let SimpleQueryMessage::Row(r) = m.map_err(|e| err(&q, e))? {
                row.clear();
                for (c, col) in r.columns().iter().enumerate() {
                    let v = r.get(c).map_or(Cell::Null, |s| Cell::Text(s.to_string()));
                    row.insert(col.name().to_string(), v);
                }
                on.row(i, n, &row)?;
                n += 1;
            }
        }
    }
    Ok(on)
}

fn sqlite_open(path: &str) -> Result<rusqlite::Connection, ProbeError> {
    let db = rusqlite::Connection::open(path)
        .map_err(|e| ProbeError::Io(format!("sqlite://{path}: {e}")))?;
    db.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| ProbeError::Sql(e.to_string()))?;
    Ok(db)
}

fn sqlite_query<H: OnRow>(
    path: &str,
    queries: Vec<Option<String>>,
    mut on: H,
) -> Result<H, ProbeError> {
    use rusqlite::types::ValueRef;
    let db = sqlite_open(path)?;
    for (i, q) in queries.into_iter().enumerate() {
        let Some(q) = q else { continue };
        on.begin(i)?;
        let err = |e: rusqlite::Error| ProbeError::Sql(format!("{e} (in: {q})"));
        let mut stmt = db.prepare(&q).map_err(err)?;
        let names: Vec<String> = stmt.column_names().iter().map(|s| s.to_string()).collect();
        let mut it = stmt.query([]).map_err(err)?;
        let mut row = Row::new();
        let mut n = 0;
        while let Some(r) = it.next().map_err(err)? {
            row.clear();
            for (c, name) in names.iter().enumerate() {
                let v = match r.get_ref(c).map_err(err)? {
                    ValueRef::Null => Cell::Null,
                    ValueRef::Integer(n) => Cell::Int(n),
                    ValueRef::Real(f) => Cell::Real(f),
                    ValueRef::Text(t) | ValueRef::Blob(t) => {
                        Cell::Text(String::from_utf8_lossy(t).into_owned())
                    }
                };
                row.insert(name.clone(), v);
            }
            on.row(i, n, &row)?;
            n += 1;
        }
    }
    Ok(on)
}

struct RowReader<'a> {
    section: &'static str,
    n: usize,
    row: &'a Row,
}

impl RowReader<'_> {
    fn cell(&self, names: &[&str]) -> Option<&Cell> {
        names
            .iter()
            .find_map(|n| self.row.get(*n))
            .filter(|c| **c != Cell::Null)
    }

    fn bad(&self, col: &str, what: &str) -> ProbeError {
        ProbeError::Invalid(format!(
            "{} row {}: column `{col}`: {what} (columns: {})",
            self.section,
            self.n + 1,
            {
                let mut k: Vec<&str> = self.row.keys().map(String::as_str).collect();
                k.sort_unstable();
                k.join(", ")
            }
        ))
    }

    fn text(&self, names: &[&str]) -> Option<String> {
        self.cell(names).map(|c| match c {
            Cell::Text(s) => s.clone(),
            Cell::Int(n) => n.to_string(),
            Cell::Real(f) => f.to_string(),
            Cell::Null => String::new(),
        })
    }

    fn required(&self, names: &[&str]) -> Result<String, ProbeError> {
        self.text(names)
            .ok_or_else(|| self.bad(&names.join("` or `"), "missing or null"))
    }

    fn time(&self, names: &[&str]) -> Option<String> {
        self.text(names).map(|t| normalize_time(&t))
    }

    fn uint(&self, names: &[&str]) -> Result<u64, ProbeError> {
        match self.cell(names) {
            Some(Cell::Int(n)) if *n >= 0 => Ok(*n as u64),
            Some(Cell::Real(f)) if *f >= 0.0 && f.fract() == 0.0 => Ok(*f as u64),
            Some(Cell::Text(t)) => t
                .trim()
                .parse()
                .map_err(|_| self.bad(names[0], "expected a non-negative integer")),
            Some(_) => Err(self.bad(names[0], "expected a non-negative integer")),
            None => Err(self.bad(names[0], "missing or null")),
        }
    }

    fn processed(&self) -> Result<bool, ProbeError> {
        if let Some(c) = self.row.get("processed") {
            return match c {
                Cell::Null => Ok(false),
                Cell::Int(n) => Ok(*n != 0),
                Cell::Real(f) => Ok(*f != 0.0),
                Cell::Text(t) => match t.trim().to_ascii_lowercase().as_str() {
                    "t" | "true" | "1" | "yes" | "y" => Ok(true),
                    "f" | "false" | "0" | "no" | "n" | "" => Ok(false),
                    _ => Err(self.bad("processed", "expected a boolean")),
                },
            };
        }
        if self.row.contains_key("processed_at") {
            return Ok(self.cell(&["processed_at"]).is_some());
        }
        Err(self.bad(
            "processed",
            "missing (select `processed` or `processed_at`)",
        ))
    }
}

/// Timestamps as RFC 3339 when they parse as one of the usual SQL forms;
/// anything else (a poison value) as it is.
fn normalize_time(t: &str) -> String {
    use chrono::{DateTime, NaiveDateTime, SecondsFormat, Utc};
    let t = t.trim();
    if let Ok(d) = DateTime::parse_from_rfc3339(t) {
        return d
            .with_timezone(&Utc)
            .to_rfc3339_opts(SecondsFormat::AutoSi, true);
    }
    for f in ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f%#z"] {
        if let Ok(d) = DateTime::parse_from_str(t, f) {
            return d
                .with_timezone(&Utc)
                .to_rfc3339_opts(SecondsFormat::AutoSi, true);
        }
    }
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(d) = NaiveDateTime::parse_from_str(t, f) {
            return d.and_utc().to_rfc3339_opts(SecondsFormat::AutoSi, true);
        }
    }
    t.to_string()
}

/// One row of a section, from its SQL row.
fn convert(section: Section, r: &RowReader) -> Result<StateRow, ProbeError> {
    Ok(match section {
        Section::Inbox => StateRow::Inbox(InboxRow {
            key: r.required(&["key", "task_id"])?,
            account: r.text(&["account"]),
            processed: r.processed()?,
            error: r.text(&["error"]),
        }),
        Section::Results => StateRow::Results(ResultRow {
            task_id: r.required(&["task_id", "key"])?,
            job_key: r.text(&["job_key"]),
            status: r.required(&["status"])?,
            created_at: r.time(&["created_at"]),
            account: r.text(&["account"]),
        }),
        Section::Winners => StateRow::Winners(Winner {
            job_key: r.required(&["job_key"])?,
            task_id: r.required(&["task_id", "key"])?,
            account: r.text(&["account"]),
        }),
        Section::Effects => StateRow::Effects(Effect {
            key: r.required(&["key", "task_id"])?,
            count: r.uint(&["count"])?,
            account: r.text(&["account"]),
        }),
        Section::Resources => StateRow::Resources(ResourceRow {
            resource: r.required(&["resource"])?,
            sequence: r.uint(&["sequence"])?,
            account: r.text(&["account"]),
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sql_timestamps_become_rfc3339_and_poison_stays() {
        assert_eq!(
            normalize_time("2026-11-29 10:00:00+00"),
            "2026-11-29T10:00:00Z"
        );
        assert_eq!(
            normalize_time("2026-11-29 10:00:00.5+01"),
            "2026-11-29T09:00:00.500Z"
        );
        assert_eq!(
            normalize_time("2026-11-29T10:00:00Z"),
            "2026-11-29T10:00:00Z"
        );
        assert_eq!(
            normalize_time("2026-11-29 10:00:00"),
            "2026-11-29T10:00:00Z"
        );
        assert_eq!(
            normalize_time("2026-02-30T25:61:00Z"),
            "2026-02-30T25:61:00Z"
        );
    }

    #[test]
    fn the_default_inbox_query_selects_the_error_and_account_a_table_has() {
        let cols = |c: &[&str]| c.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(default_inbox_query(&[]), DEFAULT_INBOX);
        assert_eq!(
            default_inbox_query(&cols(&["task_id", "body", "received_at", "processed_at"])),
            DEFAULT_INBOX
        );
        assert_eq!(
            default_inbox_query(&cols(&["task_id", "account", "processed_at", "error"])),
            "select task_id as key, account, processed_at is not null as processed, error from webhook_inbox"
        );
        assert!(
            default_inbox_query(&cols(&["task_id", "processed_at", "last_error"]))
                .contains("last_error as error")
        );
        let scoped = cols(&["task_id", "account", "job_key", "status", "created_at"]);
        assert!(default_results_query(&scoped).contains("account"));
        assert_eq!(default_results_query(&cols(&["task_id"])), DEFAULT_RESULTS);
        assert!(default_winners_query(true, &scoped).contains("distinct on (account, job_key)"));
        assert!(default_winners_query(false, &scoped).contains("b.account = a.account"));
        assert_eq!(default_winners_query(false, &[]), DEFAULT_WINNERS_SQLITE);
    }

    #[test]
    fn bad_urls_and_empty_inbox_queries_are_config_errors() {
        let cfg = |url: &str| SqlProbeConfig {
            url: url.into(),
            ..SqlProbeConfig::default()
        };
        assert!(SqlSource::new(&cfg("mysql://x")).is_err());
        assert!(SqlSource::new(&cfg("sqlite://")).is_err());
        let mut c = cfg("sqlite:///tmp/x.db");
        c.inbox = Some(" ".into());
        assert!(SqlSource::new(&c).is_err());
        c.inbox = None;
        c.results = Some(String::new());
        assert!(SqlSource::new(&c).unwrap().results.is_none());
    }

    #[test]
    fn a_missing_column_is_named() {
        let mut row = Row::new();
        row.insert("task_id".into(), Cell::Text("t1".into()));
        let reader = RowReader {
            section: "inbox",
            n: 0,
            row: &row,
        };
        let e = convert(Section::Inbox, &reader).unwrap_err().to_string();
        assert!(e.contains("inbox row 1") && e.contains("processed"), "{e}");
    }
}
