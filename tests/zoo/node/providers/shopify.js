// Shopify: base64 HMAC-SHA256 of the raw body in X-Shopify-Hmac-Sha256,
// compared with crypto.timingSafeEqual as Shopify's docs show; dedupe on
// X-Shopify-Event-Id; per order the newest updated_at wins.
import { hmac, safeEqual, fail } from "./hmac.js";

export const signatureHeader = "x-shopify-hmac-sha256";

export function verify(raw, headers, secret, mutant) {
  const header = headers[signatureHeader];
  if (!header && mutant === "missing-signature-accepted") return JSON.parse(raw);
  if (!header) fail("no signature");
  if (!safeEqual(hmac(secret, raw), Buffer.from(header, "base64"))) fail("no match");
  return JSON.parse(raw);
}

export function describe(order, headers) {
  return {
    type: headers["x-shopify-topic"] ?? "orders/updated",
    key: headers["x-shopify-event-id"],
    object: order.id === undefined ? undefined : String(order.id),
    order: order.updated_at,
    failed: false, // a voided order is the order's newest state
  };
}

export const handles = (type) => type === "orders/updated";
