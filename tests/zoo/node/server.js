// An Express webhook endpoint the way a product team writes one: the
// provider's own verify step on the raw body (express.raw), the event
// stored in the inbox in one insert before the 2xx, and the work left to
// worker.js. One app for every provider: ZOO_PROVIDER picks the verify
// module in providers/.
//
//   node server.js --db FILE_OR_POSTGRES_URL [--listen fd:3 | --listen PORT]
//
// Secrets: ZOO_SECRET_ACCT_A, ZOO_SECRET_ACCT_B. GET /healthz answers 200.
//
// ZOO_MUTANT plants one bug (the conformance tests check hookstorm catches
// each); unset, the receiver is correct.
import express from "express";
import { parseArgs } from "node:util";
import { openStore } from "./store.js";

const { values: args } = parseArgs({ options: { db: { type: "string" }, listen: { type: "string", default: "0" } } });
const provider = await import(`./providers/${process.env.ZOO_PROVIDER ?? "answerline"}.js`);
const mutant = process.env.ZOO_MUTANT ?? "";
const secrets = { acct_a: process.env.ZOO_SECRET_ACCT_A, acct_b: process.env.ZOO_SECRET_ACCT_B };
const store = await openStore(args.db);
const seen = new Set();
const slowOnce = new Set();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A downstream call that is slow the first time per event (a cold cache),
// past the provider's timeout: only the inline-processing bug meets it.
async function chargeCustomer(account, key) {
  await store.effect(account, key);
  if (!slowOnce.has(key)) {
    slowOnce.add(key);
    await sleep(Number(process.env.ZOO_SLOW_MS ?? 16000));
  }
}

const app = express();
app.get("/healthz", (req, res) => res.sendStatus(200));

const body =
  mutant === "reserialized-body"
    ? express.json({ limit: "1mb", type: () => true })
    : express.raw({ limit: "1mb", type: () => true });

app.post("/webhooks/:account", body, async (req, res) => {
  const secret = secrets[req.params.account];
  if (!secret) return res.sendStatus(404);
  const raw = mutant === "reserialized-body" ? Buffer.from(JSON.stringify(req.body)) : req.body;
  let event;
  try {
    event = await provider.verify(raw, req.headers, secret, mutant);
  } catch {
    return res.sendStatus(400);
  }
  const e = provider.describe(event, req.headers);
  if (e.challenge !== undefined) return res.json({ challenge: e.challenge });
  if (e.ignore) return res.sendStatus(204);
  if (!provider.handles(e.type)) return res.sendStatus(mutant === "unknown-type-400" ? 400 : 204);
  if (!e.key) return res.sendStatus(400);
  if (mutant === "memory-dedupe") {
    if (seen.has(`${req.params.account}/${e.key}`)) return res.sendStatus(200);
    seen.add(`${req.params.account}/${e.key}`);
  }
  if (mutant === "commit-after-ack") res.sendStatus(200);
  try {
    if (mutant === "inline-processing") await chargeCustomer(req.params.account, e.key);
    await store.receive(req.params.account, e, raw.toString("utf8"), mutant === "inline-processing");
  } catch (err) {
    console.error(`store: ${err.message}`);
    if (!res.headersSent) res.sendStatus(mutant === "ok-on-db-error" ? 200 : 503);
    return;
  }
  if (!res.headersSent) res.sendStatus(200);
});

// Reconciliation, for a provider with an API to ask (answerline's): the
// tasks the team submitted are recorded, and one pass asks the API for
// each one the inbox lacks and stores the final ones as if delivered. A
// 404 is skipped, a task not final yet is left for the next pass, and the
// pass stops at the first 429 and says how many it left ("throttled").
// ZOO_PROVIDER_API is the API's base URL; the key is ZOO_PROVIDER_KEY.
app.post("/hookstorm/setup", express.json(), async (req, res) => {
  const { state, params } = req.body ?? {};
  if (state !== "tasks-submitted" || typeof params?.account !== "string") return res.sendStatus(400);
  try {
    await store.submit(params.account, params.task_ids ?? []);
  } catch (err) {
    return res.status(503).json({ error: err.message });
  }
  res.sendStatus(204);
});

app.post("/hookstorm/reconcile", async (req, res) => {
  const api = process.env.ZOO_PROVIDER_API;
  if (!api) return res.sendStatus(501);
  try {
    res.json(await reconcilePass(api));
  } catch (err) {
    res.status(502).json({ error: err.message });
  }
});

async function reconcilePass(api) {
  const missing = await store.missing();
  const counts = { missing: missing.length, stored: 0, not_found: 0, not_final: 0, throttled: 0 };
  for (const [i, { account, key }] of missing.entries()) {
    const r = await fetch(`${api}/v1/async/task/${encodeURIComponent(key)}`, {
      headers: { authorization: `Bearer ${process.env.ZOO_PROVIDER_KEY}` },
      signal: AbortSignal.timeout(5000),
    });
    if (r.status === 429) {
      counts.throttled = missing.length - i;
      break;
    }
    if (r.status === 404) {
      counts.not_found += 1;
      continue;
    }
    if (!r.ok) throw new Error(`the provider answered ${r.status} for ${key}`);
    const text = await r.text();
    const e = provider.describe(JSON.parse(text), {});
    if (e.type !== "task.completed" && e.type !== "task.failed") {
      counts.not_final += 1;
      continue;
    }
    await store.receive(account, e, text);
    counts.stored += 1;
  }
  return counts;
}

// Body parser errors (413 for an oversized body, 400 for bad JSON) keep
// their status; nothing else reaches here.
app.use((err, req, res, next) => res.sendStatus(err.status ?? 500));

const listen = args.listen.startsWith("fd:") ? { fd: Number(args.listen.slice(3)) } : { port: Number(args.listen), host: "127.0.0.1" };
const server = app.listen(listen, () => {
  const a = server.address();
  console.log(`listening on ${typeof a === "string" ? a : `${a.address}:${a.port}`}`);
});
server.keepAliveTimeout = 5000;
