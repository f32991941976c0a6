//! The Postgres store: a small connection pool of its own, `for update skip
//! locked` claims so several workers can run side by side, and clear 503s
//! while the server is away.
//!
//! The pool hands out at most `POOL_SIZE` connections; a connection found
//! closed is dropped and a new one is opened on demand, so the store
//! reconnects by itself when the server returns. Connect failures and lost
//! connections become `StoreError::Unavailable`, which the handler answers
//! with 503.

use std::sync::Mutex;
use std::time::Duration;

use hookstorm::state::stream::{Row, Section};
use hookstorm::state::{Effect, InboxRow, ResourceRow, ResultRow, Winner};
use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::{Client, NoTls};

use super::{
    BatchOutcome, Batcher, FeedSender, Inserted, Keying, NewDelivery, Store, StoreFuture,
    StoreOptions, WinnerRule, WorkerRules,
};
use crate::error::StoreError;
use crate::failpoint::Point;
use crate::process::{display_stored, process_body, sortable_time};

const POOL_SIZE: usize = 8;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

struct Pool {
    config: tokio_postgres::Config,
    idle: Mutex<Vec<Client>>,
    permits: Semaphore,
}

struct Pooled<'a> {
    client: Option<Client>,
    pool: &'a Pool,
    _permit: SemaphorePermit<'a>,
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Client;
    fn deref(&self) -> &Client {
        self.client.as_ref().expect("client present until drop")
    }
}

impl std::ops::DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Client {
        self.client.as_mut().expect("client present until drop")
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            if !c.is_closed() {
                if let Ok(mut idle) = self.pool.idle.lock() {
                    idle.push(c);
                }
            }
        }
    }
}

impl Pool {
    async fn get(&self) -> Result<Pooled<'_>, StoreError> {
        let permit = tokio::time::timeout(Duration::from_secs(5), self.permits.acquire())
            .await
            .map_err(|_| StoreError::Unavailable("no database connection free".into()))?
            .map_err(|_| StoreError::Unavailable("pool closed".into()))?;
        let reuse = {
            let mut idle = self
                .idle
                .lock()
                .map_err(|_| StoreError::Unavailable("pool lock poisoned".into()))?;
            let mut found = None;
            while let Some(c) = idle.pop() {
                if !c.is_closed() {
                    found = Some(c);
                    break;
                }
            }
            found
        };
        let client = match reuse {
            Some(c) => c,
            None => {
                let (client, conn) =
                    tokio::time::timeout(CONNECT_TIMEOUT, self.config.connect(NoTls))
                        .await
                        .map_err(|_| StoreError::Unavailable("connect timed out".into()))?
                        .map_err(|e| StoreError::Unavailable(e.to_string()))?;
                tokio::spawn(async move {
                    let _ = conn.await;
                });
                client
            }
        };
        Ok(Pooled {
            client: Some(client),
            pool: self,
            _permit: permit,
        })
    }
}

/// The Postgres store.
pub struct PgStore {
    pool: Pool,
}

fn inbox_ddl(keying: Keying) -> &'static str {
    match keying {
        Keying::AccountTask => "create table if not exists webhook_inbox (id bigserial, account text not null, task_id text not null, webhook_id text, body text not null, received_at timestamptz not null default now(), processed_at timestamptz, error text, primary key (account, task_id))",
        Keying::WebhookId => "create table if not exists webhook_inbox (id bigserial, account text not null, task_id text not null, webhook_id text, body text not null, received_at timestamptz not null default now(), processed_at timestamptz, error text, unique (account, webhook_id))",
        Keying::Unconstrained => "create table if not exists webhook_inbox (id bigserial, account text not null, task_id text not null, webhook_id text, body text not null, received_at timestamptz not null default now(), processed_at timestamptz, error text)",
        Keying::TaskOnly => "create table if not exists webhook_inbox (id bigserial, account text not null, task_id text not null, webhook_id text, body text not null, received_at timestamptz not null default now(), processed_at timestamptz, error text, unique (task_id))",
    }
}

const TIME_TEXT: &str = "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"'";

impl PgStore {
    /// Connects and creates the schema if missing.
    pub async fn open(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e: tokio_postgres::Error| StoreError::BadUrl(format!("{url}: {e}")))?;
        let store = PgStore {
            pool: Pool {
                config,
                idle: Mutex::new(Vec::new()),
                permits: Semaphore::new(POOL_SIZE),
            },
        };
        {
            let c = store.pool.get().await?;
            c.batch_execute("create table if not exists inbox_keying (keying text not null)")
                .await?;
            let recorded: Option<String> = c
                .query_opt("select keying from inbox_keying limit 1", &[])
                .await?
                .map(|r| r.get(0));
            let recreate = options.keying.must_recreate(recorded.as_deref());
            if recreate {
                c.batch_execute("drop table if exists webhook_inbox")
                    .await?;
            }
            c.batch_execute(inbox_ddl(options.keying)).await?;
            if recreate {
                c.execute("delete from inbox_keying", &[]).await?;
                c.execute(
                    "insert into inbox_keying (keying) values ($1)",
                    &[&options.keying.name()],
                )
                .await?;
            }
            c.batch_execute(
                "create index if not exists webhook_inbox_unprocessed on webhook_inbox (id) where processed_at is null;
                 create table if not exists answers (account text not null, task_id text not null, job_key text, status text not null, created_at timestamptz not null, response text, primary key (account, task_id));
                 create table if not exists effects (account text not null, task_id text not null, count bigint not null, primary key (account, task_id));
                 create table if not exists resources (account text not null, resource text not null, sequence bigint not null, primary key (account, resource));
                 create table if not exists submitted_tasks (account text not null, task_id text not null, created_at timestamptz not null default now(), primary key (account, task_id));",
            )
            .await?;
        }
        Ok(store)
    }
}

async fn process_batch(store: &PgStore, rules: &WorkerRules) -> Result<BatchOutcome, StoreError> {
    let mut c = store.pool.get().await?;
    let tx = c.transaction().await?;
    let rows = tx
        .query(
            "select id, account, task_id, body from webhook_inbox where processed_at is null order by id limit $1 for update skip locked",
            &[&(rules.batch_size as i64)],
        )
        .await?;
    let mut out = BatchOutcome {
        claimed: rows.len(),
        ..Default::default()
    };
    for (i, row) in rows.iter().enumerate() {
        if i == 1 {
            rules.failpoints.hit(Point::CrashInWorker);
        }
        let id: i64 = row.get(0);
        let account: String = row.get(1);
        let task_id: String = row.get(2);
        let body: String = row.get(3);
        match process_body(&body, rules.keep_retry_suffix) {
            Ok(p) => {
                let created = sortable_time(p.created_at);
                tx.execute(
                    "insert into answers (account, task_id, job_key, status, created_at, response) values ($1, $2, $3, $4, ($5::text)::timestamptz, $6) on conflict do nothing",
                    &[&account, &task_id, &p.job_key, &p.status, &created, &p.response],
                )
                .await?;
                tx.execute(
                    "insert into effects (account, task_id, count) values ($1, $2, 1) on conflict (account, task_id) do update set count = effects.count + 1",
                    &[&account, &task_id],
                )
                .await?;
                if let Some((resource, sequence)) = &p.resource {
                    let sql = if rules.stale_sequence_overwrites {
                        "insert into resources (account, resource, sequence) values ($1, $2, $3) on conflict (account, resource) do update set sequence = excluded.sequence"
                    } else {
                        "insert into resources (account, resource, sequence) values ($1, $2, $3) on conflict (account, resource) do update set sequence = excluded.sequence where excluded.sequence > resources.sequence"
                    };
                    tx.execute(sql, &[&account, resource, &(*sequence as i64)])
                        .await?;
                }
                tx.execute(
                    "update webhook_inbox set processed_at = now(), error = null where id = $1",
                    &[&id],
                )
                .await?;
                out.processed += 1;
            }
            Err(_) if rules.poison_blocks_batch => {
                tx.rollback().await?;
                return Ok(BatchOutcome {
                    rolled_back: true,
                    processed: 0,
                    failed: 0,
                    ..out
                });
            }
            Err(e) => {
                tx.execute(
                    "update webhook_inbox set processed_at = now(), error = $1 where id = $2",
                    &[&e, &id],
                )
                .await?;
                out.failed += 1;
            }
        }
    }
    if rows.len() == 1 {
        rules.failpoints.hit(Point::CrashInWorker);
    }
    tx.commit().await?;
    Ok(out)
}

fn winners_sql(rule: WinnerRule) -> &'static str {
    match rule {
        // The reporting query (the latest COMPLETED task per job), scoped by account.
        WinnerRule::Created => "select distinct on (account, job_key) account, job_key, task_id from answers where status = 'COMPLETED' and job_key is not null order by account, job_key, created_at desc, task_id desc",
        WinnerRule::AnyStatus => "select distinct on (account, job_key) account, job_key, task_id from answers where job_key is not null order by account, job_key, created_at desc, task_id desc",
        WinnerRule::LastArrival => "select distinct on (a.account, a.job_key) a.account, a.job_key, a.task_id from answers a join (select account, task_id, max(id) as arrival from webhook_inbox group by account, task_id) i on i.account = a.account and i.task_id = a.task_id where a.status = 'COMPLETED' and a.job_key is not null order by a.account, a.job_key, i.arrival desc",
    }
}

/// One section's query and how a row of it becomes a state row.
type SectionQuery<'a> = (Section, &'a str, fn(&tokio_postgres::Row) -> Row);

/// Streams one snapshot of the state (a read-only repeatable-read
/// transaction) to `tx`, rows as the server sends them.
async fn stream_state(store: &PgStore, rule: WinnerRule, tx: FeedSender) -> Result<(), StoreError> {
    use futures_util::TryStreamExt;
    use tokio_postgres::types::ToSql;
    let results = format!("select task_id, job_key, status, to_char(created_at at time zone 'UTC', {TIME_TEXT}), account from answers order by account, task_id");
    let sections: [SectionQuery; 5] = [
        (
            Section::Inbox,
            "select task_id, account, processed_at is not null, error from webhook_inbox order by id",
            |r| {
                Row::Inbox(InboxRow {
                    key: r.get(0),
                    account: r.get(1),
                    processed: r.get(2),
                    error: r.get(3),
                })
            },
        ),
        (Section::Results, &results, |r| {
            Row::Results(ResultRow {
                task_id: r.get(0),
                job_key: r.get(1),
                status: r.get(2),
                created_at: r.get::<_, Option<String>>(3).map(|t| display_stored(&t)),
                account: r.get(4),
            })
        }),
        (Section::Winners, winners_sql(rule), |r| {
            Row::Winners(Winner {
                account: r.get(0),
                job_key: r.get(1),
                task_id: r.get(2),
            })
        }),
        (
            Section::Effects,
            "select task_id, count, account from effects order by account, task_id",
            |r| {
                Row::Effects(Effect {
                    key: r.get(0),
                    count: r.get::<_, i64>(1) as u64,
                    account: r.get(2),
                })
            },
        ),
        (
            Section::Resources,
            "select resource, sequence, account from resources order by account, resource",
            |r| {
                Row::Resources(ResourceRow {
                    resource: r.get(0),
                    sequence: r.get::<_, i64>(1) as u64,
                    account: r.get(2),
                })
            },
        ),
    ];
    let gone = |_| StoreError::Unavailable("the state reader went away".into());
    let mut c = store.pool.get().await?;
    let snapshot = c
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await?;
    let mut batch = Batcher::default();
    for (section, sql, convert) in sections {
        let rows = snapshot
            .query_raw(sql, std::iter::empty::<&(dyn ToSql + Sync)>())
            .await?;
        let mut rows = std::pin::pin!(rows);
        for f in batch.begin(section) {
            tx.send(Ok(f)).await.map_err(gone)?;
        }
        while let Some(r) = rows.try_next().await? {
            if let Some(f) = batch.push(convert(&r)) {
                tx.send(Ok(f)).await.map_err(gone)?;
            }
        }
    }
    if let Some(f) = batch.end() {
        tx.send(Ok(f)).await.map_err(gone)?;
    }
    snapshot.commit().await?;
    Ok(())
}

impl Store for PgStore {
    fn insert(&self, d: NewDelivery) -> StoreFuture<'_, Inserted> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            let n = c
                .execute(
                    "insert into webhook_inbox (account, task_id, webhook_id, body) values ($1, $2, $3, $4) on conflict do nothing",
                    &[&d.account, &d.task_id, &d.webhook_id, &d.body],
                )
                .await?;
            Ok(if n == 1 {
                Inserted::New
            } else {
                Inserted::Duplicate
            })
        })
    }

    fn contains(&self, account: String, task_id: String) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            let row = c
                .query_opt(
                    "select 1 from webhook_inbox where account = $1 and task_id = $2 limit 1",
                    &[&account, &task_id],
                )
                .await?;
            Ok(row.is_some())
        })
    }

    fn requeue(&self, account: String, task_id: String) -> StoreFuture<'_, bool> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            let n = c
                .execute(
                    "update webhook_inbox set processed_at = null, error = null where account = $1 and task_id = $2 and processed_at is not null",
                    &[&account, &task_id],
                )
                .await?;
            Ok(n > 0)
        })
    }

    fn process_batch(&self, rules: WorkerRules) -> StoreFuture<'_, BatchOutcome> {
        Box::pin(async move { process_batch(self, &rules).await })
    }

    fn stream_state(&self, rule: WinnerRule, tx: FeedSender) -> StoreFuture<'_, ()> {
        Box::pin(stream_state(self, rule, tx))
    }

    fn reset(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            c.batch_execute("truncate webhook_inbox, answers, effects, resources, submitted_tasks")
                .await?;
            Ok(())
        })
    }

    fn submit_tasks(&self, account: String, task_ids: Vec<String>) -> StoreFuture<'_, usize> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            let n = c
                .execute(
                    "insert into submitted_tasks (account, task_id) select $1, unnest($2::text[]) on conflict do nothing",
                    &[&account, &task_ids],
                )
                .await?;
            Ok(n as usize)
        })
    }

    fn missing_submitted(&self) -> StoreFuture<'_, Vec<(String, String)>> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            let rows = c
                .query("select s.account, s.task_id from submitted_tasks s where not exists (select 1 from webhook_inbox i where i.account = s.account and i.task_id = s.task_id) order by s.account, s.task_id", &[])
                .await?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn ping(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            let c = self.pool.get().await?;
            c.simple_query("select 1").await?;
            Ok(())
        })
    }
}
