"""A webhook receiver the way a small Python team writes one: the standard
library's threading HTTP server, hmac for the signature, sqlite3 for the
inbox (committed before the 204), and a worker thread that marks rows
processed. It sleeps 0.8 s before it listens, like an interpreter that
imports a framework, so a restart takes as long as a real one.

Usage: receiver.py LISTEN DATABASE  (secrets in FOREIGN_SECRET_A / _B)

With DEDUPE=memory it is the common shortcut instead: no unique key on the
inbox and a set of seen task ids in process memory, which a restart empties.

LISTEN is a port on 127.0.0.1 (0 for any free one), reuse:PORT to bind it
with SO_REUSEPORT beside a socket that reserves it (so a supervisor that
kills and restarts it keeps the port), or fd:N, a listening socket
inherited from whoever starts it. Either way the bound address is printed
on stdout as "listening on HOST:PORT". GET /healthz answers 200.
"""
import hashlib
import hmac
import json
import os
import socket
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LISTEN, DB = sys.argv[1], sys.argv[2]
SECRETS = {
    "acct_a": os.environ["FOREIGN_SECRET_A"].encode(),
    "acct_b": os.environ["FOREIGN_SECRET_B"].encode(),
}
MEMORY_DEDUPE = os.environ.get("DEDUPE") == "memory"
SCHEMA = """
create table if not exists webhook_inbox (
    task_id text not null, account text not null, body text not null,
    received_at text not null default current_timestamp, processed_at text%s)
""" % ("" if MEMORY_DEDUPE else ",\n    primary key (account, task_id)")
SEEN = set()
SEEN_LOCK = threading.Lock()


def connect():
    db = sqlite3.connect(DB, timeout=5, isolation_level=None)
    db.execute("pragma journal_mode=wal")
    db.execute("pragma synchronous=full")
    return db


def verified(secret, header, body):
    parts = dict(p.split("=", 1) for p in header.split(",") if "=" in p)
    sigs = [p.split("=", 1)[1] for p in header.split(",") if p.startswith("v1=")]
    try:
        t = int(parts.get("t", ""))
    except ValueError:
        return False
    if abs(time.time() - t) > 300:
        return False
    mac = hmac.new(secret, f"{t}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(mac, s) for s in sigs)


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status):
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self.answer(200 if self.path == "/healthz" else 404)

    def do_POST(self):
        account = self.path.rstrip("/").rsplit("/", 1)[-1]
        secret = SECRETS.get(account)
        length = int(self.headers.get("Content-Length", "0"))
        if secret is None:
            return self.answer(404)
        if length > 1 << 20:
            return self.answer(413)
        body = self.rfile.read(length)
        if not verified(secret, self.headers.get("Webhook-Signature", ""), body):
            return self.answer(401)
        event = json.loads(body)
        if event.get("test"):
            return self.answer(204)
        if MEMORY_DEDUPE:
            with SEEN_LOCK:
                if (account, event["task"]["id"]) in SEEN:
                    return self.answer(204)
                SEEN.add((account, event["task"]["id"]))
        db = connect()
        try:
            db.execute(
                "insert into webhook_inbox (task_id, account, body) values (?, ?, ?)"
                " on conflict do nothing",
                (event["task"]["id"], account, body.decode()),
            )
        except sqlite3.Error:
            if MEMORY_DEDUPE:
                with SEEN_LOCK:
                    SEEN.discard((account, event["task"]["id"]))
            return self.answer(503)
        finally:
            db.close()
        self.answer(204)


def worker():
    db = connect()
    while True:
        try:
            db.execute(
                "update webhook_inbox set processed_at = current_timestamp"
                " where processed_at is null"
            )
        except sqlite3.Error:
            pass
        time.sleep(0.05)


if __name__ == "__main__":
    connect().execute(SCHEMA)
    time.sleep(0.8)
    threading.Thread(target=worker, daemon=True).start()
    if LISTEN.startswith("fd:"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler, bind_and_activate=False)
        server.socket.close()
        server.socket = socket.socket(fileno=int(LISTEN[3:]))
    elif LISTEN.startswith("reuse:"):
        server = ThreadingHTTPServer(("127.0.0.1", int(LISTEN[6:])), Handler, bind_and_activate=False)
        server.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        server.server_bind()
        server.server_activate()
    else:
        server = ThreadingHTTPServer(("127.0.0.1", int(LISTEN)), Handler)
    host, port = server.socket.getsockname()[:2]
    print(f"listening on {host}:{port}", flush=True)
    server.serve_forever()
