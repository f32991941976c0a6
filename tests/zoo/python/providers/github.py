"""GitHub: X-Hub-Signature-256 is "sha256=" + the hex HMAC of the raw body,
compared with hmac.compare_digest as GitHub's docs show; X-GitHub-Delivery
is the identity; per issue the newest updated_at wins."""
import hashlib
import hmac
import json
import os

SIGNATURE_HEADER = "X-Hub-Signature-256"
MUTANT = os.environ.get("ZOO_MUTANT", "")


def verify(raw, headers, secret):
    header = headers.get(SIGNATURE_HEADER)
    if header is None and MUTANT == "missing-signature-accepted":
        return json.loads(raw)
    if header is None:
        raise ValueError("no signature")
    expected = "sha256=" + hmac.new(secret.encode(), raw, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(expected, header):
        raise ValueError("no match")
    return json.loads(raw)


def describe(event, headers):
    issue = event.get("issue") or {}
    return {
        "type": headers.get("X-GitHub-Event"),
        "key": headers.get("X-GitHub-Delivery"),
        "object": None if issue.get("id") is None else str(issue["id"]),
        "order": issue.get("updated_at"),
        "failed": False,  # a closed issue is the issue's newest state
    }


def handles(event_type):
    return event_type == "issues"
