"""A webhook sender the way a Python team writes one on Postgres and Redis:
Flask for its API, psycopg for a `webhook_messages` table, and a Redis
list as its queue, worked by a pool of threads (the shape of RQ and its
kind: a worker moves a job to its `processing` list while it runs it, and
a restarted process puts back what a dead one was running; a retry waits
in a sorted set until it is due).

An emit saves its messages in one transaction, then queues their ids on
Redis, which is not part of that transaction: the save and the enqueue
are two commits on two systems. So at start-up it queues every saved
message that was never queued (a crash between the two commits leaves
such messages behind). SENDER_MUTANT=save-then-enqueue leaves that sweep
out, the bug of a team that trusts the two commits to happen together:
a crash between them loses the message.

It mints its own delivery ids (`evt_` and 32 hex digits), keeps one per
message across retries, signs each attempt afresh
(`Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`),
waits 5 s doubling, shortened by up to half, for 10 attempts, takes a 4xx
other than 408 and 429 as final and honours Retry-After: the reference
sender's profile. Waits are divided by HOOKSTORM_TIME_SCALE; the timeout
is HOOKSTORM_TIMEOUT_MS. Per resource, a message is first sent only after
every older one of it was tried.

    python3 sender.py --port P --database postgres://... --redis redis://...
"""

import argparse
import hashlib
import hmac
import json
import logging
import os
import random
import threading
import time
import urllib.error
import urllib.request
import uuid

import psycopg
import redis
from flask import Flask, jsonify, request
from psycopg_pool import ConnectionPool

SCALE = float(os.environ.get("HOOKSTORM_TIME_SCALE", "1"))
TIMEOUT_S = int(os.environ.get("HOOKSTORM_TIMEOUT_MS", "15000")) / 1000.0
MUTANT = os.environ.get("SENDER_MUTANT", "")
SECRETS = dict(
    part.split("=", 1)
    for part in os.environ.get("HOOKSTORM_SENDER_ACCOUNTS", "").split(";")
    if "=" in part
)
MAX_ATTEMPTS = 10
BASE_S = 5.0
WORKERS = 8
QUEUE, PROCESSING, DELAYED = "hooks:queue", "hooks:processing", "hooks:delayed"

SCHEMA = """
CREATE TABLE IF NOT EXISTS webhook_messages (
    id BIGSERIAL PRIMARY KEY,
    account TEXT NOT NULL, key TEXT NOT NULL, url TEXT NOT NULL,
    body TEXT NOT NULL, delivery_id TEXT NOT NULL, resource TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    queued BOOLEAN NOT NULL DEFAULT false,
    UNIQUE (account, key))
"""


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


opener = urllib.request.build_opener(NoRedirect)


def sign(secret, body, t):
    mac = hmac.new(secret.encode(), str(t).encode() + b"." + body, hashlib.sha256)
    return "t=%d,v1=%s" % (t, mac.hexdigest())


def post(url, body, delivery_id, account):
    """One POST; (status, retry_after seconds) or (None, None)."""
    req = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json",
        "Webhook-Id": delivery_id,
        "Webhook-Signature": sign(SECRETS.get(account, ""), body, int(time.time())),
    })
    try:
        with opener.open(req, timeout=TIMEOUT_S) as resp:
            resp.read()
            return resp.status, None
    except urllib.error.HTTPError as e:
        ra = e.headers.get("Retry-After")
        return e.code, int(ra) if ra and ra.isdigit() else None
    except Exception:  # a timeout, a reset, a refused connection
        return None, None


class Sender:
    def __init__(self, database, redis_url):
        self.pool = ConnectionPool(database, min_size=2, max_size=WORKERS + 4, open=True)
        self.r = redis.Redis.from_url(redis_url)
        with self.pool.connection() as c:
            c.execute(SCHEMA)
        self.guard = threading.Lock()
        self.working = set()

    def recover(self):
        # What a dead process was running goes back to the queue.
        while self.r.lmove(PROCESSING, QUEUE, "RIGHT", "LEFT") is not None:
            pass
        if MUTANT == "save-then-enqueue":
            return
        # Saved but never queued: a crash came between the two commits.
        with self.pool.connection() as c:
            ids = [row[0] for row in c.execute(
                "SELECT id FROM webhook_messages WHERE NOT queued AND status = 'pending' ORDER BY id")]
        self.enqueue(ids)

    def enqueue(self, ids):
        if not ids:
            return
        self.r.rpush(QUEUE, *ids)
        with self.pool.connection() as c:
            c.execute("UPDATE webhook_messages SET queued = true WHERE id = ANY(%s)", (ids,))

    def emit(self, events):
        with self.pool.connection() as c:
            with c.transaction():
                saved = []
                for e in events:
                    row = c.execute(
                        "INSERT INTO webhook_messages (account, key, url, body, delivery_id, resource)"
                        " VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (account, key) DO NOTHING RETURNING id",
                        (e["account"], e["key"], e["url"], e["body"], "evt_" + uuid.uuid4().hex,
                         e.get("resource"))).fetchone()
                    if row:
                        saved.append(row[0])
        # Committed; now queued (a message already saved was queued by
        # the call that saved it, or by the sweep at start-up).
        self.enqueue(saved)

    def wait_before(self, attempt, retry_after):
        base = BASE_S * 2 ** (attempt - 2)
        wait = random.uniform(base / 2, base)
        if retry_after:
            wait = max(wait, retry_after)
        return wait / SCALE

    def deliver(self, mid):
        """One attempt; when the next is due, if there is one."""
        with self.pool.connection() as c:
            row = c.execute(
                "SELECT account, url, body, delivery_id, attempts, status FROM webhook_messages WHERE id = %s",
                (mid,)).fetchone()
        if row is None or row[5] != "pending":
            return None
        account, url, body, delivery_id, attempts, _ = row
        n = attempts + 1
        status, retry_after = post(url, body.encode("utf-8"), delivery_id, account)
        with self.pool.connection() as c:
            if status is not None and 200 <= status < 300:
                c.execute("UPDATE webhook_messages SET status='delivered', attempts=%s WHERE id=%s", (n, mid))
            elif (status is not None and 400 <= status < 500 and status not in (408, 429)) or n >= MAX_ATTEMPTS:
                c.execute("UPDATE webhook_messages SET status='dead', attempts=%s WHERE id=%s", (n, mid))
            else:
                c.execute("UPDATE webhook_messages SET attempts=%s WHERE id=%s", (n, mid))
                return time.time() + self.wait_before(n + 1, retry_after)
        return None

    def work(self):
        while True:
            raw = self.r.blmove(QUEUE, PROCESSING, 1, "LEFT", "RIGHT")
            if raw is None:
                continue
            mid = int(raw)
            with self.pool.connection() as c:
                # Per resource, a first send waits until every older
                # message of it was tried.
                waiting = c.execute(
                    "SELECT EXISTS (SELECT 1 FROM webhook_messages o JOIN webhook_messages m"
                    " ON o.resource = m.resource AND o.id < m.id"
                    " WHERE m.id = %s AND m.attempts = 0 AND o.attempts = 0 AND o.status = 'pending')",
                    (mid,)).fetchone()[0]
            with self.guard:
                taken = mid in self.working
                if not waiting and not taken:
                    self.working.add(mid)
            if waiting or taken:
                if waiting:
                    with self.r.pipeline() as p:
                        p.lrem(PROCESSING, 1, mid).rpush(QUEUE, mid).execute()
                    time.sleep(0.002)
                else:
                    self.r.lrem(PROCESSING, 1, mid)
                continue
            due = None
            try:
                due = self.deliver(mid)
            except Exception:
                logging.exception("delivery of %s failed", mid)
                due = time.time() + 0.05
            finally:
                # Free it first, then hand it over: out of `processing` and
                # into the delayed set in one MULTI, so a crash keeps it in
                # one of the two and no worker finds it still taken.
                with self.guard:
                    self.working.discard(mid)
                with self.r.pipeline() as p:
                    p.lrem(PROCESSING, 1, mid)
                    if due is not None:
                        p.zadd(DELAYED, {mid: due})
                    p.execute()

    def move_due(self):
        while True:
            now = time.time()
            for mid in self.r.zrangebyscore(DELAYED, "-inf", now):
                with self.r.pipeline() as p:  # MULTI: moved, or not at all
                    p.zrem(DELAYED, mid).rpush(QUEUE, mid).execute()
            time.sleep(0.003)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--database", required=True)
    p.add_argument("--redis", required=True)
    args = p.parse_args()
    sender = Sender(args.database, args.redis)
    sender.recover()
    for _ in range(WORKERS):
        threading.Thread(target=sender.work, daemon=True).start()
    threading.Thread(target=sender.move_due, daemon=True).start()

    app = Flask(__name__)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)

    @app.get("/healthz")
    def healthz():
        return jsonify(ok=True)

    @app.get("/outbox")
    def outbox():
        with sender.pool.connection() as c:
            rows = c.execute("SELECT key, account, status, attempts FROM webhook_messages ORDER BY id").fetchall()
        return jsonify([dict(zip(("key", "account", "status", "attempts"), r)) for r in rows])

    @app.post("/reset")
    def reset():
        sender.r.delete(QUEUE, PROCESSING, DELAYED)
        with sender.pool.connection() as c:
            c.execute("DELETE FROM webhook_messages")
        return jsonify({})

    @app.post("/emit")
    def emit():
        events = (request.get_json(force=True) or {}).get("events", [])
        try:
            sender.emit(events)
        except psycopg.Error as e:
            return jsonify(error=str(e)), 500
        return jsonify(accepted=len(events))

    app.run(host="127.0.0.1", port=args.port, threaded=True)


if __name__ == "__main__":
    main()
