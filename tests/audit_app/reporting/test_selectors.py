"""Selectors read what the pages show."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from audit_app.models import Upload
from audit_app.reporting.selectors import uploads_per_day
from tests.factories import UploadFactory


@pytest.mark.django_db
def test_uploads_per_day_counts_each_kind_on_its_day() -> None:
    UploadFactory(created_at=datetime(2026, 11, 27, 9, 0, tzinfo=UTC))
    UploadFactory(created_at=datetime(2026, 11, 27, 23, 59, tzinfo=UTC))
    UploadFactory(created_at=datetime(2026, 11, 29, 0, 1, tzinfo=UTC))
    UploadFactory(kind=Upload.Kind.BILLING, created_at=datetime(2026, 11, 28, 12, tzinfo=UTC))
    # Outside the 3-day window ending 2026-11-29: not counted.
    UploadFactory(created_at=datetime(2026, 11, 26, 23, 59, tzinfo=UTC))

    result = uploads_per_day(days=3, today=date(2026, 11, 29))

    assert result.days == [date(2026, 11, 27), date(2026, 11, 28), date(2026, 11, 29)]
    assert result.counts_by_kind == {
        "Token / request log": [2, 0, 1],
        "Billing export": [0, 1, 0],
    }
    assert result.total == 4


@pytest.mark.django_db
def test_uploads_per_day_with_no_uploads_is_a_flat_zero_series() -> None:
    result = uploads_per_day(days=7, today=date(2026, 11, 29))
    assert result.counts_by_kind == {"Uploads": [0] * 7}
    assert result.total == 0
