"""A Flask webhook endpoint the way a Python team writes one, served by
gunicorn with several pre-forked workers: the provider's verify step on the
raw body, the event stored in the inbox in one transaction before the 2xx,
the work left to worker.py. ZOO_PROVIDER picks the verify module in
providers/; secrets in ZOO_SECRET_ACCT_A / _B; ZOO_DATABASE the store.

    gunicorn -w 3 --bind fd://3 app:app

ZOO_MUTANT plants one bug (the conformance tests check hookstorm catches
each); unset, the receiver is correct."""
import importlib
import json
import os
import threading
import time
import urllib.error
import urllib.request

from flask import Flask, jsonify, request

from store import Store

MUTANT = os.environ.get("ZOO_MUTANT", "")
provider = importlib.import_module("providers." + os.environ.get("ZOO_PROVIDER", "answerline"))
# What verifies each account's deliveries: its secret, or the public key
# of a provider that signs with a key pair (KEY_ENV).
KEY_ENV = getattr(provider, "KEY_ENV", "ZOO_SECRET_")
SECRETS = {"acct_a": os.environ.get(KEY_ENV + "ACCT_A"), "acct_b": os.environ.get(KEY_ENV + "ACCT_B")}
store = Store(os.environ["ZOO_DATABASE"])
seen = set()

slow_once = set()


def charge_customer(account, key):
    """The business step done inline: a downstream call that is slow the
    first time per event in this worker (a cold cache), past the provider's
    timeout. Only the inline-processing bug calls it."""
    store.effect(account, key)
    if key not in slow_once:
        slow_once.add(key)
        time.sleep(int(os.environ.get("ZOO_SLOW_MS", "16000")) / 1000)


app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = 1 << 20


@app.get("/healthz")
def healthz():
    return "", 200


@app.post("/webhooks/<account>")
def webhook(account):
    secret = SECRETS.get(account)
    if not secret:
        return "", 404
    raw = request.get_data()
    if MUTANT == "reserialized-body":
        raw = json.dumps(request.get_json(force=True)).encode()
    try:
        event = provider.verify(raw, request.headers, secret)
    except ValueError:
        return "", 400
    e = provider.describe(event, request.headers)
    if e.get("reply") is not None:  # a handshake (Discord's PING)
        return jsonify(e["reply"])
    if e.get("ignore"):
        return "", 204
    if not provider.handles(e["type"]):
        return "", 400 if MUTANT == "unknown-type-400" else 204
    if not e.get("key"):
        return "", 400
    if MUTANT == "memory-dedupe":
        if (account, e["key"]) in seen:
            return "", 200
        seen.add((account, e["key"]))
    if MUTANT == "commit-after-ack":
        threading.Thread(target=store.receive, args=(account, e, raw.decode())).start()
        return "", 200
    try:
        if MUTANT == "inline-processing":
            charge_customer(account, e["key"])
        store.receive(account, e, raw.decode(), processed=MUTANT == "inline-processing")
    except store.Error as err:
        app.logger.error("store: %s", err)
        return "", 200 if MUTANT == "ok-on-db-error" else 503
    return "", 200


@app.post("/hookstorm/setup")
def setup():
    """Records the tasks the team submitted (hookstorm's tasks-submitted)."""
    body = request.get_json(force=True, silent=True) or {}
    params = body.get("params") or {}
    if body.get("state") != "tasks-submitted" or not isinstance(params.get("account"), str):
        return "", 400
    try:
        store.submit(params["account"], params.get("task_ids") or [])
    except store.Error as err:
        return jsonify(error=str(err)), 503
    return "", 204


@app.post("/hookstorm/reconcile")
def reconcile():
    """One pass of the reconciliation job: asks the provider's API
    (ZOO_PROVIDER_API, key ZOO_PROVIDER_KEY) for each submitted task the
    inbox lacks and stores the final ones as if delivered. A 404 is
    skipped, a task not final yet is left for the next pass, and the pass
    stops at the first 429 and says how many it left ("throttled")."""
    api = os.environ.get("ZOO_PROVIDER_API")
    if not api:
        return "", 501
    missing = store.missing()
    counts = {"missing": len(missing), "stored": 0, "not_found": 0, "not_final": 0, "throttled": 0}
    for i, (account, key) in enumerate(missing):
        req = urllib.request.Request(
            f"{api}/v1/async/task/{key}",
            headers={"Authorization": "Bearer " + os.environ.get("ZOO_PROVIDER_KEY", "")},
        )
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                text = r.read()
        except urllib.error.HTTPError as e:
            if e.code == 429:
                counts["throttled"] = len(missing) - i
                break
            if e.code == 404:
                counts["not_found"] += 1
                continue
            return jsonify({**counts, "error": f"the provider answered {e.code} for {key}"}), 502
        except OSError as e:
            return jsonify({**counts, "error": str(e)}), 502
        e = provider.describe(json.loads(text), {})
        if e["type"] not in ("task.completed", "task.failed"):
            counts["not_final"] += 1
            continue
        store.receive(account, e, text.decode())
        counts["stored"] += 1
    return jsonify(counts)
