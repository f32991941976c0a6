"""The inbox worker, a process of its own: settles stored rows one
transaction each (processed, the effect run once, the object's winner
kept); a row whose order field is not a time is marked failed."""
import os
import sys
import time

from store import Store

# The server creates the schema too; until one has, opening may fail.
while True:
    try:
        store = Store(sys.argv[1] if len(sys.argv) > 1 else os.environ["ZOO_DATABASE"])
        break
    except Exception as e:
        print(f"worker: {e}", file=sys.stderr, flush=True)
        time.sleep(0.2)
while True:
    try:
        rows = store.pending()
        for row in rows:
            store.settle(row)
        if not rows:
            time.sleep(0.05)
    except store.Error as e:
        print(f"worker: {e}", file=sys.stderr, flush=True)
        time.sleep(0.2)
