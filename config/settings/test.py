"""Settings for the test suite: the base settings plus speed-ups.

Services come from the same environment variables as production (DATABASE_URL,
CELERY_BROKER_URL); tests that need a real one skip without it, or fail with REQUIRE_SERVICES=1.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

os.environ.setdefault("DJANGO_VAR_DIR", tempfile.mkdtemp(prefix="audit-test-var-"))
# A parallel run (pytest-xdist): the workers inherit the starting process's environment, so each
# moves to a directory of its own inside the run's (media, caches, SQLite files), which the
# processes it starts inherit in turn. A directory a test gives a process it starts is kept.
os.environ.setdefault("AUDIT_TEST_RUN_VAR_DIR", os.environ["DJANGO_VAR_DIR"])
if (_worker := os.environ.get("PYTEST_XDIST_WORKER")) and (
    os.environ["DJANGO_VAR_DIR"] == os.environ["AUDIT_TEST_RUN_VAR_DIR"]
):
    os.environ["DJANGO_VAR_DIR"] = str(Path(os.environ["DJANGO_VAR_DIR"]) / _worker)

from config.settings.base import *  # noqa: E402,F403
from config.settings.base import VAR_DIR  # noqa: E402

DEBUG = False
SECRET_KEY = "test-secret-key-not-for-production"  # noqa: S105
ALLOWED_HOSTS = ["*"]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
MEDIA_ROOT = Path(VAR_DIR) / "media"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # noqa: F405
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory, so a real worker process started by a test can share the database.
    DATABASES["default"]["TEST"] = {"NAME": str(Path(VAR_DIR) / "test-db.sqlite3")}  # noqa: F405
# Results are recomputed on every read in tests (tests of the cache itself switch it on).
CACHES = {
    **CACHES,  # noqa: F405
    "results": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
}
# Derived results are refreshed by the tests that check it
# (tests/audit_app/test_derived.py);
# elsewhere a change does not queue a refresh, so each test sees what it set up.
DERIVED_REFRESH_ON_CHANGE = False
# Unit tests run tasks in-process; integration tests start a real worker and switch this off.
CELERY_TASK_ALWAYS_EAGER = True
CELERY_TASK_EAGER_PROPAGATES = True
# The suite's own peers (webhook receivers, URL sources, MinIO stand-ins) listen on loopback;
# tests/audit_app/lib/test_outbound.py proves loopback is refused without this.
OUTBOUND_ALLOW_PRIVATE = ["127.0.0.0/8"]
# The suite makes many requests from one address within a minute; tests that check limits set
# their own.
AUTH_FAILURES_PER_MINUTE = 10_000
REST_FRAMEWORK = {  # noqa: F405
    **REST_FRAMEWORK,  # noqa: F405
    "DEFAULT_THROTTLE_RATES": {"anon": "100000/minute", "user": "100000/minute"},
}
