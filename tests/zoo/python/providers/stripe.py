"""Stripe: stripe.Webhook.construct_event over the raw body, as Stripe's
docs show; the event id is the identity, the newest `created` per invoice
wins."""
import json
import os

import stripe

SIGNATURE_HEADER = "Stripe-Signature"
MUTANT = os.environ.get("ZOO_MUTANT", "")


def verify(raw, headers, secret):
    header = headers.get(SIGNATURE_HEADER)
    if header is None and MUTANT == "missing-signature-accepted":
        return json.loads(raw)
    try:
        return stripe.Webhook.construct_event(raw, header, secret)
    except (stripe.error.SignatureVerificationError, ValueError) as e:
        raise ValueError(str(e))


def describe(event, headers):
    obj = event["data"]["object"]
    return {
        "type": event["type"],
        "key": event["id"],
        "object": obj.get("id"),
        "order": event.get("created"),
        "failed": False,  # Stripe: the newest event per object, whatever its type
    }


def handles(event_type):
    return event_type in ("invoice.paid", "invoice.payment_failed")
