"""Reads over possible restatements: the billing uploads one upload may restate or be restated
by, too close to call (`audit_app.ingestion.supersession`), and what a person decided about
them, for the upload's page and API (`audit_app.costs.bills.upload_billing`)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Q

from audit_app.models import PossibleRestatement, Upload


@dataclass(frozen=True, kw_only=True)
class PossibleRestatementOf:
    """Another billing upload of the same billing periods that this one may restate, or that
    may restate it (`PossibleRestatement`), and what a person decided, said of this upload:
    "supersedes" (this one replaces the other), "superseded", "keep_both", or "" (open)."""

    other_id: int
    other_name: str
    newer: bool  # this upload is the one that landed later
    earlier_keys: int  # the earlier upload's distinct charge keys in the shared periods
    shared_keys: int  # how many of them the later upload holds too
    decision: str
    decided_by: str
    decided_at: datetime | None

    @property
    def open(self) -> bool:
        return not self.decision

    @property
    def decision_text(self) -> str:
        return {
            "supersedes": f"this upload supersedes upload {self.other_id}",
            "superseded": f"upload {self.other_id} supersedes this upload",
            "keep_both": "both count",
        }.get(self.decision, "")


# The decision of a `PossibleRestatement` row, said of its earlier upload instead of its upload.
_DECISION_OF_EARLIER = {"supersedes": "superseded", "superseded": "supersedes"}


def _landed(upload: Upload) -> tuple[datetime, int]:
    return (upload.finished_at or upload.created_at, upload.pk)


def possible_restatements(upload: Upload) -> list[PossibleRestatementOf]:
    """The uploads this one may restate or be restated by, open questions first."""
    rows = PossibleRestatement.objects.filter(Q(upload=upload) | Q(earlier=upload)).select_related(
        "upload", "earlier", "decided_by"
    )
    found = []
    for row in rows:
        own_row = row.upload_id == upload.pk
        other = row.earlier if own_row else row.upload
        decision = row.decision if own_row else _DECISION_OF_EARLIER.get(row.decision, row.decision)
        # A row the rule wrote names the later upload first; one a person wrote, either.
        newer = _landed(upload) > _landed(other)
        found.append(
            PossibleRestatementOf(
                other_id=other.pk,
                other_name=other.original_name,
                newer=newer,
                earlier_keys=row.earlier_keys,
                shared_keys=row.shared_keys,
                decision=decision,
                decided_by=row.decided_by.get_username() if row.decided_by else "",
                decided_at=row.decided_at,
            )
        )
    return sorted(found, key=lambda p: (not p.open, p.other_id))
