"""The shipped hardware catalog and throughput assumptions, as migration 0008 seeds them.

A transactional test (a browser test's live server) flushes the database when it ends, rows
seeded by data migrations included; a test that prices on the catalog seeds it again first
(idempotent: rows already there are kept).
"""

from __future__ import annotations

from audit_app.costs.catalog import hardware_rows, throughput_rows
from audit_app.models import HardwareTarget, ThroughputAssumption


def catalog_ensure() -> None:
    for row in hardware_rows():
        key = {k: row[k] for k in ("kind", "provider", "name")}
        HardwareTarget.objects.get_or_create(**key, defaults=row)
    for row in throughput_rows():
        key = {k: row[k] for k in ("instance", "model_class")}
        ThroughputAssumption.objects.get_or_create(**key, defaults=row)
