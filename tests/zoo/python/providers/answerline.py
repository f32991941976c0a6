"""Answerline: Webhook-Signature "t=<unix>,v1=<hex>[,v1=<hex>]" over
"<t>.<raw body>" with the plain secret, within 5 minutes either way."""
import hashlib
import hmac
import json
import os
import time

SIGNATURE_HEADER = "Webhook-Signature"
TOLERANCE_SECS = 300
MUTANT = os.environ.get("ZOO_MUTANT", "")


def verify(raw, headers, secret):
    header = headers.get(SIGNATURE_HEADER)
    if header is None and MUTANT == "missing-signature-accepted":
        return json.loads(raw)
    if header is None:
        raise ValueError("no signature")
    fields = [p.strip().split("=", 1) for p in header.split(",") if "=" in p]
    try:
        t = int(dict(fields).get("t", ""))
    except ValueError:
        raise ValueError("no timestamp")
    if abs(time.time() - t) > TOLERANCE_SECS:
        raise ValueError("stale")
    signatures = [v for k, v in fields if k == "v1"]
    if MUTANT == "first-signature-only":
        signatures = signatures[:1]
    expected = hmac.new(secret.encode(), f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected, s) for s in signatures):
        raise ValueError("no match")
    return json.loads(raw)


def describe(event, headers):
    """A dashboard test is acknowledged and not stored; an event of a
    sequenced resource carries `resource` and `sequence`."""
    if event.get("test"):
        return {"ignore": True}
    task = event["task"]
    job = task.get("idempotencyKey")
    head, _, tail = (job or "").rpartition("-r")
    return {
        "type": "task." + str(task["status"]).lower(),
        "key": task["id"],
        "object": head if head and tail.isdigit() else job,
        "order": task["createdAt"],
        "failed": task["status"] != "COMPLETED",
        "resource": event.get("resource"),
        "sequence": event.get("sequence"),
    }


def handles(event_type):
    return True
