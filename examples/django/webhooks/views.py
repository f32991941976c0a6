"""POST /webhooks/<account>: verify the signature on the raw body, store
the delivery (once per account and task id), answer 200; the process_inbox
command does the work. GET /admin/state and POST /admin/reset serve
hookstorm (behind HOOKSTORM_ADMIN_TOKEN); GET /healthz says it is up."""
import hashlib
import hmac
import json
import time

from django.conf import settings
from django.db import OperationalError, transaction
from django.http import HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from .models import Answer, Effect, InboxRow

TOLERANCE_SECS = 300


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


@csrf_exempt
@require_POST
def webhook(request, account):
    secrets = settings.WEBHOOK_SECRETS.get(account)
    if secrets is None:
        return HttpResponse(status=404)
    if int(request.META.get("CONTENT_LENGTH") or 0) > settings.WEBHOOK_MAX_BODY:
        return HttpResponse(status=413)
    raw = request.body  # the bytes as sent: never a re-serialisation
    if not verified(raw, request.headers.get("Webhook-Signature"), secrets):
        return HttpResponse(status=400)
    event = json.loads(raw)
    if event.get("test"):
        return HttpResponse(status=204)  # a dashboard test: store nothing
    task_id = (event.get("task") or {}).get("id")
    if not task_id:
        return HttpResponse(status=400)
    try:
        # Stored before we answer: a crash after this line loses nothing,
        # and a duplicate (same account and task id) is ignored.
        InboxRow.objects.bulk_create(
            [InboxRow(account=account, task_id=task_id, body=raw.decode())], ignore_conflicts=True
        )
    except OperationalError:
        return HttpResponse(status=503)  # the database is unavailable: retry later
    return HttpResponse(status=200)


@require_GET
def healthz(request):
    return HttpResponse("ok")


def admin_only(view):
    def checked(request):
        given = request.headers.get("Authorization", "")
        if not settings.ADMIN_TOKEN or not hmac.compare_digest(given, f"Bearer {settings.ADMIN_TOKEN}"):
            return HttpResponse(status=401)
        return view(request)

    return csrf_exempt(checked)


@admin_only
@require_GET
def state(request):
    # The inbox first: a row it shows processed has its answer and effect
    # already committed when they are read.
    rows = list(InboxRow.objects.all())
    answers = list(Answer.objects.all())
    effects = list(Effect.objects.all())
    # Per job, the COMPLETED task created last (the larger id on a tie).
    winners = {}
    for a in answers:
        key = (a.account, a.job_key)
        if a.status == "COMPLETED" and a.job_key is not None:
            best = winners.get(key)
            if best is None or (a.created_at, a.task_id) > (best.created_at, best.task_id):
                winners[key] = a
    return JsonResponse({
        "inbox": [
            {"key": r.task_id, "account": r.account, "processed": r.processed_at is not None, "error": r.error}
            for r in rows
        ],
        "results": [
            {"task_id": a.task_id, "job_key": a.job_key, "status": a.status,
             "created_at": a.created_at.isoformat(), "account": a.account}
            for a in answers
        ],
        "winners": [{"job_key": a.job_key, "task_id": a.task_id, "account": a.account} for a in winners.values()],
        "effects": [{"key": e.task_id, "count": e.count, "account": e.account} for e in effects],
    })


@admin_only
@require_POST
def reset(request):
    with transaction.atomic():
        InboxRow.objects.all().delete()
        Answer.objects.all().delete()
        Effect.objects.all().delete()
    return HttpResponse(status=204)
