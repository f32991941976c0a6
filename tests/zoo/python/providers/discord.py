"""Discord interactions: the official discord-interactions verify_key
(Ed25519 over the timestamp and the raw body) with the application's
public key, as Discord's docs show; a PING is answered with a PONG; the
interaction id is the identity."""
import json
import os

from discord_interactions import InteractionResponseType, InteractionType, verify_key

KEY_ENV = "ZOO_PUBLIC_KEY_"  # the application's public key, not a secret
MUTANT = os.environ.get("ZOO_MUTANT", "")


def verify(raw, headers, public_key):
    signature = headers.get("X-Signature-Ed25519")
    timestamp = headers.get("X-Signature-Timestamp")
    if signature is None and MUTANT == "missing-signature-accepted":
        return json.loads(raw)
    if MUTANT == "skips-verification":
        return json.loads(raw)
    if signature is None or timestamp is None or not verify_key(raw, signature, timestamp, public_key):
        raise ValueError("bad request signature")
    return json.loads(raw)


def describe(interaction, headers):
    if interaction.get("type") == InteractionType.PING:
        if MUTANT == "skips-handshake":
            return {"ignore": True}
        return {"reply": {"type": InteractionResponseType.PONG}}
    data = interaction.get("data") or {}
    options = {o.get("name"): o.get("value") for o in data.get("options") or []}
    return {
        "type": "interaction." + str(data.get("name")),
        "key": interaction.get("id"),
        "object": data.get("id"),
        "order": options.get("updated_at"),
        "failed": False,
    }


def handles(event_type):
    return True
