"""A person decides about two billing uploads the rule could not tell apart (or overrules it):
one supersedes the other, or both count, by the service, the upload page and the API. Finops
analysts decide; every decision is audited, starts a new data version and keeps deletion's
splice right.

The pair: the FOCUS 1.3 draft's Atlas example (104.50) and a file holding two of its four charges
(50.00 + 50.00) with the four Saturn charges (94.50), 194.50 in all. Totals are worked out by hand
in comments.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.test import Client

from audit_app.costs.bills import bills_summary
from audit_app.ingestion.supersession import (
    SupersessionRefused,
    supersession_keep_both,
    supersession_mark,
)
from audit_app.ingestion.uploads import upload_delete
from audit_app.lib.results_cache import data_version
from audit_app.models import AuditEvent, BillingCharge, PossibleRestatement, Upload
from tests.audit_app.ingestion.billing_exports.bills import focus_csv, focus_row, ingest_bill
from tests.support.paths import FIXTURES_DIR

pytestmark = pytest.mark.django_db

ATLAS = (FIXTURES_DIR / "real" / "billing" / "focus-1.3-spec_multi-model-usage.csv").read_bytes()
SATURN = (FIXTURES_DIR / "billing" / "focus-1.3_split-saturn.csv").read_bytes()
BOTH = Decimal("299.00")  # 104.50 + 194.50
MIXED_ALONE = Decimal("194.50")  # 50.00 + 50.00 + 94.50
ATLAS_ALONE = Decimal("104.50")


def _flagged_pair() -> tuple[Upload, Upload]:
    atlas = ATLAS.rstrip(b"\n").split(b"\n")
    saturn = SATURN.rstrip(b"\n").split(b"\n")
    mixed = b"\n".join([*atlas[:3], *saturn[1:]]) + b"\n"
    earlier = ingest_bill(ATLAS, "atlas.csv")
    later = ingest_bill(mixed, "mixed.csv")
    assert PossibleRestatement.objects.filter(upload=later, earlier=earlier, decision="").exists()
    return earlier, later


def _billed() -> Decimal:
    return bills_summary().billed_cost["USD"]


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


# --- The service ---------------------------------------------------------------------------------


def test_marking_the_later_upload_as_superseding_then_keeping_both(finops_user: Any) -> None:
    earlier, later = _flagged_pair()
    assert _billed() == BOTH
    version = data_version()

    changed = supersession_mark(superseding=later, superseded=earlier, user=finops_user)
    assert changed == 4  # Atlas's four charges
    assert _billed() == MIXED_ALONE
    assert BillingCharge.objects.filter(upload=earlier, superseded_by=later).count() == 4
    pair = PossibleRestatement.objects.get()
    assert (pair.decision, pair.decided_by) == ("supersedes", finops_user)
    assert data_version() == version + 1
    event = AuditEvent.objects.get(action=AuditEvent.Action.RESTATEMENT_DECIDED)
    assert (event.actor, event.object_id) == (finops_user, str(later.pk))
    assert event.details == {
        "decision": "supersedes",
        "upload": later.pk,
        "other": earlier.pk,
        "charges_changed": 4,
    }

    assert supersession_keep_both(upload=later, other=earlier, user=finops_user) == 4
    assert _billed() == BOTH
    assert PossibleRestatement.objects.get().decision == "keep_both"
    assert AuditEvent.objects.filter(action=AuditEvent.Action.RESTATEMENT_DECIDED).count() == 2


def test_marking_the_earlier_one_as_superseding_turns_a_link_round(finops_user: Any) -> None:
    earlier, later = _flagged_pair()
    supersession_mark(superseding=later, superseded=earlier, user=finops_user)
    # Now the other way: the mixed file's six charges stop counting, Atlas's four count again.
    assert supersession_mark(superseding=earlier, superseded=later, user=finops_user) == 4 + 6
    assert _billed() == ATLAS_ALONE
    assert BillingCharge.objects.filter(upload=later, superseded_by=earlier).count() == 6
    assert not BillingCharge.objects.filter(upload=earlier, superseded_by__isnull=False).exists()
    # One row for the pair, its decision said of its own order (upload = the later one).
    assert PossibleRestatement.objects.get().decision == "superseded"


def test_keeping_both_undoes_an_automatic_restatement(finops_user: Any) -> None:
    first = ingest_bill(ATLAS, "atlas.csv")
    second = ingest_bill(ATLAS.replace(b"\n50.00,", b"\n51.00,", 1), "atlas-again.csv")
    assert _billed() == Decimal("105.50")  # 51.00 + 50.00 + 2.25 + 2.25
    assert supersession_keep_both(upload=second, other=first, user=finops_user) == 4
    assert _billed() == Decimal("210.00")  # 104.50 + 105.50
    pair = PossibleRestatement.objects.get()
    assert (pair.upload_id, pair.earlier_id, pair.decision) == (second.pk, first.pk, "keep_both")


def test_deleting_the_superseding_upload_after_a_decision_splices() -> None:
    earlier, later = _flagged_pair()
    supersession_mark(superseding=later, superseded=earlier, user=None)
    upload_delete(upload=later)
    assert _billed() == ATLAS_ALONE
    assert not BillingCharge.objects.filter(superseded_by__isnull=False).exists()
    assert not PossibleRestatement.objects.exists()  # the pair went with the upload


def test_refusals() -> None:
    earlier, later = _flagged_pair()
    other_month = ingest_bill(
        focus_csv(
            focus_row(billed="1.00", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
        ),
        "november.csv",
    )
    with pytest.raises(SupersessionRefused, match="share no billing period") as refused:
        supersession_mark(superseding=other_month, superseded=earlier, user=None)
    assert refused.value.kind == "conflict"
    with pytest.raises(SupersessionRefused, match="cannot restate itself") as refused:
        supersession_keep_both(upload=later, other=later, user=None)
    assert refused.value.kind == "invalid"
    queued = Upload.objects.create(kind=Upload.Kind.BILLING, original_name="q.csv", sha256="q")
    with pytest.raises(SupersessionRefused, match="is not a landed billing export"):
        supersession_mark(superseding=queued, superseded=earlier, user=None)
    # A third upload restates the later one: the later one counts nowhere it shares with Atlas.
    with Upload.objects.get(pk=later.pk).file.open("rb") as stored:
        mixed_again = stored.read().replace(b"50.00", b"50.10")
    third = ingest_bill(mixed_again, "mixed-again.csv")
    with pytest.raises(SupersessionRefused, match=f"upload {third.pk} supersedes it there"):
        supersession_mark(superseding=later, superseded=earlier, user=None)
    # Atlas 104.50 + the third file (194.50 with two charges 50.00 -> 50.10) + November 1.00
    assert _billed() == Decimal("300.20")


# --- The upload pages ----------------------------------------------------------------------------


def test_the_pages_show_the_question_and_finops_decide_with_a_button(
    client: Client, finops_user: Any
) -> None:
    earlier, later = _flagged_pair()
    client.force_login(finops_user)
    listing = _text(client.get("/uploads/").content.decode())
    assert f"mixed.csv may restate upload {earlier.pk}" in listing
    assert f"atlas.csv upload {later.pk} may restate it" in listing

    page = client.get(f"/uploads/{later.pk}/").content.decode()
    assert (
        f"This upload may restate upload {earlier.pk} (atlas.csv): of the 4 distinct charges"
    ) in _text(page)
    assert "the newer holds 2." in _text(page)
    assert f'action="/uploads/{later.pk}/restatement/"' in page
    assert f"This upload supersedes upload {earlier.pk}" in page

    response = client.post(
        f"/uploads/{later.pk}/restatement/", {"other": earlier.pk, "decision": "supersedes"}
    )
    assert response.status_code == 302
    assert response["Location"] == f"/uploads/{later.pk}/"
    assert _billed() == MIXED_ALONE
    page = _text(client.get(f"/uploads/{later.pk}/").content.decode())
    assert f"Upload {later.pk} now supersedes upload {earlier.pk}" in page
    assert (
        "Decided by ann-finops on" in page
        and f"about upload {earlier.pk} (atlas.csv): this upload supersedes upload {earlier.pk}."
        in page
    )
    assert "may restate" not in _text(client.get("/uploads/").content.decode())

    # The older page offers the undo; keeping both from there restores 299.00.
    older = client.get(f"/uploads/{earlier.pk}/").content.decode()
    assert f"Upload {later.pk} is not a restatement of this one: count both" in older
    client.post(f"/uploads/{earlier.pk}/restatement/", {"other": later.pk, "decision": "keep_both"})
    assert _billed() == BOTH


def test_other_roles_see_the_question_without_buttons_and_are_refused(
    client: Client, engineer_user: Any
) -> None:
    earlier, later = _flagged_pair()
    client.force_login(engineer_user)
    page = client.get(f"/uploads/{later.pk}/").content.decode()
    assert "may restate" in _text(page)
    assert "/restatement/" not in page
    assert "A finops analyst decides" in _text(page)
    response = client.post(
        f"/uploads/{later.pk}/restatement/", {"other": earlier.pk, "decision": "supersedes"}
    )
    assert response.status_code == 403
    assert _billed() == BOTH


def test_a_refused_decision_on_the_page_says_why(client: Client, finops_user: Any) -> None:
    _earlier, later = _flagged_pair()
    client.force_login(finops_user)
    client.post(f"/uploads/{later.pk}/restatement/", {"other": later.pk, "decision": "keep_both"})
    page = _text(client.get(f"/uploads/{later.pk}/").content.decode())
    assert f"Upload {later.pk} cannot restate itself" in page
    client.post(f"/uploads/{later.pk}/restatement/", {"other": "x", "decision": "keep_both"})
    page = _text(client.get(f"/uploads/{later.pk}/").content.decode())
    assert "Choose one of the buttons for another billing upload." in page


# --- The API -------------------------------------------------------------------------------------


def test_the_api_supersedes_and_keeps_both(client: Client, finops_user: Any) -> None:
    earlier, later = _flagged_pair()
    client.force_login(finops_user)
    detail = client.get(f"/api/v1/uploads/{later.pk}/").json()["billing"]
    assert detail["possible_restatements"] == [
        {
            "other_upload_id": earlier.pk,
            "other_upload_name": "atlas.csv",
            "this_upload_is": "newer",
            "earlier_charge_keys": 4,
            "shared_charge_keys": 2,
            "decision": "",
            "decided_by": None,
            "decided_at": None,
        }
    ]
    response = client.post(
        f"/api/v1/uploads/{later.pk}/supersede/",
        {"supersedes": earlier.pk},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json() == {
        "upload_id": later.pk,
        "other_upload_id": earlier.pk,
        "decision": "supersedes",
        "charges_changed": 4,
    }
    assert _billed() == MIXED_ALONE
    seen = client.get(f"/api/v1/uploads/{earlier.pk}/").json()["billing"]
    assert seen["possible_restatements"][0]["decision"] == "superseded"
    assert seen["possible_restatements"][0]["this_upload_is"] == "older"
    assert seen["possible_restatements"][0]["decided_by"] == "ann-finops"

    response = client.post(
        f"/api/v1/uploads/{later.pk}/keep-both/",
        {"other": earlier.pk},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert response.json()["charges_changed"] == 4
    assert _billed() == BOTH


def test_the_api_refuses_with_the_house_errors(
    client: Client, finops_user: Any, engineer_user: Any
) -> None:
    earlier, later = _flagged_pair()
    url = f"/api/v1/uploads/{later.pk}/supersede/"
    client.force_login(engineer_user)
    assert client.post(url, {"supersedes": earlier.pk}).status_code == 403

    client.force_login(finops_user)
    missing = client.post(url, {"supersedes": 999_999})
    assert missing.status_code == 400
    assert missing.json()["errors"] == {"supersedes": ["There is no upload 999999."]}
    assert client.post(url, {}).status_code == 400
    itself = client.post(url, {"supersedes": later.pk})
    assert itself.status_code == 400
    assert "cannot restate itself" in itself.json()["detail"]
    november = ingest_bill(
        focus_csv(
            focus_row(billed="1.00", start="2026-11-02T00:00:00Z", end="2026-11-02T01:00:00Z")
        ),
        "november.csv",
    )
    conflict = client.post(url, {"supersedes": november.pk})
    assert conflict.status_code == 409
    assert "share no billing period" in conflict.json()["detail"]
    assert client.post("/api/v1/uploads/999999/keep-both/", {"other": later.pk}).status_code == 404
    assert _billed() == BOTH + Decimal("1.00")
