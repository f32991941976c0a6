// The comparison every provider's docs show for a hand-rolled check:
// HMAC-SHA256 over the exact bytes, compared with crypto.timingSafeEqual.
import crypto from "node:crypto";

export function hmac(secret, ...parts) {
  const mac = crypto.createHmac("sha256", secret);
  for (const p of parts) mac.update(p);
  return mac.digest();
}

export function safeEqual(expected, given) {
  return given.length === expected.length && crypto.timingSafeEqual(expected, given);
}

export class SignatureError extends Error {}

export function fail(why) {
  throw new SignatureError(why);
}

// The newest-wins rank of an order field: RFC 3339 text or unix seconds.
export function rank(value) {
  if (typeof value === "number") return value * 1000;
  const ms = typeof value === "string" && /^\d{4}-\d\d-\d\dT/.test(value) ? Date.parse(value) : NaN;
  return Number.isFinite(ms) ? ms : null;
}
