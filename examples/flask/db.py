"""The receiver's SQLite database, shared by the web app and the worker.

webhook_inbox holds every delivery as it came, one row per (account, task):
the primary key is what makes a duplicate delivery a no-op. answers holds
what the worker derived from each task, effects how often the business
step ran for it."""
import os
import sqlite3
from contextlib import contextmanager

PATH = os.environ.get("DATABASE_PATH", "receiver.db")

SCHEMA = """
create table if not exists webhook_inbox (
    account text not null, task_id text not null, body text not null,
    received_at text not null default current_timestamp,
    processed_at text, error text,
    primary key (account, task_id));
create table if not exists answers (
    account text not null, task_id text not null, job_key text,
    status text not null, created_at text,
    primary key (account, task_id));
create table if not exists effects (
    account text not null, task_id text not null, count integer not null,
    primary key (account, task_id));
"""


@contextmanager
def connect(timeout=0.5):
    """A connection in autocommit mode (each statement commits on its own,
    or inside an explicit "begin"), closed after use. A busy timeout under
    a second: a locked database answers 503 (the sender retries) instead
    of holding the request."""
    conn = sqlite3.connect(PATH, timeout=timeout, isolation_level=None)
    try:
        conn.execute("pragma journal_mode=wal")
        yield conn
    finally:
        conn.close()


def migrate():
    """Creates the tables. Every gunicorn worker and the inbox worker run it
    as they boot, all at once: it waits up to 10 s for the others (with the
    requests' half second, a busy machine once failed a worker's boot on
    "database is locked", and gunicorn shut down)."""
    with connect(timeout=10) as conn:
        conn.executescript(SCHEMA)
