// The outbox guide's sender: X-Webhook-Signature is the hex HMAC-SHA256 of
// the raw body, X-Idempotency-Key the identity; per order the newest
// timestamp wins.
import { hmac, safeEqual, fail } from "./hmac.js";

export const signatureHeader = "x-webhook-signature";

export function verify(raw, headers, secret, mutant) {
  const header = headers[signatureHeader];
  if (!header && mutant === "missing-signature-accepted") return JSON.parse(raw);
  if (!header) fail("no signature");
  if (!safeEqual(hmac(secret, raw), Buffer.from(header, "hex"))) fail("no match");
  return JSON.parse(raw);
}

export function describe(event, headers) {
  if (event.test) return { ignore: true };
  return {
    type: headers["x-webhook-event"] ?? event.event,
    key: headers["x-idempotency-key"],
    object: event.data?.order_id === undefined ? undefined : String(event.data.order_id),
    order: event.timestamp,
    failed: false, // the newest event per order, whatever its status
  };
}

export const handles = (type) => type === "order.updated";
