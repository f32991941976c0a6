from django.db import models


class InboxRow(models.Model):
    """A delivery as it came, stored before the 2xx. The unique constraint
    on (account, task_id) makes a duplicate delivery a no-op."""

    account = models.CharField(max_length=64)
    task_id = models.CharField(max_length=255)
    body = models.TextField()
    received_at = models.DateTimeField(auto_now_add=True)
    processed_at = models.DateTimeField(null=True)
    error = models.TextField(null=True)

    class Meta:
        db_table = "webhook_inbox"
        constraints = [models.UniqueConstraint(fields=["account", "task_id"], name="one_row_per_task")]


class Answer(models.Model):
    """What the worker derived from a task."""

    account = models.CharField(max_length=64)
    task_id = models.CharField(max_length=255)
    job_key = models.CharField(max_length=255, null=True)
    status = models.CharField(max_length=32)
    created_at = models.DateTimeField()

    class Meta:
        db_table = "answers"
        constraints = [models.UniqueConstraint(fields=["account", "task_id"], name="one_answer_per_task")]


class Effect(models.Model):
    """How often the business step ran for a task (once, always)."""

    account = models.CharField(max_length=64)
    task_id = models.CharField(max_length=255)
    count = models.IntegerField()

    class Meta:
        db_table = "effects"
        constraints = [models.UniqueConstraint(fields=["account", "task_id"], name="one_effect_per_task")]
