"""A Flask webhook receiver for answerline deliveries.

POST /webhooks/<account>: verify the signature on the raw body, store the
delivery in webhook_inbox (once per account and task id), answer 200. The
work happens later, in worker.py. GET /admin/state and POST /admin/reset
serve hookstorm (behind HOOKSTORM_ADMIN_TOKEN); GET /healthz says it is up.

    gunicorn --workers 2 --bind 127.0.0.1:8000 app:app
"""
import hashlib
import hmac
import json
import os
import sqlite3
import time

from flask import Flask, abort, jsonify, request

import db

# Each account's signing secrets, comma separated, current first: during a
# rotation both verify.
SECRETS = {
    "acct_a": os.environ.get("HOOKSTORM_SECRETS_ACCT_A", ""),
    "acct_b": os.environ.get("HOOKSTORM_SECRETS_ACCT_B", ""),
}
ADMIN_TOKEN = os.environ.get("HOOKSTORM_ADMIN_TOKEN", "")
TOLERANCE_SECS = 300

app = Flask(__name__)
app.config["MAX_CONTENT_LENGTH"] = 1 << 20  # bigger bodies get 413
db.migrate()


def verified(raw, header, secrets):
    """Webhook-Signature: t=<unix>,v1=<hex>[,v1=<hex>], HMAC-SHA256 of
    "<t>.<raw body>"; any v1 matching any secret we hold will do."""
    parts = [p.strip().split("=", 1) for p in (header or "").split(",") if "=" in p]
    try:
        t = int(dict(parts).get("t", ""))
    except ValueError:
        return False
    if abs(time.time() - t) > TOLERANCE_SECS:
        return False
    for secret in filter(None, secrets.split(",")):
        expected = hmac.new(secret.encode(), f"{t}.".encode() + raw, hashlib.sha256).hexdigest()
        if any(k == "v1" and hmac.compare_digest(expected, v) for k, v in parts):
            return True
    return False


@app.post("/webhooks/<account>")
def webhook(account):
    if account not in SECRETS:
        abort(404)
    raw = request.get_data()  # the bytes as sent: never a re-serialisation
    if not verified(raw, request.headers.get("Webhook-Signature"), SECRETS[account]):
        abort(400)
    event = json.loads(raw)
    if event.get("test"):
        return "", 204  # a dashboard test delivery: answer, store nothing
    task_id = (event.get("task") or {}).get("id")
    if not task_id:
        abort(400)
    try:
        with db.connect() as conn:
            # Stored before we answer: a crash after this line loses nothing,
            # and a duplicate (same account and task id) changes nothing.
            conn.execute(
                "insert into webhook_inbox (account, task_id, body) values (?, ?, ?)"
                " on conflict do nothing",
                (account, task_id, raw.decode()),
            )
    except sqlite3.OperationalError:
        abort(503)  # the database is unavailable: the sender retries later
    return "", 200


@app.get("/healthz")
def healthz():
    return "ok"


def admin():
    if not ADMIN_TOKEN or not hmac.compare_digest(
        request.headers.get("Authorization", ""), f"Bearer {ADMIN_TOKEN}"
    ):
        abort(401)


@app.get("/admin/state")
def state():
    admin()
    with db.connect() as conn:
        conn.row_factory = sqlite3.Row
        conn.execute("begin")  # the four reads see one snapshot
        rows = lambda sql: [dict(r) for r in conn.execute(sql)]  # noqa: E731
        return jsonify(
            inbox=[dict(r, processed=r["processed"] is not None) for r in rows(
                "select task_id as key, account, processed_at as processed, error from webhook_inbox")],
            results=rows("select task_id, job_key, status, created_at, account from answers"),
            # Per job, the COMPLETED task created last (the larger id on a tie).
            winners=rows("""select a.job_key, a.task_id, a.account from answers a
                where a.status = 'COMPLETED' and a.job_key is not null and not exists (
                  select 1 from answers b where b.account = a.account and b.job_key = a.job_key
                    and b.status = 'COMPLETED' and (b.created_at > a.created_at
                    or (b.created_at = a.created_at and b.task_id > a.task_id)))"""),
            effects=rows("select task_id as key, count, account from effects"),
        )


@app.post("/admin/reset")
def reset():
    admin()
    with db.connect() as conn:
        conn.executescript("delete from webhook_inbox; delete from answers; delete from effects;")
    return "", 204
