//! The SQLite store: WAL, `synchronous=FULL`, and group commit.
//!
//! One writer thread owns the write connection. Handler inserts reach it
//! through a channel; it drains every insert queued at that moment, runs them
//! in one transaction, commits (one fsync), and only then answers each waiter
//! on its oneshot — so every 204 follows its own commit, yet a burst of
//! deliveries pays for one fsync instead of one each. With group commit off,
//! each insert gets its own transaction (the bench compares the two).
//! Other writes (worker batches, reset) run on the same thread; reads use a
//! second connection, which WAL lets proceed beside the writer.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hookstorm::state::stream::{Row, Section};
use hookstorm::state::{Effect, InboxRow, ResourceRow, ResultRow, Winner};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use tokio::sync::oneshot;

use super::{
    BatchOutcome, Batcher, Feed, FeedSender, Inserted, Keying, NewDelivery, Store, StoreFuture,
    StoreOptions, WinnerRule, WorkerRules,
};
use crate::error::StoreError;
use crate::failpoint::Point;
use crate::process::{display_stored, process_body, sortable_time};

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

enum Op {
    Insert(NewDelivery, oneshot::Sender<Result<Inserted, StoreError>>),
    Run(Job),
}

/// The SQLite store.
pub struct SqliteStore {
    tx: Mutex<mpsc::Sender<Op>>,
    read: Arc<Mutex<Connection>>,
    path: PathBuf,
}

fn open_conn(path: &PathBuf) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    let _mode: String = conn.query_row("pragma journal_mode=WAL", [], |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(conn)
}

fn inbox_ddl(keying: Keying) -> &'static str {
    match keying {
        Keying::AccountTask => "create table if not exists webhook_inbox (account text not null, task_id text not null, webhook_id text, body text not null, received_at text not null, processed_at text, error text, primary key (account, task_id))",
        Keying::WebhookId => "create table if not exists webhook_inbox (account text not null, task_id text not null, webhook_id text, body text not null, received_at text not null, processed_at text, error text, unique (account, webhook_id))",
        Keying::Unconstrained => "create table if not exists webhook_inbox (account text not null, task_id text not null, webhook_id text, body text not null, received_at text not null, processed_at text, error text)",
        Keying::TaskOnly => "create table if not exists webhook_inbox (account text not null, task_id text not null, webhook_id text, body text not null, received_at text not null, processed_at text, error text, unique (task_id))",
    }
}

fn create_schema(conn: &Connection, keying: Keying) -> Result<(), StoreError> {
    use rusqlite::OptionalExtension;
    conn.execute_batch("create table if not exists inbox_keying (keying text not null)")?;
    let recorded: Option<String> = conn
        .query_row("select keying from inbox_keying limit 1", [], |r| r.get(0))
        .optional()?;
    let recreate = keying.must_recreate(recorded.as_deref());
    if recreate {
        conn.execute_batch("drop table if exists webhook_inbox")?;
    }
    conn.execute_batch(inbox_ddl(keying))?;
    if recreate {
        conn.execute("delete from inbox_keying", [])?;
        conn.execute(
            "insert into inbox_keying (keying) values (?1)",
            [keying.name()],
        )?;
    }
    conn.execute_batch(
        "create index if not exists webhook_inbox_unprocessed on webhook_inbox (processed_at) where processed_at is null;
         create table if not exists answers (account text not null, task_id text not null, job_key text, status text not null, created_at text not null, response text, primary key (account, task_id));
         create table if not exists effects (account text not null, task_id text not null, count integer not null, primary key (account, task_id));
         create table if not exists resources (account text not null, resource text not null, sequence integer not null, primary key (account, resource));
         create table if not exists submitted_tasks (account text not null, task_id text not null, created_at text not null, primary key (account, task_id));",
    )?;
    Ok(())
}

fn now_text() -> String {
    sortable_time(chrono::Utc::now())
}

fn run_inserts(
    conn: &mut Connection,
    batch: Vec<(NewDelivery, oneshot::Sender<Result<Inserted, StoreError>>)>,
) {
    let result = (|| -> Result<Vec<Result<Inserted, StoreError>>, StoreError> {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut out = Vec::with_capacity(batch.len());
        {
            let mut stmt = tx.prepare_cached(
                "insert into webhook_inbox (account, task_id, webhook_id, body, received_at) values (?1, ?2, ?3, ?4, ?5) on conflict do nothing",
            )?;
            let now = now_text();
            for (d, _) in &batch {
                out.push(
                    stmt.execute(params![d.account, d.task_id, d.webhook_id, d.body, now])
                        .map(|n| {
                            if n == 1 {
                                Inserted::New
                            } else {
                                Inserted::Duplicate
                            }
                        })
                        .map_err(StoreError::from),
                );
            }
        }
        tx.commit()?;
        Ok(out)
    })();
    match result {
        Ok(outs) => {
            for ((_, reply), r) in batch.into_iter().zip(outs) {
                let _ = reply.send(r);
            }
        }
        Err(e) => {
            let msg = e.to_string();
            let unavailable = matches!(e, StoreError::Unavailable(_));
            for (_, reply) in batch {
                let _ = reply.send(Err(if unavailable {
                    StoreError::Unavailable(msg.clone())
                } else {
                    StoreError::Database(msg.clone())
                }));
            }
        }
    }
}

fn writer(mut conn: Connection, rx: mpsc::Receiver<Op>, group_commit: bool) {
    while let Ok(first) = rx.recv() {
        match first {
            Op::Run(job) => job(&mut conn),
            Op::Insert(d, reply) => {
                let mut batch = vec![(d, reply)];
                let mut later = Vec::new();
                if group_commit {
                    while let Ok(op) = rx.try_recv() {
                        match op {
                            Op::Insert(d, reply) => batch.push((d, reply)),
                            Op::Run(job) => later.push(job),
                        }
                    }
                }
                run_inserts(&mut conn, batch);
                for job in later {
                    job(&mut conn);
                }
            }
        }
    }
}

impl SqliteStore {
    /// Opens (creating if needed) the database file and starts the writer thread.
    pub fn open(path: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let path = PathBuf::from(path);
        let write = open_conn(&path)?;
        create_schema(&write, options.keying)?;
        let read = open_conn(&path)?;
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("sqlite-writer".into())
            .spawn(move || writer(write, rx, options.group_commit))
            .map_err(|e| StoreError::Database(e.to_string()))?;
        Ok(SqliteStore {
            tx: Mutex::new(tx),
            read: Arc::new(Mutex::new(read)),
            path,
        })
    }

    fn send(&self, op: Op) -> Result<(), StoreError> {
        self.tx
            .lock()
            .map_err(|_| StoreError::Unavailable("writer lock poisoned".into()))?
            .send(op)
            .map_err(|_| StoreError::Unavailable("sqlite writer stopped".into()))
    }

    async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (tx, rx) = oneshot::channel();
        self.send(Op::Run(Box::new(move |c| {
            let _ = tx.send(f(c));
        })))?;
        rx.await
            .map_err(|_| StoreError::Unavailable("sqlite writer stopped".into()))?
    }

    async fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let conn = self.read.clone();
        tokio::task::spawn_blocking(move || {
            let c = conn
                .lock()
                .map_err(|_| StoreError::Unavailable("reader lock poisoned".into()))?;
            f(&c)
        })
        .await
        .map_err(|e| StoreError::Database(e.to_string()))?
    }
}

fn process_batch(conn: &mut Connection, rules: &WorkerRules) -> Result<BatchOutcome, StoreError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let rows: Vec<(i64, String, String, String)> = {
        let mut stmt = tx.prepare_cached(
            "select rowid, account, task_id, body from webhook_inbox where processed_at is null order by rowid limit ?1",
        )?;
        let rows = stmt
            .query_map(params![rules.batch_size as i64], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<Result<_, _>>()?;
        rows
    };
    let mut out = BatchOutcome {
        claimed: rows.len(),
        ..Default::default()
    };
    let now = now_text();
    for (i, (rowid, account, task_id, body)) in rows.iter().enumerate() {
        if i == 1 {
            rules.failpoints.hit(Point::CrashInWorker);
        }
        match process_body(body, rules.keep_retry_suffix) {
            Ok(p) => {
                tx.execute(
                    "insert into answers (account, task_id, job_key, status, created_at, response) values (?1, ?2, ?3, ?4, ?5, ?6) on conflict do nothing",
                    params![account, task_id, p.job_key, p.status, sortable_time(p.created_at), p.response],
                )?;
                tx.execute(
                    "insert into effects (account, task_id, count) values (?1, ?2, 1) on conflict (account, task_id) do update set count = count + 1",
                    params![account, task_id],
                )?;
                if let Some((resource, sequence)) = &p.resource {
                    let sql = if rules.stale_sequence_overwrites {
                        "insert into resources (account, resource, sequence) values (?1, ?2, ?3) on conflict (account, resource) do update set sequence = excluded.sequence"
                    } else {
                        "insert into resources (account, resource, sequence) values (?1, ?2, ?3) on conflict (account, resource) do update set sequence = excluded.sequence where excluded.sequence > resources.sequence"
                    };
                    tx.execute(sql, params![account, resource, *sequence as i64])?;
                }
                tx.execute(
                    "update webhook_inbox set processed_at = ?1, error = null where rowid = ?2",
                    params![now, rowid],
                )?;
                out.processed += 1;
            }
            Err(e) if rules.poison_blocks_batch => {
                let _ = e;
                drop(tx);
                return Ok(BatchOutcome {
                    rolled_back: true,
                    processed: 0,
                    failed: 0,
                    ..out
                });
            }
            Err(e) => {
                tx.execute(
                    "update webhook_inbox set processed_at = ?1, error = ?2 where rowid = ?3",
                    params![now, e, rowid],
                )?;
                out.failed += 1;
            }
        }
    }
    if rows.len() == 1 {
        rules.failpoints.hit(Point::CrashInWorker);
    }
    tx.commit()?;
    Ok(out)
}

fn winners_sql(rule: WinnerRule) -> &'static str {
    match rule {
        WinnerRule::Created => "select account, job_key, task_id from (select account, job_key, task_id, row_number() over (partition by account, job_key order by created_at desc, task_id desc) as rn from answers where status = 'COMPLETED' and job_key is not null) where rn = 1 order by account, job_key",
        WinnerRule::AnyStatus => "select account, job_key, task_id from (select account, job_key, task_id, row_number() over (partition by account, job_key order by created_at desc, task_id desc) as rn from answers where job_key is not null) where rn = 1 order by account, job_key",
        WinnerRule::LastArrival => "select account, job_key, task_id from (select a.account, a.job_key, a.task_id, row_number() over (partition by a.account, a.job_key order by i.arrival desc) as rn from answers a join (select account, task_id, max(rowid) as arrival from webhook_inbox group by account, task_id) i on i.account = a.account and i.task_id = a.task_id where a.status = 'COMPLETED' and a.job_key is not null) where rn = 1 order by account, job_key",
    }
}

/// One section's query and how a row of it becomes a state row.
type SectionQuery = (
    Section,
    &'static str,
    fn(&rusqlite::Row) -> rusqlite::Result<Row>,
);

/// Streams one snapshot of the state (a read transaction: WAL keeps it
/// while writers go on) to `tx`, from this blocking thread. Each section's
/// first row is read before the section is sent, so a database that cannot
/// be read fails before anything was sent.
fn stream_state(c: &Connection, rule: WinnerRule, tx: &FeedSender) -> Result<(), StoreError> {
    let sections: [SectionQuery; 5] = [
        (
            Section::Inbox,
            "select task_id, account, processed_at is not null, error from webhook_inbox order by rowid",
            |r| {
                Ok(Row::Inbox(InboxRow {
                    key: r.get(0)?,
                    account: r.get(1)?,
                    processed: r.get(2)?,
                    error: r.get(3)?,
                }))
            },
        ),
        (
            Section::Results,
            "select task_id, job_key, status, created_at, account from answers order by account, task_id",
            |r| {
                Ok(Row::Results(ResultRow {
                    task_id: r.get(0)?,
                    job_key: r.get(1)?,
                    status: r.get(2)?,
                    created_at: r.get::<_, Option<String>>(3)?.map(|t| display_stored(&t)),
                    account: r.get(4)?,
                }))
            },
        ),
        (Section::Winners, winners_sql(rule), |r| {
            Ok(Row::Winners(Winner {
                account: r.get(0)?,
                job_key: r.get(1)?,
                task_id: r.get(2)?,
            }))
        }),
        (
            Section::Effects,
            "select task_id, count, account from effects order by account, task_id",
            |r| {
                Ok(Row::Effects(Effect {
                    key: r.get(0)?,
                    count: r.get::<_, i64>(1)? as u64,
                    account: r.get(2)?,
                }))
            },
        ),
        (
            Section::Resources,
            "select resource, sequence, account from resources order by account, resource",
            |r| {
                Ok(Row::Resources(ResourceRow {
                    resource: r.get(0)?,
                    sequence: r.get::<_, i64>(1)? as u64,
                    account: r.get(2)?,
                }))
            },
        ),
    ];
    let gone = || StoreError::Unavailable("the state reader went away".into());
    let send = |f: Feed| tx.blocking_send(Ok(f)).map_err(|_| gone());
    let snapshot = c.unchecked_transaction()?;
    let mut batch = Batcher::default();
    for (section, sql, convert) in sections {
        let mut stmt = snapshot.prepare(sql)?;
        let mut rows = stmt.query([])?;
        let mut next = rows.next()?;
        for f in batch.begin(section) {
            send(f)?;
        }
        while let Some(r) = next {
            if let Some(f) = batch.push(convert(r)?) {
                send(f)?;
            }
            next = rows.next()?;
        }
    }
    if let Some(f) = batch.end() {
        send(f)?;
    }
    snapshot.commit()?;
    Ok(())
}

impl Store for SqliteStore {
    fn insert(&self, d: NewDelivery) -> StoreFuture<'_, Inserted> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            self.send(Op::Insert(d, tx))?;
            rx.await
                .map_err(|_| StoreError::Unavailable("sqlite writer stopped".into()))?
        })
    }

    fn contains(&self, account: String, task_id: String) -> StoreFuture<'_, bool> {
        Box::pin(self.read(move |c| {
            Ok(c.query_row(
                "select 1 from webhook_inbox where account = ?1 and task_id = ?2 limit 1",
                params![account, task_id],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
        }))
    }

    fn requeue(&self, account: String, task_id: String) -> StoreFuture<'_, bool> {
        Box::pin(self.write(move |c| {
            let n = c.execute(
                "update webhook_inbox set processed_at = null, error = null where account = ?1 and task_id = ?2 and processed_at is not null",
                params![account, task_id],
            )?;
            Ok(n > 0)
        }))
    }

    fn process_batch(&self, rules: WorkerRules) -> StoreFuture<'_, BatchOutcome> {
        Box::pin(self.write(move |c| process_batch(c, &rules)))
    }

    fn stream_state(&self, rule: WinnerRule, tx: FeedSender) -> StoreFuture<'_, ()> {
        // A connection of its own: a client that reads slowly holds this
        // snapshot, never the reader the other queries share.
        let path = self.path.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let c = Connection::open(&path)?;
                c.busy_timeout(Duration::from_secs(5))?;
                stream_state(&c, rule, &tx)
            })
            .await
            .map_err(|e| StoreError::Database(e.to_string()))?
        })
    }

    fn reset(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.write(|c| {
            c.execute_batch(
                "begin immediate; delete from webhook_inbox; delete from answers; delete from effects; delete from resources; delete from submitted_tasks; commit;",
            )?;
            Ok(())
        }))
    }

    fn submit_tasks(&self, account: String, task_ids: Vec<String>) -> StoreFuture<'_, usize> {
        Box::pin(self.write(move |c| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let now = now_text();
            let mut n = 0;
            for id in &task_ids {
                n += tx.execute(
                    "insert into submitted_tasks (account, task_id, created_at) values (?1, ?2, ?3) on conflict do nothing",
                    params![account, id, now],
                )?;
            }
            tx.commit()?;
            Ok(n)
        }))
    }

    fn missing_submitted(&self) -> StoreFuture<'_, Vec<(String, String)>> {
        Box::pin(self.read(|c| {
            let rows = c
                .prepare("select s.account, s.task_id from submitted_tasks s where not exists (select 1 from webhook_inbox i where i.account = s.account and i.task_id = s.task_id) order by s.account, s.task_id")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(rows)
        }))
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.read(|c| {
            c.query_row("select 1", [], |_| Ok(()))?;
            Ok(())
        }))
    }
}
