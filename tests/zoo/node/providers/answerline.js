// Answerline: `Webhook-Signature: t=<unix>,v1=<hex>[,v1=<hex>]` over
// "<t>.<raw body>", keyed with the plain secret, ±5 minutes. No library:
// the contract's own recipe, as its docs show it.
import { hmac, safeEqual, fail } from "./hmac.js";

export const signatureHeader = "webhook-signature";
const TOLERANCE_SECS = 300;

export function verify(raw, headers, secret, mutant) {
  const header = headers[signatureHeader];
  if (!header && mutant === "missing-signature-accepted") return JSON.parse(raw);
  if (!header) fail("no signature");
  const fields = header.split(",").map((p) => p.trim().split("="));
  const t = Number(fields.find(([k]) => k === "t")?.[1]);
  if (!Number.isInteger(t) || Math.abs(Date.now() / 1000 - t) > TOLERANCE_SECS) fail("stale");
  let signatures = fields.filter(([k]) => k === "v1").map(([, v]) => v);
  if (mutant === "first-signature-only") signatures = signatures.slice(0, 1);
  const expected = hmac(secret, `${t}.`, raw);
  if (!signatures.some((s) => safeEqual(expected, Buffer.from(s, "hex")))) fail("no match");
  return JSON.parse(raw);
}

// A dashboard test ("test": true) is acknowledged and not stored. An
// event of a sequenced resource carries `resource` and `sequence`.
export function describe(event) {
  if (event.test) return { ignore: true };
  const task = event.task;
  return {
    type: `task.${String(task.status).toLowerCase()}`,
    key: task.id,
    object: task.idempotencyKey == null ? null : String(task.idempotencyKey).replace(/-r\d+$/, ""),
    order: task.createdAt,
    failed: task.status !== "COMPLETED",
    resource: event.resource,
    sequence: event.sequence,
  };
}

export const handles = () => true;
