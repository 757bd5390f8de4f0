"""Workload classifier: accuracy and confusion matrix on the labeled workloads.

Also checks the demo archetypes of `audit_app.demo.workloads` (labels set by their own author,
`ambiguous` left out) as a second opinion on traffic the labeled set did not tune against.
"""

from __future__ import annotations

import time
from collections import Counter
from datetime import timedelta

from audit_app.demo.traffic import generate_requests
from audit_app.demo.workloads import CLASS_AMBIGUOUS, DEFAULT_WORKLOADS
from audit_app.workloads.classifier import (
    LABEL_ASYNC,
    LABEL_REALTIME,
    LABEL_UNKNOWN,
    classify_summary,
)
from bench.labeled_workloads import DAYS, START, labeled_workloads, summarize_requests

SEED = 0
DEMO_SCALE = 0.1
TRUE_LABELS = (LABEL_REALTIME, LABEL_ASYNC)
PREDICTED_LABELS = (LABEL_REALTIME, LABEL_ASYNC, LABEL_UNKNOWN)


def _confusion_lines(pairs: list[tuple[str, str]]) -> list[str]:
    counts = Counter(pairs)
    header = "true / predicted".rjust(18) + "".join(f"{label:>10}" for label in PREDICTED_LABELS)
    rows = [
        f"{truth:>18}" + "".join(f"{counts[(truth, p)]:>10}" for p in PREDICTED_LABELS)
        for truth in TRUE_LABELS
    ]
    return [f"classification: {header}", *(f"classification: {row}" for row in rows)]


def run() -> list[str]:
    started = time.perf_counter()
    cases = labeled_workloads(seed=SEED)
    built = time.perf_counter() - started
    started = time.perf_counter()
    results = [(case, classify_summary(case.summary)) for case in cases]
    classify_seconds = time.perf_counter() - started

    correct = sum(result.label == case.label for case, result in results)
    clear = [(case, result) for case, result in results if case.clear]
    clear_correct = sum(result.label == case.label for case, result in clear)
    wrong = sorted(
        f"{case.name} ({case.label} → {result.label})"
        for case, result in results
        if result.label != case.label
    )
    lines = [
        f"classification: {len(cases)} labeled workloads ({len({c.shape for c in cases})} "
        f"shapes, seed {SEED}): accuracy {correct / len(cases) * 100:.1f} % "
        f"({correct}/{len(cases)}); clear cases {clear_correct}/{len(clear)}",
        *_confusion_lines([(case.label, result.label) for case, result in results]),
        f"classification: misclassified: {', '.join(wrong) if wrong else 'none'}",
        f"classification: simulate + summarise {built:.2f} s; classify "
        f"{classify_seconds / len(cases) * 1000:.2f} ms per workload",
    ]

    frame = generate_requests(start=START, days=DAYS, scale=DEMO_SCALE, seed=SEED)
    rows = frame.groupby("workload").indices
    agree = total = 0
    disagreements = []
    for spec in DEFAULT_WORKLOADS:
        if spec.expected_class == CLASS_AMBIGUOUS or spec.name not in rows:
            continue
        summary = summarize_requests(
            frame.iloc[rows[spec.name]],
            workload=spec.name,
            callers=frozenset({spec.caller}),
            window_start=START,
            window_end=START + timedelta(days=DAYS),
        )
        label = classify_summary(summary).label
        total += 1
        if label == spec.expected_class:
            agree += 1
        else:
            disagreements.append(f"{spec.name} ({spec.expected_class} → {label})")
    lines.append(
        f"classification: demo archetypes (demo.traffic, scale {DEMO_SCALE}): {agree}/{total} "
        f"agree with their expected class"
        + (f"; disagree: {', '.join(disagreements)}" if disagreements else "")
    )
    return lines
