// The providers' official Node verifiers, one JSON request per line in,
// one verdict per line out (see tests/foreign/py/official_verifiers.py).
import { createInterface } from "node:readline";
import { EventWebhook } from "@sendgrid/eventwebhook";
import { LinearWebhookClient } from "@linear/sdk/webhooks";

const header = (r, name) => {
  const h = r.headers.find(([k]) => k.toLowerCase() === name.toLowerCase());
  return h ? h[1] : undefined;
};

const verify = {
  sendgrid(r, body) {
    const ew = new EventWebhook();
    const pem = `-----BEGIN PUBLIC KEY-----\n${r.key}\n-----END PUBLIC KEY-----`;
    const sig = header(r, "X-Twilio-Email-Event-Webhook-Signature");
    const ts = header(r, "X-Twilio-Email-Event-Webhook-Timestamp");
    if (!sig || !ts) return false;
    return ew.verifySignature(ew.convertPublicKeyToECDSA(pem), body, sig, ts);
  },
  linear(r, body) {
    const sig = header(r, "Linear-Signature");
    if (!sig) return false;
    return new LinearWebhookClient(r.key).verify(body, sig);
  },
};

const rl = createInterface({ input: process.stdin });
for await (const line of rl) {
  const r = JSON.parse(line);
  let out;
  try {
    const ok = Boolean(verify[r.profile](r, Buffer.from(r.body, "base64")));
    out = { ok, error: ok ? null : "rejected" };
  } catch (e) {
    out = { ok: false, error: String(e).slice(0, 200) };
  }
  process.stdout.write(JSON.stringify(out) + "\n");
}
