"""A webhook sender written the way the outbox guide shows it, in Python
with nothing but the standard library: an outbox table on SQLite written in
the same transaction as the business write (here, the emit call), and a
delivery worker that signs each attempt, POSTs it, and marks the row
delivered, schedules a retry with backoff and jitter, or dead-letters it.

It knows nothing of hookstorm beyond the hooks a team would add for a
test: POST /emit (commit events), GET /outbox (list the outbox),
POST /reset, GET /healthz. Its contract is the reference sender's profile
(scenarios/profiles/reference-sender.toml): the answerline schedule
(5 s doubling, shortened by up to half, 10 attempts), a 15 s timeout,
`Webhook-Signature: t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, a 4xx
other than 408 and 429 final, Retry-After honoured. Waits are divided by
HOOKSTORM_TIME_SCALE and the timeout is HOOKSTORM_TIMEOUT_MS, as the
harness compresses the contract.

SENDER_MUTANT plants one bug: `follows-redirects` follows a 3xx to its
Location; `no-jitter` waits the whole base wait.
"""

import argparse
import hashlib
import hmac
import http.client
import json
import os
import random
import sqlite3
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

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

SCHEMA = """
CREATE TABLE IF NOT EXISTS webhook_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    account TEXT NOT NULL, key TEXT NOT NULL, url TEXT NOT NULL,
    body BLOB NOT NULL, webhook_id TEXT NOT NULL, resource TEXT,
    status TEXT NOT NULL DEFAULT 'pending',
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL, last_error TEXT,
    UNIQUE (account, key)
)
"""


class Outbox:
    def __init__(self, path):
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(SCHEMA)
        self.lock = threading.Lock()

    def run(self, sql, args=()):
        with self.lock:
            return self.db.execute(sql, args).fetchall()

    def insert(self, events):
        with self.lock:
            self.db.execute("BEGIN")
            for e in events:
                self.db.execute(
                    "INSERT OR IGNORE INTO webhook_outbox"
                    " (account, key, url, body, webhook_id, resource, next_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (e["account"], e["key"], e["url"], e["body"].encode("utf-8"),
                     "whd_" + uuid.uuid4().hex[:16], e.get("resource"), time.time()),
                )
            self.db.execute("COMMIT")


def sign(secret, body, t):
    mac = hmac.new(secret.encode(), str(t).encode() + b"." + body, hashlib.sha256)
    return "t=%d,v1=%s" % (t, mac.hexdigest())


def post(url, body, headers):
    """One POST; returns (status, retry_after) or raises."""
    for _ in range(5):
        u = urllib.parse.urlsplit(url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=TIMEOUT_S)
        try:
            conn.request("POST", u.path or "/", body=body, headers=headers)
            resp = conn.getresponse()
            resp.read()
            location = resp.getheader("Location")
            if MUTANT == "follows-redirects" and 300 <= resp.status < 400 and location:
                url = location
                continue
            retry_after = resp.getheader("Retry-After")
            return resp.status, int(retry_after) if retry_after and retry_after.isdigit() else None
        finally:
            conn.close()
    raise RuntimeError("too many redirects")


class Worker:
    def __init__(self, outbox):
        self.outbox = outbox
        self.wake = threading.Event()
        self.in_flight = set()
        self.finished = []
        self.guard = threading.Lock()

    def wait_before(self, attempt, retry_after):
        base = BASE_S * 2 ** (attempt - 2)
        wait = base if MUTANT == "no-jitter" else random.uniform(base / 2, base)
        if retry_after:
            wait = max(wait, retry_after)
        return wait / SCALE

    def deliver(self, row):
        seq, account, url, body, webhook_id, attempts = row
        n = attempts + 1
        headers = {
            "Content-Type": "application/json",
            "Webhook-Id": webhook_id,
            "Webhook-Signature": sign(SECRETS.get(account, ""), body, int(time.time())),
        }
        try:
            status, retry_after = post(url, body, headers)
            error = "HTTP %d" % status
        except Exception as e:  # a timeout, a reset, a refused connection
            status, retry_after, error = None, None, repr(e)
        if status is not None and 200 <= status < 300:
            self.outbox.run("UPDATE webhook_outbox SET status='delivered', attempts=? WHERE seq=?", (n, seq))
        elif status is not None and 400 <= status < 500 and status not in (408, 429):
            self.outbox.run("UPDATE webhook_outbox SET status='dead', attempts=?, last_error=? WHERE seq=?",
                            (n, error, seq))
        elif n >= MAX_ATTEMPTS:
            self.outbox.run("UPDATE webhook_outbox SET status='dead', attempts=?, last_error=? WHERE seq=?",
                            (n, error, seq))
        else:
            due = time.time() + self.wait_before(n + 1, retry_after)
            self.outbox.run("UPDATE webhook_outbox SET attempts=?, next_at=?, last_error=? WHERE seq=?",
                            (n, due, error, seq))

    def run_one(self, row):
        try:
            self.deliver(row)
        finally:
            with self.guard:
                self.finished.append(row[0])
            self.wake.set()

    def loop(self):
        while True:
            with self.guard:
                for seq in self.finished:
                    self.in_flight.discard(seq)
                self.finished.clear()
            rows = self.outbox.run(
                "SELECT seq, account, url, body, webhook_id, attempts, resource FROM webhook_outbox"
                " WHERE status='pending' AND next_at <= ? ORDER BY seq", (time.time(),))
            blocked = set()
            for seq, account, url, body, webhook_id, attempts, resource in rows:
                first = attempts == 0
                # Per resource, a first send waits for the older ones.
                if first and resource is not None:
                    if resource in blocked:
                        continue
                    blocked.add(resource)
                with self.guard:
                    if seq in self.in_flight:
                        continue
                    self.in_flight.add(seq)
                row = (seq, account, url, body, webhook_id, attempts)
                threading.Thread(target=self.run_one, args=(row,), daemon=True).start()
            nxt = self.outbox.run("SELECT MIN(next_at) FROM webhook_outbox WHERE status='pending'"
                                  " AND next_at > ?", (time.time(),))[0][0]
            pause = 0.05 if nxt is None else max(0.0005, min(0.05, nxt - time.time()))
            self.wake.wait(pause)
            self.wake.clear()


def handler(outbox, worker):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def answer(self, status, value):
            data = json.dumps(value).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/healthz":
                return self.answer(200, {"ok": True})
            if self.path == "/outbox":
                rows = outbox.run("SELECT key, account, status, attempts FROM webhook_outbox ORDER BY seq")
                return self.answer(200, [dict(zip(("key", "account", "status", "attempts"), r)) for r in rows])
            self.answer(404, {})

        def do_POST(self):
            length = int(self.headers.get("Content-Length", "0"))
            payload = json.loads(self.rfile.read(length) or b"{}")
            if self.path == "/emit":
                outbox.insert(payload["events"])
                worker.wake.set()
                return self.answer(200, {"accepted": len(payload["events"])})
            if self.path == "/reset":
                outbox.run("DELETE FROM webhook_outbox")
                return self.answer(200, {})
            self.answer(404, {})

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--db", required=True)
    args = p.parse_args()
    outbox = Outbox(args.db)
    worker = Worker(outbox)
    threading.Thread(target=worker.loop, daemon=True).start()
    ThreadingHTTPServer(("127.0.0.1", args.port), handler(outbox, worker)).serve_forever()


if __name__ == "__main__":
    main()
