// The receiver's store: an inbox row per event (unique per account and
// event identity), the winning update per object, a count of the
// business effect per event, the sequence applied per resource (never
// lowered), and the tasks the team submitted (for reconciliation). SQLite through better-sqlite3, or Postgres
// through a pg Pool. ZOO_DATABASE is a file path or a postgres:// URL.
// ZOO_DB_WAIT_MS is how long a request waits for its database: SQLite's
// busy timeout (5 s, better-sqlite3's default, without it), and on
// Postgres the pool's connect and query timeouts (without it, none: a
// query waits as long as a silent database makes it).
import Database from "better-sqlite3";
import pg from "pg";

const mutant = process.env.ZOO_MUTANT ?? "";
const wait = process.env.ZOO_DB_WAIT_MS ? Number(process.env.ZOO_DB_WAIT_MS) : null;

const schema = (ts) => [
  `create table if not exists webhook_inbox (
     account text not null,
     key text not null,
     type text,
     object text,
     ordered text,
     resource text,
     sequence integer,
     failed boolean not null default false,
     body text not null,
     received_at ${ts},
     processed_at text,
     error text${mutant === "unique-dropped" || mutant === "memory-dedupe" ? "" : ",\n     primary key (account, key)"}
   )`,
  `create table if not exists winners (
     account text not null, object text not null, key text not null, rank double precision not null,
     primary key (account, object))`,
  `create table if not exists effects (
     account text not null, key text not null, count integer not null, primary key (account, key))`,
  `create table if not exists resources (
     account text not null, resource text not null, sequence integer not null, primary key (account, resource))`,
  `create table if not exists submitted (
     account text not null, key text not null, primary key (account, key))`,
];

const newer = "where excluded.rank > winners.rank or (excluded.rank = winners.rank and excluded.key > winners.key collate \"C\")";
const winnerUpsert = `insert into winners (account, object, key, rank) values ($1, $2, $3, $4)
  on conflict (account, object) do update set key = excluded.key, rank = excluded.rank
  ${mutant === "winner-by-arrival" ? "" : newer}`;
// A resource moves only forward: an older sequence arriving late is stored
// and processed, and changes nothing.
const resourceUpsert = `insert into resources (account, resource, sequence) values ($1, $2, $3)
  on conflict (account, resource) do update set sequence = excluded.sequence
  ${mutant === "sequence-by-arrival" ? "" : "where excluded.sequence > resources.sequence"}`;
const eventValues = (account, e) => [account, e.key, e.type ?? null, e.object ?? null,
  e.order == null ? null : JSON.stringify(e.order), e.resource ?? null, e.sequence ?? null];
const missingSubmitted = `select s.account, s.key from submitted s where not exists
  (select 1 from webhook_inbox i where i.account = s.account and i.key = s.key) order by s.account, s.key`;

function sqlite(path) {
  const db = new Database(path, { timeout: wait ?? 5000 });
  db.pragma("journal_mode = WAL");
  db.pragma("synchronous = FULL");
  for (const s of schema("text not null default current_timestamp")) db.exec(s);
  const q = (sql) => db.prepare(sql.replace(/\$\d+/g, "?").replace('collate "C"', "collate binary"));
  const insert = q(`insert into webhook_inbox (account, key, type, object, ordered, resource, sequence, failed, body, processed_at)
    values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict do nothing`);
  const pending = q(`select account, key, object, ordered, resource, sequence, failed from webhook_inbox
    where processed_at is null and error is null limit 200`);
  const done = q("update webhook_inbox set processed_at = current_timestamp where account = $1 and key = $2 and processed_at is null");
  const failed = q("update webhook_inbox set error = $1 where account = $2 and key = $3 and processed_at is null");
  const effect = q(`insert into effects (account, key, count) values ($1, $2, 1)
    on conflict (account, key) do update set count = effects.count + 1`);
  const win = q(winnerUpsert);
  const advance = q(resourceUpsert);
  const unsubmit = q("delete from submitted where account = $1");
  const submit = q("insert into submitted (account, key) values ($1, $2) on conflict do nothing");
  const missing = q(missingSubmitted);
  return {
    async receive(account, e, body, processed = false) {
      insert.run(...eventValues(account, e), e.failed ? 1 : 0, body, processed ? new Date().toISOString() : null);
    },
    async submit(account, keys) {
      db.transaction(() => {
        unsubmit.run(account);
        for (const k of keys) submit.run(account, k);
      })();
    },
    async missing() {
      return missing.all();
    },
    async effect(account, key) {
      effect.run(account, key);
    },
    async pending() {
      return pending.all().map((r) => ({ ...r, failed: !!r.failed }));
    },
    // One transaction: mark the row, run the effect once, keep the winner.
    async settle(row, rank) {
      db.transaction(() => {
        if (rank === null) return failed.run("order field is not a time", row.account, row.key);
        if (done.run(row.account, row.key).changes === 0) return;
        effect.run(row.account, row.key);
        if (!row.failed && row.object != null) win.run(row.account, row.object, row.key, rank);
        if (row.resource != null && row.sequence != null) advance.run(row.account, row.resource, row.sequence);
      })();
    },
  };
}

function postgres(url) {
  const timeouts = wait === null ? {} : { connectionTimeoutMillis: wait, query_timeout: wait };
  const pool = new pg.Pool({ connectionString: url, max: 10, ...timeouts });
  pool.on("error", () => {});
  // The migration, under a lock: the server and the worker may both run it.
  const ready = (async () => {
    const c = await pool.connect();
    try {
      await c.query("begin");
      await c.query("select pg_advisory_xact_lock(7707)");
      for (const s of schema("timestamptz not null default now()")) {
        await c.query(s.replace("processed_at text", "processed_at timestamptz"));
      }
      await c.query("commit");
    } finally {
      c.release();
    }
  })();
  return {
    ready,
    async receive(account, e, body, processed = false) {
      await pool.query(
        `insert into webhook_inbox (account, key, type, object, ordered, resource, sequence, failed, body, processed_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) on conflict do nothing`,
        [...eventValues(account, e), !!e.failed, body, processed ? new Date() : null],
      );
    },
    async submit(account, keys) {
      const c = await pool.connect();
      try {
        await c.query("begin");
        await c.query("delete from submitted where account = $1", [account]);
        for (const k of keys) {
          await c.query("insert into submitted (account, key) values ($1, $2) on conflict do nothing", [account, k]);
        }
        await c.query("commit");
      } catch (e) {
        await c.query("rollback").catch(() => {});
        throw e;
      } finally {
        c.release();
      }
    },
    async missing() {
      return (await pool.query(missingSubmitted)).rows;
    },
    async effect(account, key) {
      await pool.query(
        `insert into effects (account, key, count) values ($1, $2, 1)
         on conflict (account, key) do update set count = effects.count + 1`, [account, key]);
    },
    async pending() {
      const r = await pool.query(`select account, key, object, ordered, resource, sequence, failed from webhook_inbox
        where processed_at is null and error is null limit 200`);
      return r.rows;
    },
    async settle(row, rank) {
      const c = await pool.connect();
      // A client whose query failed (a timed-out one still waits for its
      // answer) leaves the pool instead of going back to it.
      let broken;
      try {
        await c.query("begin");
        if (rank === null) {
          await c.query("update webhook_inbox set error = $1 where account = $2 and key = $3 and processed_at is null",
            ["order field is not a time", row.account, row.key]);
        } else {
          const r = await c.query(
            "update webhook_inbox set processed_at = now() where account = $1 and key = $2 and processed_at is null",
            [row.account, row.key]);
          if (r.rowCount > 0) {
            await c.query(`insert into effects (account, key, count) values ($1, $2, 1)
              on conflict (account, key) do update set count = effects.count + 1`, [row.account, row.key]);
            if (!row.failed && row.object != null) await c.query(winnerUpsert, [row.account, row.object, row.key, rank]);
            if (row.resource != null && row.sequence != null) {
              await c.query(resourceUpsert, [row.account, row.resource, row.sequence]);
            }
          }
        }
        await c.query("commit");
      } catch (e) {
        broken = e;
        await c.query("rollback").catch(() => {});
        throw e;
      } finally {
        c.release(broken);
      }
    },
  };
}

export async function openStore(where) {
  if (/^postgres(ql)?:\/\//.test(where)) {
    const s = postgres(where);
    await s.ready;
    return s;
  }
  return sqlite(where);
}
