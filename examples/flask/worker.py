"""The inbox worker, a process of its own: takes each stored row that is
not settled yet and, in one transaction, records the task's answer, runs
the business step once and marks the row processed. A row it cannot use (a
createdAt that is no date) is marked failed with the error, and the worker
goes on: one bad event never blocks the others.

    python3 worker.py
"""
import json
import re
import sqlite3
import time
from datetime import datetime, timezone

import db


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
        conn.execute(
            "update webhook_inbox set error = ? where account = ? and task_id = ?",
            (f"cannot process: {e!r}", account, task_id),
        )
        return
    conn.execute("begin immediate")
    try:
        # Only a row still unsettled (not done before a crash, not removed
        # by a reset) is done, so nothing below runs twice for a task.
        if conn.execute(
            "update webhook_inbox set processed_at = current_timestamp"
            " where account = ? and task_id = ? and processed_at is null",
            (account, task_id),
        ).rowcount:
            conn.execute("insert into answers values (?, ?, ?, ?, ?)", answer)
            # The business step (notify, bill, ...): here a counter, so the
            # state shows it ran exactly once per task.
            conn.execute(
                "insert into effects values (?, ?, 1)"
                " on conflict do update set count = count + 1",
                (account, task_id),
            )
        conn.execute("commit")
    except BaseException:
        conn.execute("rollback")
        raise


def main():
    while True:
        try:
            db.migrate()
            break
        except sqlite3.OperationalError:
            time.sleep(0.2)
    while True:
        try:
            with db.connect() as conn:
                rows = conn.execute(
                    "select account, task_id, body from webhook_inbox"
                    " where processed_at is null and error is null limit 100"
                ).fetchall()
                for row in rows:
                    settle(conn, *row)
            if not rows:
                time.sleep(0.05)
        except sqlite3.OperationalError as e:  # locked or cut: try again
            print(f"worker: {e}", flush=True)
            time.sleep(0.2)


if __name__ == "__main__":
    main()
