"""Shared fixtures: users per role, service detection, Chromium for Playwright.

A test that needs PostgreSQL, Redis or Chromium skips with its reason when the service is not
configured, and fails instead when REQUIRE_SERVICES=1 (as in CI), so CI cannot pass by skipping.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from typing import Any

import pytest

# Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls from
# such a thread unless told the caller knows what it is doing.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

from tests.factories import UserFactory  # noqa: E402
from tests.support.services import (  # noqa: E402
    chromium_path,
    database_is_postgresql,
    redis_broker_url,
    require_service,
)

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]


@pytest.fixture
def finops_user(db: Any) -> Any:
    return UserFactory(username="ann-finops", roles=["finops"])


@pytest.fixture
def engineer_user(db: Any) -> Any:
    return UserFactory(username="eli-engineer", roles=["engineer"])


@pytest.fixture
def manager_user(db: Any) -> Any:
    return UserFactory(username="mia-manager", roles=["manager"])


@pytest.fixture
def no_role_user(db: Any) -> Any:
    return UserFactory(username="nora-norole", roles=[])


@pytest.fixture
def admin_user(db: Any) -> Any:
    return UserFactory(username="ada-admin", is_staff=True, is_superuser=True)


@pytest.fixture
def postgres_db(db: Any) -> None:
    require_service(
        "PostgreSQL",
        database_is_postgresql(),
        "DATABASE_URL does not point at PostgreSQL",
    )


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = redis_broker_url()
    require_service("Redis", url is not None, "CELERY_BROKER_URL is not a reachable Redis URL")
    assert url is not None
    return url


@pytest.fixture(scope="session")
def chromium() -> str:
    path = chromium_path()
    require_service(
        "Chromium", path is not None, "no Chromium binary found (apt-get install chromium)"
    )
    assert path is not None
    return path


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    # Debian's Chromium: Playwright's own browser download is not available here.
    path = chromium_path() or shutil.which("chromium") or "/usr/bin/chromium"
    return {
        **browser_type_launch_args,
        "executable_path": path,
        "headless": True,
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture
def browser_page(chromium: str, live_server: Any, page: Any) -> Iterator[Any]:
    """A Playwright page in Chromium with a live server behind it (skips without Chromium)."""
    page.set_default_timeout(15_000)
    yield page


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test outside tests/browser that takes pytest-playwright's `page` (or `browser`,
    `context`) fixture by name becomes a browser test: pytest then groups it with the Chromium
    tests, ahead of tests that rely on the migrations' data, which a browser test's database
    flush removes. Fail at collection instead of letting the order break other tests."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec and "browser_name" in callspec.params and "/browser/" not in item.nodeid:
            raise pytest.UsageError(
                f"{item.nodeid} is parametrized by pytest-playwright (it names a fixture such as "
                "`page`); rename its argument or move it to tests/browser"
            )
