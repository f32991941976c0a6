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

from flask import Flask, request

from store import Store

MUTANT = os.environ.get("ZOO_MUTANT", "")
SECRETS = {"acct_a": os.environ.get("ZOO_SECRET_ACCT_A"), "acct_b": os.environ.get("ZOO_SECRET_ACCT_B")}
provider = importlib.import_module("providers." + os.environ.get("ZOO_PROVIDER", "answerline"))
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
