// A webhook sender written the way a Node team writes one on Postgres
// alone: Express for its API, the `pg` driver, a `messages` table for
// what it owes and a `jobs` table as its queue (the design of pg-boss and
// its kind: workers poll due jobs, a job is deleted once its message is
// delivered or dead, and moved later when it must be retried).
//
// It mints its own delivery ids (`msg_` and 24 hex digits), keeps one per
// message across retries, signs each attempt afresh
// (`Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`),
// waits 5 s doubling, shortened by up to half, for 10 attempts, takes a
// 4xx other than 408 and 429 as final and honours Retry-After. A job's
// due time is kept in whole seconds (an integer column, as many queues
// keep it), so every retry waits until the next whole second at least:
// its timers have a resolution of one second. Its contract is
// `sender-profile.toml`: the reference sender's, with
// `[sender] timer_resolution = "1s"`. Waits are divided by
// HOOKSTORM_TIME_SCALE; the timeout is HOOKSTORM_TIMEOUT_MS. Per
// resource, a message is first sent only after every older one of it was
// tried.
//
// An emit saves its messages and queues their jobs in one transaction.
// SENDER_MUTANT=save-then-enqueue plants the bug of a queue kept outside
// the save's transaction: the messages are committed first, the jobs in a
// second transaction, and an emit that finds its message already saved (a
// repeat after a crash) takes it as queued. A crash between the two
// commits loses the message; a crash after the emit answered loses
// nothing.
//
// SENDER_MUTANT=claims-before-post plants the bug of a claim nothing frees:
// a message is marked `sending` before its POST (so no other worker takes
// it) and the poll takes only `pending` ones; nothing frees a claim whose
// worker died, so a crash with a POST in flight leaves the message
// `sending` for good.
//
// node sender.js --port P --database postgres://…

import crypto from "node:crypto";
import express from "express";
import pg from "pg";

const args = Object.fromEntries(
  process.argv
    .slice(2)
    .reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const SCALE = Number(process.env.HOOKSTORM_TIME_SCALE || "1");
const TIMEOUT_MS = Number(process.env.HOOKSTORM_TIMEOUT_MS || "15000");
const MUTANT = process.env.SENDER_MUTANT || "";
const SECRETS = Object.fromEntries(
  (process.env.HOOKSTORM_SENDER_ACCOUNTS || "")
    .split(";")
    .filter((p) => p.includes("="))
    .map((p) => [p.slice(0, p.indexOf("=")), p.slice(p.indexOf("=") + 1)]),
);
const MAX_ATTEMPTS = 10;
const BASE_S = 5;
const POLL_MS = 5;

const pool = new pg.Pool({ connectionString: args.database, max: 8 });

await pool.query(`CREATE TABLE IF NOT EXISTS messages (
  id BIGSERIAL PRIMARY KEY,
  account TEXT NOT NULL, key TEXT NOT NULL, url TEXT NOT NULL,
  body TEXT NOT NULL, msg_id TEXT NOT NULL, resource TEXT,
  status TEXT NOT NULL DEFAULT 'pending',
  attempts INTEGER NOT NULL DEFAULT 0,
  UNIQUE (account, key))`);
await pool.query(`CREATE TABLE IF NOT EXISTS jobs (
  message_id BIGINT PRIMARY KEY REFERENCES messages (id) ON DELETE CASCADE,
  due_at BIGINT NOT NULL)`);

// Due times are whole seconds since the epoch.
const nowS = () => Math.floor(Date.now() / 1000);

// The jobs this process is working on (one process: a restart frees all),
// and when each was last settled, so a poll that read a job before its
// attempt settled does not take that stale row for a job still due.
const working = new Set();
const settledAt = new Map();
let clock = 0;

function sign(secret, body, t) {
  const mac = crypto.createHmac("sha256", secret).update(`${t}.`).update(body).digest("hex");
  return `t=${t},v1=${mac}`;
}

function waitBefore(attempt, retryAfterS) {
  const base = BASE_S * 2 ** (attempt - 2);
  let wait = base / 2 + Math.random() * (base / 2);
  if (retryAfterS) wait = Math.max(wait, retryAfterS);
  return (wait * 1000) / SCALE;
}

async function post(m) {
  const t = Math.floor(Date.now() / 1000);
  const res = await fetch(m.url, {
    method: "POST",
    body: m.body,
    redirect: "manual",
    signal: AbortSignal.timeout(TIMEOUT_MS),
    headers: {
      "content-type": "application/json",
      "webhook-id": m.msg_id,
      "webhook-signature": sign(SECRETS[m.account] || "", m.body, t),
    },
  });
  await res.arrayBuffer();
  const ra = res.headers.get("retry-after");
  return { status: res.status, retryAfter: ra && /^\d+$/.test(ra) ? Number(ra) : null };
}

async function finish(m, status) {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    await client.query("UPDATE messages SET status=$1, attempts=$2 WHERE id=$3", [status, m.attempts + 1, m.id]);
    await client.query("DELETE FROM jobs WHERE message_id=$1", [m.id]);
    await client.query("COMMIT");
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

async function deliver(m) {
  const n = m.attempts + 1;
  if (MUTANT === "claims-before-post") {
    await pool.query("UPDATE messages SET status='sending' WHERE id=$1", [m.id]);
  }
  let status = null;
  let retryAfter = null;
  try {
    ({ status, retryAfter } = await post(m));
  } catch {
    // A timeout, a reset, a refused connection: retried.
  }
  if (status !== null && status >= 200 && status < 300) {
    await finish(m, "delivered");
  } else if ((status !== null && status >= 400 && status < 500 && status !== 408 && status !== 429) || n >= MAX_ATTEMPTS) {
    await finish(m, "dead");
  } else {
    const due = Math.ceil((Date.now() + waitBefore(n + 1, retryAfter)) / 1000);
    await pool.query("UPDATE messages SET status='pending', attempts=$1 WHERE id=$2", [n, m.id]);
    await pool.query("UPDATE jobs SET due_at=$1 WHERE message_id=$2", [due, m.id]);
  }
}

let polling = false;
async function poll() {
  if (polling) return;
  polling = true;
  try {
    const began = clock;
    const r = await pool.query(
      `SELECT m.id, m.account, m.url, m.body, m.msg_id, m.resource, m.attempts, j.due_at
         FROM jobs j JOIN messages m ON m.id = j.message_id
        WHERE m.status IN ('pending', $1) ORDER BY m.id`,
      // The mutant's poll leaves claimed messages alone.
      [MUTANT === "claims-before-post" ? "pending" : "sending"],
    );
    const now = nowS();
    const blocked = new Set();
    for (const m of r.rows) {
      // Per resource, a first send waits for the older ones.
      if (m.attempts === 0 && m.resource !== null) {
        if (blocked.has(m.resource)) continue;
        blocked.add(m.resource);
      }
      if (Number(m.due_at) > now || working.has(m.id) || (settledAt.get(m.id) ?? -1) >= began) continue;
      working.add(m.id);
      deliver(m)
        .catch((e) => console.error("delivery failed", e))
        .finally(() => {
          settledAt.set(m.id, clock++);
          working.delete(m.id);
        });
    }
  } catch (e) {
    console.error("poll failed", e);
  } finally {
    polling = false;
  }
}
setInterval(poll, POLL_MS);

const app = express();
app.use(express.json({ limit: "2mb" }));

app.get("/healthz", (_req, res) => res.json({ ok: true }));

app.get("/outbox", async (_req, res) => {
  const r = await pool.query(
    `SELECT key, account, CASE status WHEN 'sending' THEN 'pending' ELSE status END AS status, attempts
       FROM messages ORDER BY id`,
  );
  res.json(r.rows);
});

app.post("/reset", async (_req, res) => {
  await pool.query("DELETE FROM messages");
  res.json({});
});

async function inTransaction(work) {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const out = await work(client);
    await client.query("COMMIT");
    return out;
  } catch (e) {
    await client.query("ROLLBACK").catch(() => {});
    throw e;
  } finally {
    client.release();
  }
}

async function save(client, events) {
  const saved = [];
  for (const e of events) {
    const msgId = "msg_" + crypto.randomBytes(12).toString("hex");
    const r = await client.query(
      `INSERT INTO messages (account, key, url, body, msg_id, resource)
       VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (account, key) DO NOTHING RETURNING id`,
      [e.account, e.key, e.url, e.body, msgId, e.resource ?? null],
    );
    saved.push(...r.rows.map((row) => row.id));
  }
  return saved;
}

async function enqueue(client, ids) {
  for (const id of ids) {
    await client.query("INSERT INTO jobs (message_id, due_at) VALUES ($1, $2)", [id, nowS()]);
  }
}

app.post("/emit", async (req, res) => {
  const events = req.body.events || [];
  try {
    if (MUTANT === "save-then-enqueue") {
      const ids = await inTransaction((c) => save(c, events));
      await inTransaction((c) => enqueue(c, ids));
    } else {
      await inTransaction(async (c) => enqueue(c, await save(c, events)));
    }
  } catch (err) {
    return res.status(500).json({ error: String(err) });
  }
  res.json({ accepted: events.length });
});

app.listen(Number(args.port), "127.0.0.1");
