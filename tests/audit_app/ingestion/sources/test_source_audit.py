"""Creating, changing and deleting a billing source is written to the audit trail, with who
did it and what changed; the secret key is never written there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from audit_app.ingestion.source_changes import source_create, source_delete, source_update
from audit_app.models import AuditEvent

pytestmark = pytest.mark.django_db


@pytest.fixture
def root(tmp_path: Path, settings: Any) -> Path:
    folder = tmp_path / "sources"
    folder.mkdir()
    settings.BILLING_SOURCE_ROOTS = [folder]
    return folder


def test_each_change_to_a_source_is_one_audit_event(finops_user: Any) -> None:
    source = source_create(
        user=finops_user,
        data={
            "name": "cur",
            "kind": "s3",
            "location": "acme-billing",
            "prefix": "cur/",
            "access_key_id": "AKIAEXAMPLE",
            "secret_access_key": "s3cr3t-never-logged",
        },
    )
    source_update(source=source, user=finops_user, data={"poll_every_minutes": 15})
    source_delete(source=source, user=None)

    events = list(AuditEvent.objects.filter(action=AuditEvent.Action.SOURCE_CHANGED).order_by("id"))
    assert [e.summary for e in events] == [
        "created billing source cur (s3 acme-billing)",
        "changed billing source cur: poll_every_minutes",
        "deleted billing source cur (s3 acme-billing)",
    ]
    assert [e.actor_name for e in events] == ["ann-finops", "ann-finops", "command line"]
    assert events[1].details == {
        "change": "updated",
        "before": {"poll_every_minutes": 60},
        "after": {"poll_every_minutes": 15},
    }
    assert events[0].details["has_secret_access_key"] is True
    assert all("s3cr3t-never-logged" not in str(e.details) for e in events)
    assert {e.object_type for e in events} == {"BillingSource"}


def test_a_refused_source_writes_no_event(finops_user: Any, root: Path) -> None:
    with pytest.raises(Exception, match="not under a folder"):
        source_create(user=finops_user, data={"name": "x", "kind": "folder", "location": "/etc"})
    assert not AuditEvent.objects.filter(action=AuditEvent.Action.SOURCE_CHANGED).exists()
