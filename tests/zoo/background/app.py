"""A FastAPI webhook endpoint under uvicorn (two worker processes), the way
a FastAPI team writes one: verify the signature on the raw body, store the
event in the inbox (unique per account and event id) in a thread, answer
200; the zoo's inbox worker (zoo/python/worker.py) processes the rows.
ZOO_PROVIDER picks the verify module of the zoo's Python receivers
(zoo/python/providers), ZOO_SECRET_ACCT_A / _B its secrets, ZOO_DATABASE
the store.

ZOO_MUTANT=background-write answers first and stores the event in a
BackgroundTasks callback, which FastAPI runs a few ms after the response
has been sent ("respond fast, persist after"): a process that dies in
between loses an event it acknowledged.

    uvicorn app:app --fd 3 --workers 2"""
import importlib
import os
import sys
from pathlib import Path

from fastapi import BackgroundTasks, FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

# The zoo's shared store (the inbox schema) and verify modules.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))
from store import Store  # noqa: E402

MUTANT = os.environ.get("ZOO_MUTANT", "")
SECRETS = {"acct_a": os.environ.get("ZOO_SECRET_ACCT_A"), "acct_b": os.environ.get("ZOO_SECRET_ACCT_B")}
provider = importlib.import_module("providers." + os.environ.get("ZOO_PROVIDER", "answerline"))
store = Store(os.environ["ZOO_DATABASE"])

app = FastAPI()


@app.get("/healthz")
def healthz():
    return Response(status_code=200)


@app.post("/webhooks/{account}")
async def webhook(account: str, request: Request, background: BackgroundTasks):
    secret = SECRETS.get(account)
    if not secret:
        return Response(status_code=404)
    raw = await request.body()
    if len(raw) > 1 << 20:
        return Response(status_code=413)
    try:
        event = provider.verify(raw, request.headers, secret)
    except ValueError:
        return Response(status_code=400)
    e = provider.describe(event, request.headers)
    if e.get("ignore"):
        return Response(status_code=204)
    if not e.get("key"):
        return Response(status_code=400)
    if MUTANT == "background-write":
        background.add_task(store.receive, account, e, raw.decode())
        return Response(status_code=200)
    try:
        await run_in_threadpool(store.receive, account, e, raw.decode())
    except store.Error:
        return Response(status_code=503)
    return Response(status_code=200)
