// Slack: v0=HMAC(signing secret, "v0:<ts>:<raw body>") compared with
// crypto.timingSafeEqual, requests older than 5 minutes refused, as
// Slack's "verifying requests" page shows; url_verification answered with
// its challenge; event_id is the identity (retries keep it).
import { hmac, safeEqual, fail } from "./hmac.js";

export const signatureHeader = "x-slack-signature";
const MAX_AGE_SECS = 300;

export function verify(raw, headers, secret, mutant) {
  const header = headers[signatureHeader];
  if (!header && mutant === "missing-signature-accepted") return JSON.parse(raw);
  const ts = Number(headers["x-slack-request-timestamp"]);
  if (!header || !Number.isInteger(ts)) fail("no signature");
  if (Date.now() / 1000 - ts > MAX_AGE_SECS) fail("stale");
  const expected = Buffer.from("v0=" + hmac(secret, `v0:${ts}:`, raw).toString("hex"));
  if (!safeEqual(expected, Buffer.from(header))) fail("no match");
  return JSON.parse(raw);
}

export function describe(body) {
  if (body.type === "url_verification") return { challenge: body.challenge };
  return {
    type: body.type,
    key: body.event_id,
    object: body.event?.channel,
    order: body.event_time,
    failed: false,
  };
}

export const handles = (type) => type === "event_callback";
