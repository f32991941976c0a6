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

// Body parser errors (413 for an oversized body, 400 for bad JSON) keep
// their status; nothing else reaches here.
app.use((err, req, res, next) => res.sendStatus(err.status ?? 500));

const listen = args.listen.startsWith("fd:") ? { fd: Number(args.listen.slice(3)) } : { port: Number(args.listen), host: "127.0.0.1" };
const server = app.listen(listen, () => {
  const a = server.address();
  console.log(`listening on ${typeof a === "string" ? a : `${a.address}:${a.port}`}`);
});
server.keepAliveTimeout = 5000;
