// An Express webhook receiver for answerline deliveries, with its worker
// as a timer in the same process.
//
// POST /webhooks/:account: verify the signature on the raw body, store the
// delivery in webhook_inbox (once per account and task id), answer 200. The
// worker then settles each stored row in one transaction. GET /admin/state
// and POST /admin/reset serve hookstorm (behind HOOKSTORM_ADMIN_TOKEN);
// GET /healthz says it is up.
//
//   PORT=8002 node server.js
import crypto from "node:crypto";
import Database from "better-sqlite3";
import express from "express";

// Each account's signing secrets, comma separated, current first: during
// a rotation both verify.
const secrets = {
  acct_a: process.env.HOOKSTORM_SECRETS_ACCT_A ?? "",
  acct_b: process.env.HOOKSTORM_SECRETS_ACCT_B ?? "",
};
const adminToken = process.env.HOOKSTORM_ADMIN_TOKEN ?? "";
const toleranceSecs = 300;

// The busy timeout stays under a second: a locked database answers 503 and
// the sender retries, instead of holding the only thread.
const db = new Database(process.env.DATABASE_PATH ?? "receiver.db", { timeout: 500 });
db.pragma("journal_mode = WAL");
db.exec(`
  create table if not exists webhook_inbox (
    account text not null, task_id text not null, body text not null,
    received_at text not null default current_timestamp,
    processed_at text, error text,
    primary key (account, task_id));   -- a duplicate delivery is a no-op
  create table if not exists answers (
    account text not null, task_id text not null, job_key text,
    status text not null, created_at text,
    primary key (account, task_id));
  create table if not exists effects (
    account text not null, task_id text not null, count integer not null,
    primary key (account, task_id));`);

const insert = db.prepare(
  "insert into webhook_inbox (account, task_id, body) values (?, ?, ?) on conflict do nothing");

// Webhook-Signature: t=<unix>,v1=<hex>[,v1=<hex>], HMAC-SHA256 of
// "<t>.<raw body>"; any v1 matching any secret we hold will do.
function verified(raw, header, accountSecrets) {
  const parts = (header ?? "").split(",").map((p) => p.trim().split("=", 2)).filter((p) => p.length === 2);
  const t = Number(parts.find(([k]) => k === "t")?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > toleranceSecs) return false;
  const given = parts.filter(([k]) => k === "v1").map(([, v]) => Buffer.from(v));
  return accountSecrets.split(",").filter(Boolean).some((secret) => {
    const hmac = crypto.createHmac("sha256", secret).update(`${t}.`).update(raw).digest("hex");
    const expected = Buffer.from(hmac);
    return given.some((v) => v.length === expected.length && crypto.timingSafeEqual(v, expected));
  });
}

const app = express();

// express.raw keeps the bytes as sent (never verify a re-serialisation);
// a body over 1 MB is answered 413.
app.post("/webhooks/:account", express.raw({ type: () => true, limit: "1mb" }), (req, res) => {
  const accountSecrets = secrets[req.params.account];
  if (accountSecrets === undefined) return res.sendStatus(404);
  const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
  if (!verified(raw, req.get("webhook-signature"), accountSecrets)) return res.sendStatus(400);
  let event;
  try {
    event = JSON.parse(raw.toString("utf8"));
  } catch {
    return res.sendStatus(400);
  }
  if (event.test) return res.sendStatus(204); // a dashboard test: store nothing
  const taskId = event.task?.id;
  if (typeof taskId !== "string") return res.sendStatus(400);
  try {
    // Stored before we answer: a crash after this line loses nothing.
    insert.run(req.params.account, taskId, raw.toString("utf8"));
  } catch (err) {
    console.error(`store: ${err.message}`);
    return res.sendStatus(503); // the database is unavailable: retry later
  }
  res.sendStatus(200);
});

app.get("/healthz", (req, res) => res.send("ok"));

function admin(req, res, next) {
  const given = Buffer.from(req.get("authorization") ?? "");
  const expected = Buffer.from(`Bearer ${adminToken}`);
  if (!adminToken || given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) {
    return res.sendStatus(401);
  }
  next();
}

// The four reads in one transaction: they see one snapshot.
const readState = db.transaction(() => ({
  inbox: db
    .prepare("select task_id as key, account, processed_at, error from webhook_inbox")
    .all()
    .map(({ processed_at, ...row }) => ({ ...row, processed: processed_at !== null })),
  results: db.prepare("select task_id, job_key, status, created_at, account from answers").all(),
  // Per job, the COMPLETED task created last (the larger id on a tie).
  winners: db.prepare(`select a.job_key, a.task_id, a.account from answers a
    where a.status = 'COMPLETED' and a.job_key is not null and not exists (
      select 1 from answers b where b.account = a.account and b.job_key = a.job_key
        and b.status = 'COMPLETED' and (b.created_at > a.created_at
        or (b.created_at = a.created_at and b.task_id > a.task_id)))`).all(),
  effects: db.prepare("select task_id as key, count, account from effects").all(),
}));

app.get("/admin/state", admin, (req, res) => res.json(readState()));

app.post("/admin/reset", admin, (req, res) => {
  db.exec("delete from webhook_inbox; delete from answers; delete from effects;");
  res.sendStatus(204);
});

// The worker: settles stored rows, one transaction each.
const pending = db.prepare(
  "select account, task_id, body from webhook_inbox where processed_at is null and error is null limit 100");
const markFailed = db.prepare("update webhook_inbox set error = ? where account = ? and task_id = ?");
const markDone = db.prepare(`update webhook_inbox set processed_at = current_timestamp
  where account = ? and task_id = ? and processed_at is null`);
const addAnswer = db.prepare("insert into answers values (?, ?, ?, ?, ?)");
const runEffect = db.prepare("insert into effects values (?, ?, 1) on conflict do update set count = count + 1");

const settle = db.transaction((account, taskId, answer) => {
  // Only a row still unsettled (not removed by a reset) is done, and all of
  // it commits together: nothing here runs twice for a task.
  if (markDone.run(account, taskId).changes === 0) return;
  addAnswer.run(account, taskId, answer.jobKey, answer.status, answer.createdAt);
  runEffect.run(account, taskId); // the business step (notify, bill, ...): here a counter
});

function parse(body) {
  const task = JSON.parse(body).task;
  const created = new Date(task.createdAt);
  if (typeof task.createdAt !== "string" || Number.isNaN(created.getTime())) {
    throw new Error(`createdAt is not a date: ${JSON.stringify(task.createdAt)}`);
  }
  return {
    // The job a task belongs to: its idempotency key without "-rN".
    jobKey: task.idempotencyKey == null ? null : task.idempotencyKey.replace(/-r\d+$/, ""),
    status: task.status,
    createdAt: created.toISOString(), // fixed-width UTC: text order is time order
  };
}

function work() {
  let rows = [];
  try {
    rows = pending.all();
    for (const { account, task_id, body } of rows) {
      let answer;
      try {
        answer = parse(body);
      } catch (err) {
        markFailed.run(`cannot process: ${err.message}`, account, task_id); // the others go on
        continue;
      }
      settle(account, task_id, answer);
    }
  } catch (err) {
    console.error(`worker: ${err.message}`); // locked or cut: try again
  }
  setTimeout(work, rows.length ? 0 : 50);
}
work();

app.listen(Number(process.env.PORT ?? 8002), "127.0.0.1", () => console.log("listening"));
