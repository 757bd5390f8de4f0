"""The workload-identity rule, one row per precedence step and per fall-through."""

from __future__ import annotations

import pytest

from audit_app.ingestion.identity import resolve_workload, workload_tagged


@pytest.mark.parametrize(
    ("tags", "metadata", "caller", "team", "model", "expected"),
    [
        # 1. a workload tag beats everything else
        (
            ["env:prod", "workload:ticket-triage"],
            {"workload": "from-metadata"},
            "support-bot",
            "support",
            "gpt-4o",
            "ticket-triage",
        ),
        # the tag prefix is case-insensitive and whitespace around the name is stripped
        ([" Workload:  Nightly Eval  "], {}, "", "", "gpt-4o", "Nightly Eval"),
        # the first workload tag wins when there are two
        (["workload:first", "workload:second"], {}, "", "", "gpt-4o", "first"),
        # an empty workload tag falls through to metadata
        (["workload:", "workload:   "], {"workload": "docs-qa"}, "k1", "t", "m", "docs-qa"),
        # a tag that merely contains the word is not a workload tag
        (["my-workload:x"], {}, "caller-a", "", "m", "caller-a"),
        # 2. metadata workload beats the caller
        ([], {"workload": " docs-qa "}, "docs-search", "docs", "gpt-4o", "docs-qa"),
        # a blank or non-string metadata workload falls through to the caller
        ([], {"workload": "  "}, "docs-search", "docs", "gpt-4o", "docs-search"),
        ([], {"workload": 7}, "docs-search", "docs", "gpt-4o", "docs-search"),
        # 3. the caller beats team/model
        ([], {}, " eval-runner ", "research", "gpt-4o", "eval-runner"),
        # 4. team/model when there is no caller
        ([], {}, "   ", "growth", "gpt-4o", "growth/gpt-4o"),
        # 4. unassigned/model when the team is empty too
        ([], {}, "", "  ", "gpt-4o-mini", "unassigned/gpt-4o-mini"),
    ],
)
def test_resolve_workload_precedence(
    tags: list[str],
    metadata: dict[str, object],
    caller: str,
    team: str,
    model: str,
    expected: str,
) -> None:
    assert (
        resolve_workload(tags=tags, metadata=metadata, caller=caller, team=team, model=model)
        == expected
    )


def test_the_tag_step_alone_names_a_workload_or_nothing() -> None:
    assert workload_tagged(["env:prod", " Workload: triage ", "workload:second"]) == "triage"
    assert workload_tagged(["workload:", "workload:  "]) == ""
    assert workload_tagged([]) == ""
