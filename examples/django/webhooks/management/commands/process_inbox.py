"""The inbox worker, a process of its own: python3 manage.py process_inbox

Takes each stored row that is not settled yet and, in one transaction,
records the task's answer, runs the business step once and marks the row
processed. A row it cannot use (a createdAt that is no date) is marked
failed with the error, and the worker goes on: one bad event never blocks
the others."""
import json
import re
import time
from datetime import datetime

from django.core.management.base import BaseCommand
from django.db import OperationalError, transaction
from django.db.models import F
from django.utils import timezone

from webhooks.models import Answer, Effect, InboxRow


def settle(row):
    try:
        task = json.loads(row.body)["task"]
        key = task.get("idempotencyKey")
        answer = Answer(
            account=row.account,
            task_id=row.task_id,
            job_key=None if key is None else re.sub(r"-r\d+$", "", key),  # the job: key without "-rN"
            status=task["status"],
            created_at=datetime.fromisoformat(task["createdAt"]),
        )
    except (KeyError, TypeError, ValueError) as e:
        InboxRow.objects.filter(pk=row.pk).update(error=f"cannot process: {e!r}")
        return
    with transaction.atomic():
        # Only a row still unsettled (not done before a crash, not removed
        # by a reset) is done, so nothing below runs twice for a task.
        if InboxRow.objects.filter(pk=row.pk, processed_at=None).update(processed_at=timezone.now()):
            answer.save()
            # The business step (notify, bill, ...): here a counter, so the
            # state shows it ran exactly once per task.
            Effect.objects.update_or_create(
                account=row.account, task_id=row.task_id,
                defaults={"count": F("count") + 1}, create_defaults={"count": 1},
            )


class Command(BaseCommand):
    help = "Process stored webhook deliveries, forever."

    def handle(self, *args, **options):
        while True:
            try:
                rows = list(InboxRow.objects.filter(processed_at=None, error=None)[:100])
                for row in rows:
                    settle(row)
                if not rows:
                    time.sleep(0.05)
            except OperationalError as e:  # locked, cut, or not migrated yet: try again
                self.stderr.write(f"process_inbox: {e}")
                time.sleep(0.2)
