// GitHub: Octokit's `verify` on the raw body and X-Hub-Signature-256;
// X-GitHub-Delivery is the identity (a redelivery keeps it); per issue the
// payload whose updated_at is newest wins.
import { Webhooks } from "@octokit/webhooks";

export const signatureHeader = "x-hub-signature-256";
const verifiers = new Map();

export async function verify(raw, headers, secret, mutant) {
  if (!headers[signatureHeader] && mutant === "missing-signature-accepted") return JSON.parse(raw);
  if (!verifiers.has(secret)) verifiers.set(secret, new Webhooks({ secret }));
  if (!(await verifiers.get(secret).verify(raw.toString("utf8"), headers[signatureHeader] ?? ""))) {
    throw new Error("signature does not match");
  }
  return JSON.parse(raw);
}

export function describe(event, headers) {
  return {
    type: headers["x-github-event"],
    key: headers["x-github-delivery"],
    object: event.issue?.id === undefined ? undefined : String(event.issue.id),
    order: event.issue?.updated_at,
    failed: false, // a closed issue is the issue's newest state
  };
}

export const handles = (type) => type === "issues";
