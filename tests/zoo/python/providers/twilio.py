"""Twilio: the official RequestValidator over the URL Twilio called and the
form parameters, as Twilio's docs show; the I-Twilio-Idempotency-Token
header is the identity (a retry keeps it); per message the newest
Timestamp wins."""
import os
from urllib.parse import parse_qsl

from flask import request
from twilio.request_validator import RequestValidator

SIGNATURE_HEADER = "X-Twilio-Signature"
MUTANT = os.environ.get("ZOO_MUTANT", "")


def verify(raw, headers, secret):
    params = dict(parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True))
    header = headers.get(SIGNATURE_HEADER)
    if header is None and MUTANT == "missing-signature-accepted":
        return params
    if MUTANT == "skips-verification":
        return params
    if header is None or not RequestValidator(secret).validate(request.url, params, header):
        raise ValueError("no match")
    return params


def describe(params, headers):
    return {
        "type": "message." + params.get("MessageStatus", "").lower(),
        "key": headers.get("I-Twilio-Idempotency-Token"),
        "object": params.get("MessageSid"),
        "order": params.get("Timestamp"),
        "failed": False,  # the newest status of a message wins, whatever it is
    }


def handles(event_type):
    return True
