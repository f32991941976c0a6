"""A FastAPI webhook receiver for answerline deliveries, with its worker
as a thread of the same process.

POST /webhooks/{account}: verify the signature on the raw body, store the
delivery in webhook_inbox (once per account and task id), answer 200. The
worker thread then settles each stored row in one transaction. GET
/admin/state and POST /admin/reset serve hookstorm (behind
HOOKSTORM_ADMIN_TOKEN); GET /healthz says it is up.

    uvicorn app:app --host 127.0.0.1 --port 8001
"""
import hashlib
import hmac
import json
import os
import re
import sqlite3
import threading
import time
from contextlib import asynccontextmanager, contextmanager
from datetime import datetime, timezone

from fastapi import FastAPI, HTTPException, Request, Response
from starlette.concurrency import run_in_threadpool

# Each account's signing secrets, comma separated, current first: during a
# rotation both verify.
SECRETS = {
    "acct_a": os.environ.get("HOOKSTORM_SECRETS_ACCT_A", ""),
    "acct_b": os.environ.get("HOOKSTORM_SECRETS_ACCT_B", ""),
}
ADMIN_TOKEN = os.environ.get("HOOKSTORM_ADMIN_TOKEN", "")
DATABASE = os.environ.get("DATABASE_PATH", "receiver.db")
TOLERANCE_SECS = 300
MAX_BODY = 1 << 20

SCHEMA = """
create table if not exists webhook_inbox (
    account text not null, task_id text not null, body text not null,
    received_at text not null default current_timestamp,
    processed_at text, error text,
    primary key (account, task_id));   -- a duplicate delivery is a no-op
create table if not exists answers (
    account text not null, task_id text not null, job_key text,
    status text not null, created_at text,
    primary key (account, task_id));
create table if not exists effects (
    account text not null, task_id text not null, count integer not null,
    primary key (account, task_id));
"""


@contextmanager
def connect():
    """An autocommit connection, closed after use. The busy timeout stays
    under a second: a locked database answers 503 and the sender retries."""
    conn = sqlite3.connect(DATABASE, timeout=0.5, isolation_level=None)
    try:
        conn.execute("pragma journal_mode=wal")
        yield conn
    finally:
        conn.close()


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


def store(account, task_id, raw):
    with connect() as conn:
        conn.execute(
            "insert into webhook_inbox (account, task_id, body) values (?, ?, ?)"
            " on conflict do nothing",
            (account, task_id, raw.decode()),
        )


# The worker: settles stored rows one transaction each.

def job_key(idempotency_key):
    """The job a task belongs to: its idempotency key without "-rN"."""
    return None if idempotency_key is None else re.sub(r"-r\d+$", "", idempotency_key)


def utc(created_at):
    """createdAt as fixed-width UTC text, so text order is time order."""
    t = datetime.fromisoformat(created_at).astimezone(timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def settle(conn, account, task_id, body):
    try:
        task = json.loads(body)["task"]
        answer = (account, task_id, job_key(task.get("idempotencyKey")),
                  task["status"], utc(task["createdAt"]))
    except (KeyError, TypeError, ValueError) as e:
        # A row we cannot use is marked failed; the others go on.
        conn.execute(
            "update webhook_inbox set error = ? where account = ? and task_id = ?",
            (f"cannot process: {e!r}", account, task_id),
        )
        return
    conn.execute("begin immediate")
    try:
        # Only a row still unsettled (not removed by a reset) is done, and
        # all of it commits together: nothing here runs twice for a task.
        if conn.execute(
            "update webhook_inbox set processed_at = current_timestamp"
            " where account = ? and task_id = ? and processed_at is null",
            (account, task_id),
        ).rowcount:
            conn.execute("insert into answers values (?, ?, ?, ?, ?)", answer)
            # The business step (notify, bill, ...): here a counter.
            conn.execute(
                "insert into effects values (?, ?, 1)"
                " on conflict do update set count = count + 1",
                (account, task_id),
            )
        conn.execute("commit")
    except BaseException:
        conn.execute("rollback")
        raise


def work(stop):
    while not stop.is_set():
        try:
            with connect() as conn:
                rows = conn.execute(
                    "select account, task_id, body from webhook_inbox"
                    " where processed_at is null and error is null limit 100"
                ).fetchall()
                for row in rows:
                    settle(conn, *row)
            if not rows:
                stop.wait(0.05)
        except sqlite3.OperationalError as e:  # locked or cut: try again
            print(f"worker: {e}", flush=True)
            stop.wait(0.2)


@asynccontextmanager
async def lifespan(app):
    with connect() as conn:
        conn.executescript(SCHEMA)
    stop = threading.Event()
    worker = threading.Thread(target=work, args=(stop,), daemon=True)
    worker.start()
    yield
    stop.set()
    worker.join()


app = FastAPI(lifespan=lifespan)


@app.post("/webhooks/{account}")
async def webhook(account: str, request: Request):
    if account not in SECRETS:
        raise HTTPException(404)
    raw = await request.body()  # the bytes as sent: never a re-serialisation
    if len(raw) > MAX_BODY:
        raise HTTPException(413)
    if not verified(raw, request.headers.get("webhook-signature"), SECRETS[account]):
        raise HTTPException(400)
    event = json.loads(raw)
    if event.get("test"):
        return Response(status_code=204)  # a dashboard test: store nothing
    task_id = (event.get("task") or {}).get("id")
    if not task_id:
        raise HTTPException(400)
    try:
        # Stored before we answer: a crash after this loses nothing.
        await run_in_threadpool(store, account, task_id, raw)
    except sqlite3.OperationalError:
        raise HTTPException(503)  # the database is unavailable: retry later
    return Response(status_code=200)


@app.get("/healthz")
def healthz():
    return {"ok": True}


def admin(request):
    if not ADMIN_TOKEN or not hmac.compare_digest(
        request.headers.get("authorization", ""), f"Bearer {ADMIN_TOKEN}"
    ):
        raise HTTPException(401)


@app.get("/admin/state")
def state(request: Request):
    admin(request)
    with connect() as conn:
        conn.row_factory = sqlite3.Row
        conn.execute("begin")  # the four reads see one snapshot
        rows = lambda sql: [dict(r) for r in conn.execute(sql)]  # noqa: E731
        return {
            "inbox": [dict(r, processed=r["processed"] is not None) for r in rows(
                "select task_id as key, account, processed_at as processed, error from webhook_inbox")],
            "results": rows("select task_id, job_key, status, created_at, account from answers"),
            # Per job, the COMPLETED task created last (the larger id on a tie).
            "winners": rows("""select a.job_key, a.task_id, a.account from answers a
                where a.status = 'COMPLETED' and a.job_key is not null and not exists (
                  select 1 from answers b where b.account = a.account and b.job_key = a.job_key
                    and b.status = 'COMPLETED' and (b.created_at > a.created_at
                    or (b.created_at = a.created_at and b.task_id > a.task_id)))"""),
            "effects": rows("select task_id as key, count, account from effects"),
        }


@app.post("/admin/reset", status_code=204)
def reset(request: Request):
    admin(request)
    with connect() as conn:
        conn.executescript("delete from webhook_inbox; delete from answers; delete from effects;")
