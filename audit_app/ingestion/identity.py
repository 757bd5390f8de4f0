"""The one rule that names the workload a request belongs to.

Every importer calls `resolve_workload`, so a request gets the same workload name whether it
came from a LiteLLM spend log, an OpenTelemetry span or a generic CSV. The first step that
yields a non-empty name wins:

1. a `workload:<name>` entry in the request's tags (the prefix is matched case-insensitively);
2. a `workload` key in the request's metadata (string values only);
3. the caller: the API key alias or service identity that sent the request;
4. `<team>/<model>`, with `unassigned` standing in for an empty team.

Values are stripped of surrounding whitespace and empty values are skipped, so a blank tag or
a `"workload": "  "` entry falls through to the next step instead of naming a workload "".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

WORKLOAD_TAG_PREFIX = "workload:"
WORKLOAD_METADATA_KEY = "workload"
UNASSIGNED_TEAM = "unassigned"


def workload_tagged(tags: Sequence[str]) -> str:
    """The workload the first non-empty `workload:<name>` tag names (step 1), else ""."""
    for tag in tags:
        stripped_tag = tag.strip()
        if stripped_tag.lower().startswith(WORKLOAD_TAG_PREFIX):
            name = stripped_tag[len(WORKLOAD_TAG_PREFIX) :].strip()
            if name:
                return name
    return ""


def resolve_workload(
    *,
    tags: Sequence[str],
    metadata: Mapping[str, object],
    caller: str,
    team: str,
    model: str,
) -> str:
    """Return the workload name for one request by the precedence documented above."""
    tagged = workload_tagged(tags)
    if tagged:
        return tagged

    # Only a string names a workload; a number or a nested object in metadata is more likely
    # someone else's field that happens to share the key, so it falls through.
    metadata_workload = metadata.get(WORKLOAD_METADATA_KEY)
    if isinstance(metadata_workload, str) and metadata_workload.strip():
        return metadata_workload.strip()

    if caller.strip():
        return caller.strip()

    return f"{team.strip() or UNASSIGNED_TEAM}/{model.strip()}"
