"""Limits on distinct names: which workloads and teams of an upload keep their own name.

Pure module (no Django). A real organisation runs hundreds of workloads; a file naming a
million (a request id used as the workload tag, a label exploding) would otherwise create a
million workload rows and make every page and post-ingest step proportional to them. So when
an upload lands, past a limit its names are *folded*: the heaviest keep their own name and the
rest are counted together under one bucket name. Only names are lost; requests, tokens and cost
land unchanged, so the upload's totals and every sum stay exact.

Heaviest means most input + output tokens, then most requests, then the name (so the choice
does not depend on the order of the file or of the parts a fanned-out ingest merged).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

WORKLOAD_BUCKET = "other (workloads over the limit)"
TEAM_BUCKET = "other (teams over the limit)"


@dataclass(frozen=True, kw_only=True)
class NameFold:
    """The names to count under ``bucket`` (each maps to it), and what was kept."""

    bucket: str
    folded: dict[str, str]
    names: int  # distinct names the upload had
    kept: int  # of which kept their own name (the bucket itself not counted)


def fold_names(
    weights: Mapping[str, tuple[int, int]],
    *,
    bucket: str,
    per_upload: int,
    known: Set[str] = frozenset(),
    total: int | None = None,
) -> NameFold:
    """Which names of one upload to fold into ``bucket``.

    ``weights`` are (tokens, requests) per name. At most ``per_upload`` distinct names remain
    (the bucket among them); with ``total``, names not yet ``known`` are kept only while the
    known names plus the new ones (the bucket too, if it is new) stay within ``total``. Names
    already known are never folded for the total: they add no row.
    """
    names = sorted((n for n in weights if n != bucket), key=lambda n: (_neg(weights[n]), n))
    new = sum(1 for n in names if n not in known) + (bucket in weights and bucket not in known)
    room = len(names) + 1 if total is None else total - len(known)
    if len(weights) <= per_upload and new <= room:
        return NameFold(bucket=bucket, folded={}, names=len(weights), kept=len(names))
    slots = max(per_upload - 1, 0)
    new_slots = max(room - (0 if bucket in known else 1), 0)
    kept = kept_new = 0
    folded: dict[str, str] = {}
    for name in names:
        is_new = name not in known
        if kept < slots and (not is_new or kept_new < new_slots):
            kept += 1
            kept_new += is_new
        else:
            folded[name] = bucket
    return NameFold(bucket=bucket, folded=folded, names=len(weights), kept=kept)


def _neg(weight: tuple[int, int]) -> tuple[int, int]:
    return (-weight[0], -weight[1])


def workload_fold_note(fold: NameFold, *, per_upload: int, total: int, known: int) -> str:
    """The sentence an upload whose workloads were folded carries ('' when none were)."""
    if not fold.folded:
        return ""
    return (
        f"{len(fold.folded):,} of the {fold.names:,} workloads in this file were counted "
        f"together as the workload “{fold.bucket}” (the ones with the fewest tokens): an "
        f"upload may name at most {per_upload:,} workloads (MAX_WORKLOADS_PER_UPLOAD) and "
        f"the database may hold at most {total:,} (MAX_WORKLOADS_TOTAL; {known:,} were known "
        f"before this upload). Requests, tokens and cost are all counted; only those names "
        f"are lost."
    )


def team_fold_note(fold: NameFold, *, per_upload: int) -> str:
    """The sentence an upload whose teams were folded carries ('' when none were)."""
    if not fold.folded:
        return ""
    return (
        f"{len(fold.folded):,} of the {fold.names:,} teams in this file were counted together "
        f"as the team “{fold.bucket}” (the ones with the fewest tokens): an upload may name at "
        f"most {per_upload:,} teams (MAX_TEAMS_PER_UPLOAD). Requests, tokens and cost are all "
        f"counted; only those names are lost."
    )
