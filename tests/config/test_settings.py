"""Settings come from the environment: readers, and whole settings built from given variables."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured

from config.env import env_bool, env_float, env_int, env_list, env_networks, env_str
from tests.support.processes import REPO_ROOT


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("Yes", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("", False),
    ],
)
def test_env_bool(raw: str, expected: bool) -> None:
    assert env_bool("X", not expected, environ={"X": raw}) is expected


def test_env_bool_default_and_bad_value() -> None:
    assert env_bool("X", True, environ={}) is True
    with pytest.raises(ImproperlyConfigured, match="X='maybe' is not a boolean"):
        env_bool("X", True, environ={"X": "maybe"})


def test_env_int() -> None:
    assert env_int("N", 5, environ={}) == 5
    assert env_int("N", 5, environ={"N": "2_147_483_648"}) == 2_147_483_648
    with pytest.raises(ImproperlyConfigured, match="N='2GB' is not a whole number"):
        env_int("N", 5, environ={"N": "2GB"})


def test_env_float() -> None:
    assert env_float("F", 5.0, environ={}) == 5.0
    assert env_float("F", 5.0, environ={"F": " 4.5 "}) == 4.5
    for bad in ("high", "nan", "inf"):
        with pytest.raises(ImproperlyConfigured, match=f"F='{bad}' is not a number"):
            env_float("F", 5.0, environ={"F": bad})


def test_env_networks() -> None:
    assert env_networks("P", [], environ={}) == []
    assert env_networks("P", [], environ={"P": "10.0.0.5, 10.0.0.0/8,::1"}) == [
        "10.0.0.5",
        "10.0.0.0/8",
        "::1",
    ]
    with pytest.raises(ImproperlyConfigured, match="P: 'proxy.local' is not an IP address"):
        env_networks("P", [], environ={"P": "10.0.0.5,proxy.local"})


def test_env_list_and_str() -> None:
    assert env_list("H", ["a"], environ={}) == ["a"]
    assert env_list("H", ["a"], environ={"H": " x.example.com, ,y.example.com "}) == [
        "x.example.com",
        "y.example.com",
    ]
    assert env_str("S", "d", environ={"S": "v"}) == "v"


PRINT_SETTINGS = """
import json, django
from django.conf import settings
django.setup()
db = settings.DATABASES["default"]
print(json.dumps({
    "debug": settings.DEBUG, "engine": db["ENGINE"], "name": str(db["NAME"]),
    "host": db.get("HOST"), "broker": settings.CELERY_BROKER_URL,
    "backend": settings.CELERY_RESULT_BACKEND, "hosts": settings.ALLOWED_HOSTS,
    "hsts": settings.SECURE_HSTS_SECONDS, "ssl_redirect": settings.SECURE_SSL_REDIRECT,
    "secure_cookie": settings.SESSION_COOKIE_SECURE, "max_upload": settings.UPLOAD_MAX_BYTES,
    "media": str(settings.MEDIA_ROOT),
    "sqlite_options": db.get("OPTIONS", {}),
    "static_storage": settings.STORAGES["staticfiles"]["BACKEND"],
    "static_finders": getattr(settings, "WHITENOISE_USE_FINDERS", None),
}))
"""


def _settings_with(env: dict[str, str], tmp_path: object) -> dict[str, object]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_", "UPLOAD_"))
    }
    clean.update(
        {"DJANGO_SETTINGS_MODULE": "config.settings.base", "DJANGO_VAR_DIR": str(tmp_path), **env}
    )
    result = subprocess.run(
        [sys.executable, "-c", PRINT_SETTINGS],
        cwd=REPO_ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        return {"error": result.stderr.strip().splitlines()[-1]}
    return json.loads(result.stdout)


def test_embedded_default_needs_no_service(tmp_path: object) -> None:
    values = _settings_with({}, tmp_path)
    assert values["debug"] is True
    assert values["engine"] == "django.db.backends.sqlite3"
    assert values["name"] == f"{tmp_path}/db.sqlite3"
    assert values["broker"] == f"sqla+sqlite:///{tmp_path}/broker.sqlite3"
    assert values["backend"] == f"db+sqlite:///{tmp_path}/celery-results.sqlite3"
    assert values["sqlite_options"]["transaction_mode"] == "IMMEDIATE"
    assert values["max_upload"] == 2 * 1024**3
    assert values["media"] == f"{tmp_path}/media"


def test_production_variables(tmp_path: object) -> None:
    values = _settings_with(
        {
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "x" * 60,
            "DJANGO_ALLOWED_HOSTS": "audit.example.com",
            "DATABASE_URL": "postgres://audit:pw@db.internal:5432/audit",
            "CELERY_BROKER_URL": "redis://cache.internal:6379/0",
            "UPLOAD_MAX_BYTES": "1048576",
        },
        tmp_path,
    )
    assert values["debug"] is False
    assert values["engine"] == "django.db.backends.postgresql"
    assert values["name"] == "audit"
    assert values["host"] == "db.internal"
    assert values["broker"] == "redis://cache.internal:6379/0"
    assert values["backend"] == "redis://cache.internal:6379/0"
    assert values["hosts"] == ["audit.example.com"]
    assert values["hsts"] == 31_536_000
    assert values["ssl_redirect"] is True
    assert values["secure_cookie"] is True
    assert values["max_upload"] == 1_048_576


def test_production_without_a_secret_key_refuses_to_start(tmp_path: object) -> None:
    values = _settings_with({"DJANGO_DEBUG": "false"}, tmp_path)
    assert "DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is false" in str(values["error"])


def test_a_bad_boolean_names_the_variable(tmp_path: object) -> None:
    values = _settings_with({"DJANGO_DEBUG": "perhaps"}, tmp_path)
    assert "DJANGO_DEBUG='perhaps' is not a boolean" in str(values["error"])


def test_check_deploy_is_clean_with_production_variables(tmp_path: object) -> None:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CELERY_"))
    }
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.base",
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": "k3y-" + "abcdefghij" * 6,
            "DJANGO_ALLOWED_HOSTS": "audit.example.com",
            "DJANGO_VAR_DIR": str(tmp_path),
        }
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_env_example_lists_every_variable_the_settings_read() -> None:
    import re

    read = set()
    for path in (REPO_ROOT / "config").rglob("*.py"):
        pattern = r'env_(?:str|bool|int|float|list|networks)\(\s*"([A-Z_]+)"'
        found = re.findall(pattern, path.read_text())
        read |= set(found)
    listed = set(re.findall(r"^([A-Z_]+)=", (REPO_ROOT / ".env.example").read_text(), re.M))
    assert len(read) >= 15
    assert read - listed == set()


def test_static_files_plain_by_default_hashed_and_compressed_for_make_run_and_production(
    tmp_path: object,
) -> None:
    assert _settings_with({}, tmp_path)["static_storage"] == (
        "django.contrib.staticfiles.storage.StaticFilesStorage"
    )
    make_run = _settings_with({"DJANGO_STATIC_MANIFEST": "true"}, tmp_path)
    assert make_run["static_storage"] == "config.staticfiles.QuickCompressedManifestStorage"
    assert make_run["static_finders"] is False  # served from STATIC_ROOT, as in production
    production = _settings_with({"DJANGO_DEBUG": "false", "DJANGO_SECRET_KEY": "x" * 50}, tmp_path)
    assert production["static_storage"] == "whitenoise.storage.CompressedManifestStaticFilesStorage"
    assert production["static_finders"] is None  # WhiteNoise's own default (off without DEBUG)
