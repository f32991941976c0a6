// Standard Webhooks: the official `standardwebhooks` package verifies the
// raw body (webhook-id, webhook-timestamp, webhook-signature, ±5 min).
// webhook-id is the idempotency key the spec names.
import { Webhook } from "standardwebhooks";

export const signatureHeader = "webhook-signature";
const verifiers = new Map();

export function verify(raw, headers, secret, mutant) {
  if (!headers[signatureHeader] && mutant === "missing-signature-accepted") return JSON.parse(raw);
  if (!verifiers.has(secret)) verifiers.set(secret, new Webhook(secret));
  const h = {
    "webhook-id": headers["webhook-id"],
    "webhook-timestamp": headers["webhook-timestamp"],
    "webhook-signature": headers[signatureHeader],
  };
  if (mutant === "first-signature-only") h["webhook-signature"] = String(h["webhook-signature"]).split(" ")[0];
  return verifiers.get(secret).verify(raw, h);
}

export function describe(event, headers) {
  return {
    type: event.type,
    key: headers["webhook-id"],
    object: event.data?.id,
    order: event.timestamp,
    failed: false, // the newest update wins whatever its type
  };
}

export const handles = (type) => type === "task.completed" || type === "task.failed";
