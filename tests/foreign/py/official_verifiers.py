"""The providers' official verifiers, one JSON request per line in, one
verdict per line out. Each request names the profile, the verification
key (a secret, or a public key for asymmetric profiles), the URL the
request was sent to, its headers and its body (base64)."""
import base64
import contextlib
import json
import sys
from urllib.parse import parse_qsl


def header(r, name):
    for k, v in r["headers"]:
        if k.lower() == name.lower():
            return v
    return None


def twilio(r, body):
    from twilio.request_validator import RequestValidator
    params = dict(parse_qsl(body.decode(), keep_blank_values=True))
    return RequestValidator(r["key"]).validate(r["url"], params, header(r, "X-Twilio-Signature") or "")


def square(r, body):
    from square.utils.webhooks_helper import verify_signature
    return verify_signature(
        request_body=body.decode(),
        signature_header=header(r, "x-square-hmacsha256-signature") or "",
        signature_key=r["key"],
        notification_url=r["url"],
    )


class PaddleRequest:
    def __init__(self, r, body):
        self.body = body
        self.headers = {k: v for k, v in r["headers"]}


def paddle(r, body):
    from paddle_billing.Notifications import Secret, Verifier
    return Verifier().verify(PaddleRequest(r, body), Secret(r["key"]))


def hubspot(r, body):
    from hubspot.utils.signature import Signature
    return Signature.is_valid(
        signature=header(r, "X-HubSpot-Signature-v3") or "",
        client_secret=r["key"],
        request_body=body.decode(),
        http_uri=r["url"],
        http_method="POST",
        signature_version="v3",
        timestamp=header(r, "X-HubSpot-Request-Timestamp"),
    )


def discord(r, body):
    from discord_interactions import verify_key
    sig, ts = header(r, "X-Signature-Ed25519"), header(r, "X-Signature-Timestamp")
    if sig is None or ts is None:
        return False
    return verify_key(body, sig, ts, r["key"])


class Message:
    """A request as http-message-signatures resolves its components."""

    def __init__(self, r):
        self.method = "POST"
        self.url = r["url"]
        self.headers = {k: v for k, v in r["headers"]}


def http_signatures(r, body):
    import datetime
    from http_message_signatures import HTTPMessageVerifier, MappingKeyResolver, algorithms
    alg = algorithms.ED25519 if r["profile"].endswith("ed25519") else algorithms.ECDSA_P256_SHA256
    pem = "-----BEGIN PUBLIC KEY-----\n" + r["key"] + "\n-----END PUBLIC KEY-----\n"
    verifier = HTTPMessageVerifier(
        signature_algorithm=alg,
        key_resolver=MappingKeyResolver(public_keys={"hookstorm": pem.encode()}, private_keys={}),
    )
    verifier.allow_label_only_selection = True
    results = verifier.verify(
        Message(r),
        max_age=datetime.timedelta(minutes=5),
        expect_label="sig1",
        require_components=("@method", "@target-uri", "content-digest"),
        body=body,
    )
    return len(results) > 0


def mailgun(r, body):
    from mailgun.security import SecurityGuard
    sig = json.loads(body).get("signature") or {}
    return SecurityGuard.verify_webhook(
        r["key"], sig.get("token"), sig.get("timestamp"), sig.get("signature")
    )


VERIFY = {"mailgun": mailgun, "http-signatures-ed25519": http_signatures, "http-signatures-es256": http_signatures,
          "twilio": twilio, "square": square, "paddle": paddle, "hubspot": hubspot, "discord": discord}

for line in sys.stdin:
    r = json.loads(line)
    try:
        # Some verifiers print what they refuse (discord-interactions):
        # stdout is the verdicts' alone.
        with contextlib.redirect_stdout(sys.stderr):
            ok = bool(VERIFY[r["profile"]](r, base64.b64decode(r["body"])))
        out = {"ok": ok, "error": None if ok else "rejected"}
    except Exception as e:  # a verifier that raises has refused
        out = {"ok": False, "error": type(e).__name__ + ": " + str(e)[:200]}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
