"""Settings of a Django project that only receives webhooks: no sessions,
no templates, no admin site; one app, webhooks."""
import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# Nothing here signs cookies or sessions; set a real key if you add any.
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "unused-without-sessions")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = ["webhooks"]
MIDDLEWARE = []
ROOT_URLCONF = "receiver.urls"
WSGI_APPLICATION = "receiver.wsgi.application"
USE_TZ = True
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DATABASE_PATH", BASE_DIR / "receiver.db"),
        "OPTIONS": {
            # A busy timeout under a second: a locked database answers 503
            # (the sender retries) instead of holding the request.
            "timeout": 0.5,
            # Take the write lock when a transaction starts, so two writers
            # wait for each other instead of failing halfway.
            "transaction_mode": "IMMEDIATE",
            "init_command": "pragma journal_mode=wal;",
        },
    }
}

# Each account's signing secrets, comma separated, current first: during a
# rotation both verify.
WEBHOOK_SECRETS = {
    "acct_a": os.environ.get("HOOKSTORM_SECRETS_ACCT_A", ""),
    "acct_b": os.environ.get("HOOKSTORM_SECRETS_ACCT_B", ""),
}
ADMIN_TOKEN = os.environ.get("HOOKSTORM_ADMIN_TOKEN", "")
WEBHOOK_MAX_BODY = 1 << 20
