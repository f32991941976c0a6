"""The Celery side of the queue receiver: a Celery app on Redis whose task
calls a slow downstream API for an inbox row (ZOO_TASK_MS, 200 ms) and
then settles the row (processed, the effect counted once, the winner kept)
in one transaction, so running it twice changes nothing.

Set up as a team that has lost tasks before sets it up: a task is
acknowledged only after it ran (acks_late; a task whose pool process dies is
rejected back to the queue), one task prefetched per process, and a sweep
that re-enqueues every unprocessed inbox row when a worker is ready and
every 2 s (a task held by a worker that was SIGKILLed waits in Redis's
unacked set for its one-hour visibility timeout; a row whose enqueue was
cut off by a kill of the web process was never queued at all).

ZOO_MUTANT=early-ack keeps Celery's defaults instead (a task acknowledged
as a pool process takes it, four prefetched per process) and has no sweep:
a worker killed while it holds tasks loses them.

    celery -A tasks worker --concurrency 2 --beat --schedule FILE

ZOO_BROKER is the Redis URL, ZOO_DATABASE the store."""
import os
import sys
import time
from pathlib import Path

from celery import Celery
from celery.signals import worker_ready

# The zoo's shared store (the inbox schema, the settle transaction).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from store import Store  # noqa: E402

DOWNSTREAM_MS = int(os.environ.get("ZOO_TASK_MS", "200"))
EARLY_ACK = os.environ.get("ZOO_MUTANT", "") == "early-ack"
ROW = "select account, key, object, ordered, failed, processed_at from webhook_inbox where account = %s and key = %s"

app = Celery("zoo", broker=os.environ["ZOO_BROKER"])
app.conf.update(
    task_ignore_result=True,
    broker_connection_retry_on_startup=True,
)
if not EARLY_ACK:
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        beat_schedule={"sweep": {"task": "tasks.sweep", "schedule": 2.0}},
    )
store = Store(os.environ["ZOO_DATABASE"])


def notify_downstream(account, key):
    """The slow part a task exists for (a payment or mail API call)."""
    time.sleep(DOWNSTREAM_MS / 1000)


@app.task
def settle(account, key):
    with store.tx() as db:
        row = db.execute(ROW, (account, key)).fetchone()
    if row is None or row[5] is not None:
        return
    notify_downstream(account, key)
    store.settle(dict(zip(("account", "key", "object", "ordered", "failed"), row)))


@app.task
def sweep():
    for row in store.pending():
        settle.delay(row["account"], row["key"])


@worker_ready.connect
def sweep_on_boot(**_):
    if not EARLY_ACK:
        sweep.delay()
