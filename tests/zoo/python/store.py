"""The receiver's store: an inbox row per event (unique per account and
event identity), the winning update per object, a count of the business
effect per event, the sequence applied per resource (never lowered) and
the tasks the team submitted (for reconciliation). SQLite (a connection per request, as sqlite3 wants in a
pre-forked server) or Postgres through a psycopg pool with no statement
timeout. ZOO_DATABASE is a file path or a postgres:// URL; ZOO_DB_WAIT_MS
is SQLite's busy timeout (5 s without it)."""
import json
import os
import sqlite3
from contextlib import contextmanager
from datetime import datetime

MUTANT = os.environ.get("ZOO_MUTANT", "")
BUSY_TIMEOUT_S = int(os.environ.get("ZOO_DB_WAIT_MS", "5000")) / 1000
UNIQUE = "" if MUTANT in ("unique-dropped", "memory-dedupe") else ", primary key (account, key)"

SCHEMA = [
    f"""create table if not exists webhook_inbox (
        account text not null, key text not null, type text, object text,
        ordered text, resource text, sequence integer,
        failed boolean not null default false, body text not null,
        received_at {{ts}}, processed_at {{ts_null}}, error text{UNIQUE})""",
    """create table if not exists winners (
        account text not null, object text not null, key text not null,
        rank double precision not null, primary key (account, object))""",
    """create table if not exists effects (
        account text not null, key text not null, count integer not null,
        primary key (account, key))""",
    """create table if not exists resources (
        account text not null, resource text not null, sequence integer not null,
        primary key (account, resource))""",
    """create table if not exists submitted (
        account text not null, key text not null, primary key (account, key))""",
]
NEWER = "where excluded.rank > winners.rank or (excluded.rank = winners.rank and excluded.key > winners.key collate \"C\")"
WINNER = (
    "insert into winners (account, object, key, rank) values (%s, %s, %s, %s)"
    " on conflict (account, object) do update set key = excluded.key, rank = excluded.rank "
    + ("" if MUTANT == "winner-by-arrival" else NEWER)
)
# A resource moves only forward: an older sequence arriving late is stored
# and processed, and changes nothing.
ADVANCE = (
    "insert into resources (account, resource, sequence) values (%s, %s, %s)"
    " on conflict (account, resource) do update set sequence = excluded.sequence "
    + ("" if MUTANT == "sequence-by-arrival" else "where excluded.sequence > resources.sequence")
)
INSERT = (
    "insert into webhook_inbox (account, key, type, object, ordered, resource, sequence, failed, body, processed_at)"
    " values (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) on conflict do nothing"
)
MISSING = (
    "select s.account, s.key from submitted s where not exists"
    " (select 1 from webhook_inbox i where i.account = s.account and i.key = s.key)"
    " order by s.account, s.key"
)
EFFECT = (
    "insert into effects (account, key, count) values (%s, %s, 1)"
    " on conflict (account, key) do update set count = effects.count + 1"
)
PENDING = (
    "select account, key, object, ordered, resource, sequence, failed from webhook_inbox"
    " where processed_at is null and error is null limit 200"
)
DONE = (
    "update webhook_inbox set processed_at = {now}"
    " where account = %s and key = %s and processed_at is null"
)
FAILED = (
    "update webhook_inbox set error = %s"
    " where account = %s and key = %s and processed_at is null"
)


def rank(value):
    """The newest-wins rank of an order field (RFC 3339 or unix seconds),
    None when it is not a time (a poison event)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) * 1000
    try:
        return datetime.fromisoformat(value).timestamp() * 1000
    except (TypeError, ValueError):
        return None


class Store:
    def __init__(self, where):
        self.postgres = where.startswith(("postgres://", "postgresql://"))
        if self.postgres:
            import psycopg
            from psycopg_pool import ConnectionPool

            self.Error = psycopg.Error
            self.pool = ConnectionPool(where, min_size=1, max_size=4, open=True)
            ts, ts_null, self.now = "timestamptz not null default now()", "timestamptz", "now()"
        else:
            self.Error = sqlite3.Error
            self.path = where
            ts, ts_null, self.now = "text not null default current_timestamp", "text", "current_timestamp"
        # The migration, under a lock: every gunicorn worker and the inbox
        # worker run it when they start.
        with self.tx() as db:
            if self.postgres:
                db.execute("select pg_advisory_xact_lock(7707)")
            for s in SCHEMA:
                db.execute(s.format(ts=ts, ts_null=ts_null))

    @contextmanager
    def tx(self):
        if self.postgres:
            with self.pool.connection() as conn:
                with conn.transaction():
                    yield conn
            return
        conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            conn.execute("pragma journal_mode=wal")
            conn.execute("begin immediate")
            yield _Sqlite(conn)
            conn.execute("commit")
        except BaseException:
            if conn.in_transaction:
                conn.execute("rollback")
            raise
        finally:
            conn.close()

    def receive(self, account, e, body, processed=False):
        order = None if e.get("order") is None else json.dumps(e["order"])
        with self.tx() as db:
            db.execute(
                INSERT,
                (account, e["key"], e["type"], e["object"], order, e.get("resource"), e.get("sequence"),
                 bool(e["failed"]), body, datetime.now().isoformat() if processed else None),
            )

    def submit(self, account, keys):
        """Records the tasks submitted for `account` (replacing the last list)."""
        with self.tx() as db:
            db.execute("delete from submitted where account = %s", (account,))
            for k in keys:
                db.execute("insert into submitted (account, key) values (%s, %s) on conflict do nothing", (account, k))

    def missing(self):
        """The submitted tasks the inbox lacks, as (account, key)."""
        with self.tx() as db:
            return [tuple(r) for r in db.execute(MISSING).fetchall()]

    def effect(self, account, key):
        with self.tx() as db:
            db.execute(EFFECT, (account, key))

    def pending(self):
        with self.tx() as db:
            cols = ("account", "key", "object", "ordered", "resource", "sequence", "failed")
            return [dict(zip(cols, r)) for r in db.execute(PENDING).fetchall()]

    def settle(self, row):
        """One transaction: mark the row, run the effect once, keep the winner."""
        r = rank(None if row["ordered"] is None else json.loads(row["ordered"]))
        with self.tx() as db:
            if r is None:
                db.execute(FAILED, ("order field is not a time", row["account"], row["key"]))
                return
            if db.execute(DONE.format(now=self.now), (row["account"], row["key"])).rowcount == 0:
                return
            db.execute(EFFECT, (row["account"], row["key"]))
            if not row["failed"] and row["object"] is not None:
                db.execute(WINNER, (row["account"], row["object"], row["key"], r))
            # Callers that read their own row (the Celery task) may leave
            # the resource out: a row without one updates none.
            if row.get("resource") is not None and row.get("sequence") is not None:
                db.execute(ADVANCE, (row["account"], row["resource"], row["sequence"]))


class _Sqlite:
    """sqlite3 with psycopg's %s placeholders."""

    def __init__(self, conn):
        self.conn = conn

    def execute(self, sql, params=()):
        return self.conn.execute(sql.replace("%s", "?").replace('collate "C"', "collate binary"), params)
