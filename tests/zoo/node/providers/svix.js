// Svix: the official `svix` package verifies the raw body (svix-id,
// svix-timestamp, svix-signature). svix-id is the idempotency key.
import { Webhook } from "svix";

export const signatureHeader = "svix-signature";
const verifiers = new Map();

export function verify(raw, headers, secret, mutant) {
  if (!headers[signatureHeader] && mutant === "missing-signature-accepted") return JSON.parse(raw);
  if (!verifiers.has(secret)) verifiers.set(secret, new Webhook(secret));
  const h = {
    "svix-id": headers["svix-id"],
    "svix-timestamp": headers["svix-timestamp"],
    "svix-signature": headers[signatureHeader],
  };
  if (mutant === "first-signature-only") h["svix-signature"] = String(h["svix-signature"]).split(" ")[0];
  return verifiers.get(secret).verify(raw, h);
}

export function describe(event, headers) {
  return {
    type: event.type,
    key: headers["svix-id"],
    object: event.data?.id,
    order: event.timestamp,
    failed: false, // the newest update wins whatever its type
  };
}

export const handles = (type) => type === "task.completed" || type === "task.failed";
