"""Settings for every environment, driven by environment variables.

Production differs from the embedded default only by the variables listed in ``.env.example``:
with no variable set, the app runs on SQLite in ``var/`` with an embedded Celery broker, so
``make run`` needs no service installed.
"""

from __future__ import annotations

import contextlib
from decimal import Decimal, InvalidOperation
from pathlib import Path
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

from config.env import env_bool, env_float, env_int, env_list, env_networks, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
VAR_DIR = Path(env_str("DJANGO_VAR_DIR", str(BASE_DIR / "var")))
# The embedded default keeps its SQLite files and media here; a read-only deployment that sets
# every path elsewhere simply never uses it.
with contextlib.suppress(OSError):
    VAR_DIR.mkdir(parents=True, exist_ok=True)

# The embedded default is a developer's laptop, so DEBUG is on unless switched off;
# docker/compose.yml and .env.example switch it off for production.
DEBUG = env_bool("DJANGO_DEBUG", True)

_DEV_SECRET_KEY = "insecure-development-key-do-not-use-in-production"
SECRET_KEY = env_str("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false")
    SECRET_KEY = _DEV_SECRET_KEY

ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "audit_app",
    "benchmarks_app",
]

MIDDLEWARE = [
    # First, so its CPU and query figures cover every other middleware as well as the view.
    "audit_app.lib.middleware.ServerTimingMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "audit_app.lib.middleware.ContentSecurityPolicyMiddleware",
]

# A Server-Timing header (CPU ms, database ms and query count) on every answer: `make load`
# switches it on to report CPU per request per endpoint (audit_app.lib.middleware).
SERVER_TIMING = env_bool("DJANGO_SERVER_TIMING", False)

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "audit_app.views.context_processors.navigation",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------------
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
# Persistent connections are checked before reuse (one cheap query per request or task), so a
# database restart costs no request or task an error on a connection the server already closed.
DATABASES = {
    "default": dj_database_url.parse(DATABASE_URL, conn_max_age=60, conn_health_checks=True)
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default has a web server and a worker writing to one file: WAL lets readers
    # and a writer work together, IMMEDIATE transactions avoid lock-upgrade deadlocks, and the
    # timeout makes a writer wait for the other instead of failing with "database is locked".
    DATABASES["default"]["CONN_MAX_AGE"] = 0
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Failed logins (form) and invalid API tokens allowed per account and per client address and
# minute (audit_app.access.auth_failures; docs/running.md). The counts are shared by
# every web process: in Redis when AUTH_FAILURES_REDIS_URL names one, else in the database.
AUTH_FAILURES_PER_MINUTE = env_int("AUTH_FAILURES_PER_MINUTE", 10)
AUTH_FAILURES_REDIS_URL = env_str("AUTH_FAILURES_REDIS_URL", "")
# Proxies (addresses or CIDR networks) whose X-Forwarded-For names the client; with none, the
# client is the peer address (audit_app.access.client_address).
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES", [])
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

# --- Single sign-on (audit_app.access.oidc; docs/running.md, "Single sign-on") ------------
# OpenID Connect through mozilla-django-oidc. With OIDC_ISSUER unset none of this is used. The
# issuer's discovery document names every endpoint and its signing keys; both are fetched
# through audit_app.lib.outbound, so an issuer on a private network needs OUTBOUND_ALLOW_PRIVATE.
# OIDC_ROLE_MAP holds comma-separated group:role pairs (roles finops, engineer, manager, admin);
# a user's roles follow OIDC_ROLES_CLAIM at every sign-in. OIDC_ONLY hides the password form.
OIDC_ISSUER = env_str("OIDC_ISSUER", "").strip()
OIDC_CLIENT_ID = env_str("OIDC_CLIENT_ID", "").strip()
OIDC_CLIENT_SECRET = env_str("OIDC_CLIENT_SECRET", "")
OIDC_ROLES_CLAIM = env_str("OIDC_ROLES_CLAIM", "groups").strip() or "groups"
OIDC_ROLE_MAP = env_str("OIDC_ROLE_MAP", "")
OIDC_ONLY = env_bool("OIDC_ONLY", False)
if OIDC_ISSUER and not OIDC_CLIENT_ID:
    raise ImproperlyConfigured("OIDC_ISSUER is set, so OIDC_CLIENT_ID must be set too")
# The single sign-on backend answers only the callback of a sign-in (and nothing while
# OIDC_ISSUER is unset); the password form keeps Django's.
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "audit_app.access.oidc.SsoBackend",
]
# mozilla-django-oidc's own settings, which its views read.
OIDC_RP_SCOPES = "openid email profile"
OIDC_USE_NONCE = True
OIDC_USE_PKCE = True
OIDC_STORE_ID_TOKEN = True
OIDC_OP_LOGOUT_URL_METHOD = "audit_app.access.oidc.provider_logout_url"

# --- Internationalisation -------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static and media -----------------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("DJANGO_STATIC_ROOT", str(VAR_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
]
MEDIA_URL = "media/"
MEDIA_ROOT = Path(env_str("DJANGO_MEDIA_ROOT", str(VAR_DIR / "media")))
# Hashed names, gzip and brotli copies, and far-future caching, served by WhiteNoise from
# STATIC_ROOT: always in production; with DEBUG on only when DJANGO_STATIC_MANIFEST is true, as
# `make run` sets it (`manage.py serve --prepare` collects into var/ first, brotli at a quality
# that takes seconds rather than a minute; config/staticfiles.py).
STATIC_MANIFEST = env_bool("DJANGO_STATIC_MANIFEST", not DEBUG)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if not STATIC_MANIFEST
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if not DEBUG
            else "config.staticfiles.QuickCompressedManifestStorage"
        )
    },
}
if STATIC_MANIFEST and DEBUG:
    # As in production, files come from STATIC_ROOT only, scanned once at start, so a hashed
    # name is served with a year's max-age and its .br / .gz copy to a client that accepts one;
    # only hashed names are kept (and compressed), which halves the collect.
    WHITENOISE_USE_FINDERS = False
    WHITENOISE_AUTOREFRESH = False
    WHITENOISE_KEEP_ONLY_HASHED_FILES = True
# Largest upload accepted, enforced while the file streams in.
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 2 * 1024**3)
# Ingest fan-out: a token log (LiteLLM / generic CSV or JSONL) of at least this many bytes is
# cut at record boundaries into up to INGEST_FANOUT_PARTS parts, one Celery task each, so
# several workers parse it at once (audit_app.ingestion.fanout). INGEST_FANOUT_PARTS=0
# turns fan-out off.
INGEST_FANOUT_MIN_BYTES = env_int("INGEST_FANOUT_MIN_BYTES", 64 * 1024**2)
INGEST_FANOUT_PARTS = env_int("INGEST_FANOUT_PARTS", 8)
# Cardinality limits, enforced when an upload lands (audit_app.ingestion.cardinality): an upload
# naming
# more workloads (teams) than this, or bringing the database past MAX_WORKLOADS_TOTAL, keeps
# its heaviest names and counts the rest under one "other (... over the limit)" name, so totals
# stay exact. A large organisation runs hundreds of workloads; these are far above that.
MAX_WORKLOADS_PER_UPLOAD = env_int("MAX_WORKLOADS_PER_UPLOAD", 5000)
MAX_WORKLOADS_TOTAL = env_int("MAX_WORKLOADS_TOTAL", 20000)
MAX_TEAMS_PER_UPLOAD = env_int("MAX_TEAMS_PER_UPLOAD", 1000)
# Recommendations saving less than this many USD a month are not proposed.
RECOMMENDATION_MIN_SAVINGS_USD = env_int("RECOMMENDATION_MIN_SAVINGS_USD", 10)
# Serving pools idling less than this many USD a month get no pool recommendation.
POOL_RECOMMENDATION_MIN_IDLE_USD = env_int("POOL_RECOMMENDATION_MIN_IDLE_USD", 1000)
# Pool recommendations size each hour for its demand plus this share (0.2 = 20 % headroom).
POOL_HEADROOM = env_float("POOL_HEADROOM", 0.2)
# The time zone whose midnight completes a day (audit_app.reporting.days): default windows,
# forecasts' actuals and anomaly scores end at the last day that has ended there (and in UTC,
# where bills and rollups are dated); the day still running shows apart, as "today so far".
REPORT_TIMEZONE = env_str("REPORT_TIMEZONE", "UTC")
try:
    _report_zone = ZoneInfo(REPORT_TIMEZONE)
except (ZoneInfoNotFoundError, ValueError):
    raise ImproperlyConfigured(
        f"REPORT_TIMEZONE {REPORT_TIMEZONE!r} is not a time zone name (e.g. UTC, Europe/Paris)"
    ) from None
# An anomaly's day must spend at least this many USD over its expected day (besides its score,
# and either $1 over it or three times it: audit_app.budgets.anomalies).
try:
    ANOMALY_MIN_USD = Decimal(env_str("ANOMALY_MIN_USD", "0.05"))
except InvalidOperation:
    raise ImproperlyConfigured("ANOMALY_MIN_USD must be a number of dollars, e.g. 0.05") from None
if not ANOMALY_MIN_USD.is_finite() or ANOMALY_MIN_USD < 0:
    raise ImproperlyConfigured(f"ANOMALY_MIN_USD must be 0 or more, not {ANOMALY_MIN_USD}")
# Refresh workload classes and recommendations in the worker whenever one of their inputs
# changes (an upload landed or deleted, a price card, pool, hardware entry or override edited).
DERIVED_REFRESH_ON_CHANGE = env_bool("DERIVED_REFRESH_ON_CHANGE", True)
# Uploads stream to a temporary file (never into memory) through the size check, keeping the
# client's file name up to 255 bytes with its extension.
FILE_UPLOAD_HANDLERS = [
    "audit_app.lib.upload_handlers.SizeLimitUploadHandler",
    "audit_app.lib.upload_handlers.NamedTemporaryFileUploadHandler",
]

# --- Security (production defaults switch on when DEBUG is off) -----------------------------
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("DJANGO_SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("DJANGO_CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
# Submitting a domain to the browsers' HSTS preload list is hard to undo and covers every
# subdomain, so it is the operator's choice (DJANGO_SECURE_HSTS_PRELOAD), not a default; the
# deploy check's reminder about it is silenced while it is off.
SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
X_FRAME_OPTIONS = "DENY"
if env_bool("DJANGO_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
CONTENT_SECURITY_POLICY = env_str(
    "DJANGO_CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "frame-ancestors 'none'; base-uri 'self'; form-action 'self'",
)


def csp_allowing_issuer(policy: str, issuer: str) -> str:
    """``policy`` whose form-action admits the issuer's origin: signing out of the identity
    provider is a redirect there after the sign-out form's POST, which browsers check."""
    origin = "/".join(issuer.split("/")[:3])
    return policy.replace("form-action 'self'", f"form-action 'self' {origin}")


if OIDC_ISSUER:
    CONTENT_SECURITY_POLICY = csp_allowing_issuer(CONTENT_SECURITY_POLICY, OIDC_ISSUER)
# /healthz is probed by load balancers over plain HTTP inside the network.
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]

# --- Django REST framework and OpenAPI ------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first, so an anonymous request gets 401 with a WWW-Authenticate header.
        "audit_app.access.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["audit_app.access.permissions.HasAnyRole"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "audit_app.api.errors.exception_handler",
    # DRF's own classes, counting anonymous clients by the address audit_app.access.client_address
    # gives instead of trusting any X-Forwarded-For.
    "DEFAULT_THROTTLE_CLASSES": [
        "audit_app.access.throttling.AnonRateThrottle",
        "audit_app.access.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": env_str("API_THROTTLE_ANON", "60/minute"),
        "user": env_str("API_THROTTLE_USER", "1200/minute"),
    },
    "DEFAULT_PAGINATION_CLASS": "audit_app.api.pagination.ApiPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Inference Spend Audit API",
    "DESCRIPTION": "Uploads, spend breakdowns, workloads, recommendations and benchmark gates.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # The schema and its docs page need a role, like every other page and endpoint.
    "SERVE_PERMISSIONS": ["audit_app.access.permissions.HasAnyRole"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The upload list and the upload detail (which adds a billing upload's contents) share
    # these choice sets; named once here rather than by a hash.
    "ENUM_NAME_OVERRIDES": {
        "UploadKindEnum": "audit_app.models.Upload.Kind",
        "UploadStatusEnum": "audit_app.models.Upload.Status",
        "BudgetStatusEnum": "audit_app.budgets.status.BUDGET_STATUSES",
        "BillingSourceKindEnum": "audit_app.models.BillingSource.Kind",
    },
}

# --- Celery ---------------------------------------------------------------------------------
# Embedded default: kombu's SQLAlchemy transport on a SQLite file, so `make run` starts a real
# worker with no broker service. Production sets CELERY_BROKER_URL to Redis.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", f"sqla+sqlite:///{VAR_DIR / 'broker.sqlite3'}")
_default_backend = (
    CELERY_BROKER_URL
    if CELERY_BROKER_URL.startswith(("redis://", "rediss://"))
    else f"db+sqlite:///{VAR_DIR / 'celery-results.sqlite3'}"
)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", _default_backend)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 24 * 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 3
if CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    # Redis redelivers an unacknowledged task after this many seconds: longer than the
    # longest ingest, or a slow one would run twice at once.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 6 * 3600)
    }
# Ingestion-type tasks acknowledge only after they finish, and a worker that dies mid-task
# hands the message back, so a killed ingest is redelivered (the ingest itself is idempotent).
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Outbound work (billing source polls, alert deliveries) has its own queue, consumed by its own
# worker, so a slow peer never holds a worker that ingests or lands records. A worker started
# without -Q consumes both queues.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_OUTBOUND_QUEUE = env_str("CELERY_OUTBOUND_QUEUE", "outbound")
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)
    for name in (CELERY_TASK_DEFAULT_QUEUE, CELERY_OUTBOUND_QUEUE)
]
CELERY_TASK_ROUTES = {
    name: {"queue": CELERY_OUTBOUND_QUEUE}
    for name in (
        "audit_app.poll_billing_sources",
        "audit_app.poll_billing_source",
        "audit_app.deliver_alert",
        "audit_app.send_statements",
    )
}
# Alerts (audit_app.budgets.alerts) are evaluated after every ingest and by Celery beat every
# ALERT_EVALUATE_EVERY_SECONDS; `manage.py serve` (make run) runs beat inside its worker.
ALERT_EVALUATE_EVERY_SECONDS = env_int("ALERT_EVALUATE_EVERY_SECONDS", 15 * 60)
# Monthly statements (audit_app.statements) are emailed to team owners on this day of the month.
STATEMENTS_SEND_DAY = env_int("STATEMENTS_SEND_DAY", 2)
CELERY_BEAT_SCHEDULE = {
    "evaluate-alerts": {
        "task": "audit_app.evaluate_alerts",
        "schedule": float(ALERT_EVALUATE_EVERY_SECONDS),
    },
    "land-live-records": {
        "task": "audit_app.land_live",
        "schedule": float(env_int("LIVE_LAND_EVERY_SECONDS", 10)),
    },
    "poll-billing-sources": {
        "task": "audit_app.poll_billing_sources",
        "schedule": float(env_int("BILLING_SOURCES_CHECK_EVERY_SECONDS", 60)),
    },
    # Each team owner gets last month's statement on this day of the month (UTC), once.
    "send-statements": {
        "task": "audit_app.send_statements",
        "schedule": crontab(minute=0, hour=6, day_of_month=STATEMENTS_SEND_DAY),
    },
}
# Price cards from the maintained price dataset (`manage.py prices_sync`; docs/using.md "Where
# prices come from"): `make run` syncs once on first start; with PRICES_SYNC_WEEKLY beat syncs
# weekly too, which picks up a newer dataset once the pinned genai-prices is upgraded.
PRICES_SYNC_WEEKLY = env_bool("PRICES_SYNC_WEEKLY", False)
if PRICES_SYNC_WEEKLY:
    CELERY_BEAT_SCHEDULE["sync-prices"] = {
        "task": "audit_app.prices_sync",
        "schedule": float(7 * 24 * 3600),
    }
# Uploads left `queued` are queued again by a sweep in every worker (audit_app.ingestion.requeue):
# at worker start and every UPLOAD_REQUEUE_INTERVAL_SECONDS (0 turns it off), those the broker
# could not take when they were uploaded, and those queued longer than
# UPLOAD_REQUEUE_AFTER_SECONDS (a lost message). Duplicates are harmless: ingest is idempotent.
UPLOAD_REQUEUE_INTERVAL_SECONDS = env_int("UPLOAD_REQUEUE_INTERVAL_SECONDS", 30)
UPLOAD_REQUEUE_AFTER_SECONDS = env_int("UPLOAD_REQUEUE_AFTER_SECONDS", 300)

# --- Live ingestion (audit_app.ingestion.live, audit_app.ingestion.sources) -------------------
# Records pushed to /v1/traces (OTLP/HTTP) and /api/v1/ingest/litellm/ are kept as received and
# landed every LIVE_LAND_EVERY_SECONDS by Celery beat; a record re-sent within
# LIVE_DEDUP_WINDOW_DAYS (same span id / LiteLLM id) counts once. Derived results (classes,
# recommendations, alerts) refresh after landings at most every LIVE_REFRESH_MIN_SECONDS.
# A request body over LIVE_MAX_REQUEST_BYTES (after decompression too) is refused with 413;
# past LIVE_MAX_PENDING_RECORDS records waiting to land, receivers answer 429 with Retry-After.
LIVE_LAND_EVERY_SECONDS = env_int("LIVE_LAND_EVERY_SECONDS", 10)
LIVE_DEDUP_WINDOW_DAYS = env_int("LIVE_DEDUP_WINDOW_DAYS", 7)
LIVE_REFRESH_MIN_SECONDS = env_int("LIVE_REFRESH_MIN_SECONDS", 300)
LIVE_MAX_REQUEST_BYTES = env_int("LIVE_MAX_REQUEST_BYTES", 16 * 1024 * 1024)
LIVE_MAX_PENDING_RECORDS = env_int("LIVE_MAX_PENDING_RECORDS", 2_000_000)
# Billing sources are checked every BILLING_SOURCES_CHECK_EVERY_SECONDS; each is polled when
# its own interval (poll_every_minutes, default hourly) has passed since its last poll.
BILLING_SOURCES_CHECK_EVERY_SECONDS = env_int("BILLING_SOURCES_CHECK_EVERY_SECONDS", 60)
# A folder source must lie under one of these directories (comma-separated absolute paths;
# symlinks are resolved before the check), where the operator mounts or syncs the exports: a
# user who may add sources cannot make the server read any other folder.
BILLING_SOURCE_ROOTS = [
    Path(item) for item in env_list("BILLING_SOURCE_ROOTS", [str(VAR_DIR / "sources")])
]

# --- Outbound requests (audit_app.lib.outbound) -------------------------------------------
# URL sources, S3-compatible endpoints and alert webhooks reach only public addresses: a host
# that resolves to a loopback, private, link-local, multicast, reserved or IPv4-mapped address
# is refused unless inside one of OUTBOUND_ALLOW_PRIVATE's networks (comma-separated CIDRs,
# e.g. 10.20.0.0/16 for an internal MinIO). One request (all redirects, every read) ends at
# OUTBOUND_TIMEOUT_SECONDS; a URL source's body may be UPLOAD_MAX_BYTES long, any other answer
# OUTBOUND_MAX_BYTES. Outbound work runs on the Celery queue CELERY_OUTBOUND_QUEUE.
OUTBOUND_ALLOW_PRIVATE = env_networks("OUTBOUND_ALLOW_PRIVATE", [])
OUTBOUND_TIMEOUT_SECONDS = env_float("OUTBOUND_TIMEOUT_SECONDS", 60.0)
OUTBOUND_MAX_BYTES = env_int("OUTBOUND_MAX_BYTES", 1024 * 1024)
# Provider cost and usage APIs (audit_app.ingestion.provider_apis): one page of OpenAI's or
# Anthropic's answer may be PROVIDER_API_MAX_PAGE_BYTES long; a 429 or 5xx is retried after the
# Retry-After it names (or 1, 2, 4 … s), never waiting longer than PROVIDER_API_MAX_WAIT_SECONDS
# at once (a longer Retry-After ends the poll; the next one tries again).
PROVIDER_API_MAX_PAGE_BYTES = env_int("PROVIDER_API_MAX_PAGE_BYTES", 16 * 1024 * 1024)
PROVIDER_API_MAX_WAIT_SECONDS = env_float("PROVIDER_API_MAX_WAIT_SECONDS", 60.0)
# A keyless S3 source at a custom endpoint sends unsigned requests; with this, boto3's own
# credential chain (environment, profile, instance role) signs them instead.
S3_AMBIENT_CREDENTIALS = env_bool("S3_AMBIENT_CREDENTIALS", False)
# Secrets kept in the database (S3 secret keys) are encrypted with Fernet: the first of these
# keys encrypts, every one decrypts. Rotate by putting a new key first, then running
# `manage.py encrypt_secrets`, then dropping the old key. Without it, a key derived from
# DJANGO_SECRET_KEY is used (set keys here, and run encrypt_secrets, before changing that one).
FIELD_ENCRYPTION_KEYS = env_list("FIELD_ENCRYPTION_KEYS", [])

# --- Alerts and email --------------------------------------------------------------------------
# An anomaly alerts when its score reaches ALERT_ANOMALY_MIN_SCORE; anomaly alerts go to these
# addresses and webhooks (budgets name their own). Webhooks are signed with HMAC-SHA256 keyed
# by ALERT_WEBHOOK_SECRET (X-Audit-Signature); without it (and DEBUG off) they are not sent.
ALERT_ANOMALY_MIN_SCORE = env_float("ALERT_ANOMALY_MIN_SCORE", 5.0)
ALERT_ANOMALY_EMAILS = env_list("ALERT_ANOMALY_EMAILS", [])
ALERT_ANOMALY_WEBHOOKS = env_list("ALERT_ANOMALY_WEBHOOKS", [])
ALERT_WEBHOOK_SECRET = env_str(
    "ALERT_WEBHOOK_SECRET", "insecure-development-webhook-secret" if DEBUG else ""
)
# Email: SMTP in production; in the embedded default (DEBUG) one file per message under
# $DJANGO_VAR_DIR/mail, so `make run` sends nothing anywhere.
EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.filebased.EmailBackend"
    if DEBUG
    else "django.core.mail.backends.smtp.EmailBackend",
)
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", str(VAR_DIR / "mail"))
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "inference-spend-audit@localhost")

# --- Caches --------------------------------------------------------------------------------
# `default` serves API throttling (failed-login counts are not kept in a cache: see
# AUTH_FAILURES_REDIS_URL). `results` keeps what pages compute from rollups (spend,
# percentiles, filter choices) until the data changes: every landed or deleted upload, price
# card or serving pool starts a new data version (audit_app.lib.results_cache). `default` stays in
# each process, so a Redis outage never fails a request on a rate-limit lookup (API rate
# limits are then per web process). `results` lives in Redis
# when RESULTS_CACHE_URL names one, shared by every web process and the worker whose warm-up
# after an ingest then serves everyone (a Redis outage only makes pages compute), else in
# files under the var directory.
RESULTS_CACHE_URL = env_str("RESULTS_CACHE_URL", "")
_REDIS_CACHE = RESULTS_CACHE_URL.startswith(("redis://", "rediss://"))
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "results": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": RESULTS_CACHE_URL,
            "TIMEOUT": 24 * 3600,
            "KEY_PREFIX": "audit-results",
            # Fail fast when Redis is away: pages then compute instead of waiting.
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1.0},
        }
        if _REDIS_CACHE
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": env_str("RESULTS_CACHE_DIR", "") or str(VAR_DIR / "cache" / "results"),
            "TIMEOUT": 24 * 3600,
            "OPTIONS": {"MAX_ENTRIES": 2000},
        }
    ),
}

# --- Logging --------------------------------------------------------------------------------
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("DJANGO_LOG_LEVEL", "INFO")},
}
