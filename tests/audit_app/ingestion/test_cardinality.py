"""Which names keep their own: the pure fold (audit_app.ingestion.cardinality), worked out
by hand."""

from __future__ import annotations

from audit_app.ingestion.cardinality import (
    TEAM_BUCKET,
    WORKLOAD_BUCKET,
    fold_names,
    team_fold_note,
    workload_fold_note,
)

WEIGHTS = {"a": (100, 1), "b": (50, 1), "c": (30, 9), "d": (30, 2), "e": (10, 1)}


def test_under_the_limits_nothing_is_folded() -> None:
    fold = fold_names(WEIGHTS, bucket=WORKLOAD_BUCKET, per_upload=5, known=set(), total=5)
    assert fold.folded == {}
    assert (fold.names, fold.kept) == (5, 5)
    assert workload_fold_note(fold, per_upload=5, total=5, known=0) == ""


def test_the_heaviest_are_kept_and_the_bucket_takes_the_last_slot() -> None:
    fold = fold_names(WEIGHTS, bucket=WORKLOAD_BUCKET, per_upload=3)
    # a and b are heaviest; c beats d on requests at equal tokens, but both fold.
    assert fold.folded == dict.fromkeys(["c", "d", "e"], WORKLOAD_BUCKET)
    assert (fold.names, fold.kept) == (5, 2)


def test_ties_go_to_more_requests_then_to_the_name() -> None:
    fold = fold_names(WEIGHTS, bucket=WORKLOAD_BUCKET, per_upload=4)
    assert fold.folded == {"d": WORKLOAD_BUCKET, "e": WORKLOAD_BUCKET}
    same = {"y": (5, 1), "x": (5, 1), "z": (5, 1)}
    assert fold_names(same, bucket=TEAM_BUCKET, per_upload=2).folded == {
        "y": TEAM_BUCKET,
        "z": TEAM_BUCKET,
    }


def test_the_total_folds_only_new_names() -> None:
    # 2 known (e among them), total 4: room for 2 new rows, one of them the bucket.
    fold = fold_names(WEIGHTS, bucket=WORKLOAD_BUCKET, per_upload=10, known={"e", "z"}, total=4)
    assert fold.folded == dict.fromkeys(["b", "c", "d"], WORKLOAD_BUCKET)
    assert fold.kept == 2  # a (new) and e (known)
    # Once the bucket exists it needs no room of its own.
    again = fold_names(
        WEIGHTS, bucket=WORKLOAD_BUCKET, per_upload=10, known={"e", WORKLOAD_BUCKET}, total=4
    )
    assert again.folded == dict.fromkeys(["c", "d"], WORKLOAD_BUCKET)


def test_a_full_database_folds_every_new_name() -> None:
    fold = fold_names(
        {"new": (9, 9), "old": (1, 1)},
        bucket=WORKLOAD_BUCKET,
        per_upload=10,
        known={"old"},
        total=1,
    )
    assert fold.folded == {"new": WORKLOAD_BUCKET}


def test_the_notes_name_the_limit_and_the_count() -> None:
    fold = fold_names(WEIGHTS, bucket=WORKLOAD_BUCKET, per_upload=3)
    assert workload_fold_note(fold, per_upload=3, total=20_000, known=7) == (
        "3 of the 5 workloads in this file were counted together as the workload "
        "“other (workloads over the limit)” (the ones with the fewest tokens): an upload may "
        "name at most 3 workloads (MAX_WORKLOADS_PER_UPLOAD) and the database may hold at "
        "most 20,000 (MAX_WORKLOADS_TOTAL; 7 were known before this upload). Requests, tokens "
        "and cost are all counted; only those names are lost."
    )
    teams = fold_names(WEIGHTS, bucket=TEAM_BUCKET, per_upload=4)
    assert team_fold_note(teams, per_upload=4) == (
        "2 of the 5 teams in this file were counted together as the team “other (teams over "
        "the limit)” (the ones with the fewest tokens): an upload may name at most 4 teams "
        "(MAX_TEAMS_PER_UPLOAD). Requests, tokens and cost are all counted; only those names "
        "are lost."
    )
