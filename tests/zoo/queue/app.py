"""A Flask webhook endpoint in front of a Celery queue, the way a
Django/Celery team writes one: verify the signature on the raw body, store
the event in the inbox (unique per account and event id), enqueue the task
that processes it (tasks.py), answer 200. Served by gunicorn; the worker is
`celery -A tasks worker` on Redis. ZOO_MUTANT=early-ack is planted in
tasks.py; ZOO_PROVIDER picks the verify module of the zoo's Python
receivers (zoo/python/providers), ZOO_SECRET_ACCT_A / _B its secrets.

    gunicorn -w 2 --bind fd://3 app:app"""
import importlib
import os

from flask import Flask, request

from tasks import settle, store  # tasks puts the shared store and providers on the path

SECRETS = {"acct_a": os.environ.get("ZOO_SECRET_ACCT_A"), "acct_b": os.environ.get("ZOO_SECRET_ACCT_B")}
provider = importlib.import_module("providers." + os.environ.get("ZOO_PROVIDER", "answerline"))

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
    try:
        event = provider.verify(raw, request.headers, secret)
    except ValueError:
        return "", 400
    e = provider.describe(event, request.headers)
    if e.get("ignore"):
        return "", 204
    if not e.get("key"):
        return "", 400
    try:
        store.receive(account, e, raw.decode())
    except store.Error as err:
        app.logger.error("store: %s", err)
        return "", 503
    settle.delay(account, e["key"])
    return "", 200
