// Stripe: stripe.webhooks.constructEvent over the raw body (express.raw),
// as Stripe's docs show. The event id is the identity; per invoice the
// event with the newest `created` wins.
import Stripe from "stripe";

export const signatureHeader = "stripe-signature";
const stripe = new Stripe(process.env.STRIPE_API_KEY || "sk_test_zoo");

export function verify(raw, headers, secret, mutant) {
  if (!headers[signatureHeader] && mutant === "missing-signature-accepted") return JSON.parse(raw);
  return stripe.webhooks.constructEvent(raw, headers[signatureHeader], secret);
}

export function describe(event) {
  return {
    type: event.type,
    key: event.id,
    object: event.data?.object?.id,
    order: event.created,
    failed: false, // Stripe: the newest event per object, whatever its type
  };
}

export const handles = (type) => type === "invoice.paid" || type === "invoice.payment_failed";
