"""Benchmark pages: runs (list, import, detail and edit) and gates (create, verdict).
One concern: what the benchmark pages show and how their figures read.

A run is a curve of load points: its page shows every point in one table and the metrics and
charts of one point (``?point=<index>``, the first by default). A gate's page reads only the
gate's recorded result and inputs, never the runs, so it shows what was decided even after a
run was edited.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View

from audit_app.access.permissions import ALL_ROLES, Role, RoleRequiredMixin
from audit_app.lib import formatting
from audit_app.lib.query_params import ParameterError, QueryParams, int_param
from benchmarks_app import charts, curves, gating
from benchmarks_app.forms import (
    EDITABLE_KEYS,
    RUN_FIELD_LABELS,
    GateForm,
    RunEditForm,
    RunForm,
    field_label,
    stated_meta,
)
from benchmarks_app.hints import META_FLAGS, META_KEY, SIDES
from benchmarks_app.metrics import (
    METRIC_LABELS,
    RunFields,
    RunMetrics,
    timeline,
    tpot_per_request,
)
from benchmarks_app.models import BenchmarkPoint, BenchmarkRun, Gate
from benchmarks_app.runs import artifact_from_json, metrics_from_json, run_fields
from benchmarks_app.services import (
    GateLinkRefused,
    GateRefused,
    RunRefused,
    benchmark_run_import,
    benchmark_run_update,
    gate_evaluate,
    hosted_prices,
)

NOT_APPLICABLE = "not applicable"
# Only engineers import runs, edit them and create gates.
ENGINEERS = frozenset({Role.ENGINEER})


def priced_fields(fields: RunFields) -> RunFields:
    """A hosted run's fields with the token prices a gate would use (stated, else the
    provider's price card); a self-hosted run's as they are. Resolved once per page."""
    return hosted_prices(fields)[0] if fields.hosted else fields


def point_usd_per_million(fields: RunFields, metrics: RunMetrics) -> Decimal | None:
    """Busy-only cost per 1M output tokens of one point, the one figure every benchmark page
    shows: `gating.point_usd_per_million`, as a gate prices a point with no traffic profile.
    `fields` come from `priced_fields`."""
    return gating.point_usd_per_million(fields, metrics)


# --- the list page --------------------------------------------------------------------------


class BenchmarkListView(RoleRequiredMixin, View):
    template_name = "benchmarks/benchmarks.html"
    roles_by_method = {"GET": ALL_ROLES, "POST": ENGINEERS}

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(request, RunForm(), GateForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        if "candidate" in request.POST:
            return self._gate(request)
        form = RunForm(request.POST, request.FILES)
        if not form.is_valid():
            return self._render(request, form, GateForm(), status=400)
        telemetry = form.cleaned_data.get("telemetry")
        try:
            run = benchmark_run_import(
                files=[(f, f.name) for f in form.cleaned_data["file"]],
                format=form.cleaned_data["format"],
                meta=stated_meta(form.cleaned_data),
                name=form.cleaned_data["name"],
                user=request.user,
                telemetry=(telemetry, telemetry.name) if telemetry else None,
            )
        except RunRefused as exc:
            form.add_error("file" if exc.field not in form.fields else exc.field, str(exc))
            return self._render(request, form, GateForm(), status=400)
        points = run.points.count()
        shape = f"{points} points, " if points > 1 else ""
        messages.success(request, f"Imported run {run.pk} ({shape}{run.tool}, {run.model}).")
        return HttpResponseRedirect(reverse("benchmark-run", args=[run.pk]))

    def _gate(self, request: HttpRequest) -> HttpResponse:
        form = GateForm(request.POST)
        if not form.is_valid():
            return self._render(request, RunForm(), form, status=400)
        values = form.cleaned_data
        try:
            gate = gate_evaluate(
                baseline=values["baseline"],
                candidate=values["candidate"],
                mode=values["mode"],
                cold_start_seconds=values["cold_start_seconds"],
                traffic_csv=values["traffic_csv"],
                traffic_workload=values["traffic_workload"],
                slo_ttft_ms=values["slo_ttft_ms"],
                slo_tpot_ms=values["slo_tpot_ms"],
                tolerances=values["tolerances"] or None,
                recommendation=values["recommendation"],
                user=request.user,
            )
        except GateRefused as exc:
            # The page's fields: traffic_csv, traffic_workload, slo_*, tolerances, mode.
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            return self._render(request, RunForm(), form, status=400)
        except GateLinkRefused as exc:
            form.add_error("recommendation", str(exc))
            return self._render(request, RunForm(), form, status=409 if exc.conflict else 400)
        return HttpResponseRedirect(reverse("gate", args=[gate.pk]))

    def _render(
        self, request: HttpRequest, run_form: RunForm, gate_form: GateForm, status: int = 200
    ) -> HttpResponse:
        runs = list(
            BenchmarkRun.objects.select_related("upload").prefetch_related(
                Prefetch("points", queryset=BenchmarkPoint.objects.defer("artifact"))
            )[:200]
        )
        gates = list(Gate.objects.select_related("baseline", "candidate")[:50])
        context = {
            "runs": runs,
            "run_rows": [_run_row(run) for run in runs],
            "gates": gates,
            "gate_rows": [_gate_row(gate) for gate in gates],
            "run_form": run_form,
            "gate_form": gate_form,
            "can_write": self.may("POST"),
        }
        return render(request, self.template_name, context, status=status)


def _run_row(run: BenchmarkRun) -> dict[str, Any]:
    """A run in the list: its points, its peak (highest decode tok/s) point and failures."""
    points = list(run.points.all())
    peak: Mapping[str, Any] = max(
        (p.metrics for p in points),
        key=lambda m: m.get("decode_tokens_per_s") or 0,
        default={},
    )
    return {
        "run": run,
        "points": len(points),
        "peak": peak,
        "failures": _failures_text(p.metrics for p in points),
        "serving": _serving_text(run_fields(run)),
    }


def _failures_text(metrics: Iterable[Mapping[str, Any]]) -> str:
    """ "49 of 150 failed" over the points whose file counts both; "—" when none does."""
    failed = total = 0
    known = False
    for each in metrics:
        bad, good = each.get("failed_requests"), each.get("completed_requests")
        if bad is None or good is None:
            continue
        known = True
        failed += bad
        total += bad + good
    if not known:
        return formatting.DASH
    return f"{formatting.count(failed)} of {formatting.count(total)} failed"


def _serving_text(fields: RunFields) -> str:
    return "hosted" if fields.hosted else "self-hosted"


def _gate_row(gate: Gate) -> dict[str, Any]:
    costs = gate.result.get("cost_per_million_tokens") or {}
    return {
        "gate": gate,
        "costs": {side: _money_text(costs.get(side)) for side in SIDES},
    }


def _money_text(value: Any) -> str:
    try:
        return formatting.money_unit(value)
    except ValueError:
        return str(value)


# --- a run ----------------------------------------------------------------------------------


RUNS_WITH_FILES = BenchmarkRun.objects.select_related("upload", "telemetry_upload")


class RunDetailView(RoleRequiredMixin, View):
    template_name = "benchmarks/run_detail.html"
    roles_by_method = {"GET": ALL_ROLES, "POST": ENGINEERS}

    def get(self, request: HttpRequest, run_id: int) -> HttpResponse:
        run = get_object_or_404(RUNS_WITH_FILES, pk=run_id)
        return self._render(request, run, RunEditForm(run=run))

    def post(self, request: HttpRequest, run_id: int) -> HttpResponse:
        """Engineers complete a run's fields; the points' metrics are recomputed and the edit
        is in the audit trail (`benchmark_run_update`)."""
        run = get_object_or_404(RUNS_WITH_FILES, pk=run_id)
        form = RunEditForm(request.POST, run=run)
        if not form.is_valid():
            return self._render(request, run, form, status=400)
        before_fields, before_name = dict(run.fields), run.name
        try:
            updated = benchmark_run_update(
                run=run, changes=form.changes(), name=form.cleaned_data["name"], user=request.user
            )
        except RunRefused as exc:
            form.add_error(exc.field if exc.field in form.fields else None, str(exc))
            return self._render(request, run, form, status=400)
        messages.success(
            request, _update_message(updated, before_fields=before_fields, before_name=before_name)
        )
        return HttpResponseRedirect(reverse("benchmark-run", args=[run.pk]))

    def _render(
        self, request: HttpRequest, run: BenchmarkRun, form: RunEditForm, status: int = 200
    ) -> HttpResponse:
        fields = run_fields(run)
        priced = priced_fields(fields)
        points = list(run.points.defer("artifact").select_related("upload").order_by("index"))
        selected, point_error = _selected_point(points, request.GET)
        if point_error:
            status = 400
        context: dict[str, Any] = {
            "point_error": point_error,
            "run": run,
            "fields": fields,
            "serving": _serving_text(fields),
            "point_rows": [_point_row(run, p, priced, selected) for p in points],
            "failures": [s for p in points if (s := _failure_sentence(p))],
            "files": list({p.upload_id: p.upload for p in points}.values()) or [run.upload],
            "field_rows": _field_rows([run.fields]),
            "edit_form": form,
            "can_write": self.may("POST"),
        }
        if selected is not None:
            context.update(_selected_context(selected, priced))
        if len(points) > 1:
            context["curve_figure"] = charts.build_run_curve_figure(
                points=[
                    {
                        "label": p.label or curves.load_text(p.load, p.label, p.index),
                        "tpot_p95_ms": p.metrics.get("tpot_p95_ms"),
                        "decode_tokens_per_s": p.metrics.get("decode_tokens_per_s"),
                    }
                    for p in points
                ]
            )
        return render(request, self.template_name, context, status=status)


def _selected_point(
    points: Sequence[BenchmarkPoint], params: QueryParams
) -> tuple[BenchmarkPoint | None, str]:
    """The point `?point=<index>` names (the first when not given), and the sentence refusing a
    value that names no point of the run (the first point is shown then, with a 400)."""
    if not points:
        return None, ""
    try:
        wanted = int_param(params, "point", default=0, minimum=0, maximum=len(points) - 1)
    except ParameterError as exc:
        return points[0], f"{exc}; showing point 0 instead."
    return next(p for p in points if p.index == wanted), ""


def _point_row(
    run: BenchmarkRun, point: BenchmarkPoint, fields: RunFields, selected: BenchmarkPoint | None
) -> dict[str, Any]:
    metrics = point.metrics
    per_gpu_hour = (
        NOT_APPLICABLE
        if fields.hosted
        else metric_text("output_tokens_per_gpu_hour", metrics.get("output_tokens_per_gpu_hour"))
    )
    return {
        "index": point.index,
        "label": point.label or f"point {point.index + 1}",
        "url": f"{reverse('benchmark-run', args=[run.pk])}?point={point.index}",
        "selected": selected is not None and point.pk == selected.pk,
        "load": curves.load_text(point.load, "", point.index) if point.load else "not recorded",
        "input_len": formatting.count(point.input_len),
        "output_len": formatting.count(point.output_len),
        "completed": formatting.count(metrics.get("completed_requests")),
        "failed": formatting.count(metrics.get("failed_requests")),
        "error_rate": metric_text("error_rate_pct", metrics.get("error_rate_pct")),
        "decode": metric_text("decode_tokens_per_s", metrics.get("decode_tokens_per_s")),
        "ttft": metric_text("ttft_p95_ms", metrics.get("ttft_p95_ms")),
        "tpot": metric_text("tpot_p95_ms", metrics.get("tpot_p95_ms")),
        "per_gpu_hour": per_gpu_hour,
        "cost": _money_text(point_usd_per_million(fields, metrics_from_json(metrics))),
    }


def _failure_sentence(point: BenchmarkPoint) -> str:
    """ "49 of 150 requests failed at concurrency 4 (32.7 %)", or "" when none failed."""
    failed = point.metrics.get("failed_requests")
    completed = point.metrics.get("completed_requests")
    if not failed or completed is None:
        return ""
    total = failed + completed
    where = curves.load_text(point.load, point.label, point.index)
    return (
        f"{formatting.count(failed)} of {formatting.count(total)} requests failed at {where} "
        f"({formatting.percent(failed / total * 100)})"
    )


def _selected_context(point: BenchmarkPoint, fields: RunFields) -> dict[str, Any]:
    """The selected point's metric rows, cost and charts (its artifact is read here only)."""
    artifact = (
        BenchmarkPoint.objects.filter(pk=point.pk).values_list("artifact", flat=True).first()
    ) or {}
    metrics = metrics_from_json(point.metrics)
    context: dict[str, Any] = {
        "selected": point,
        "selected_where": curves.load_text(point.load, point.label, point.index),
        "metric_rows": _metric_rows(point.metrics),
        "usd_per_million": point_usd_per_million(fields, metrics),
    }
    stored = artifact_from_json(artifact) if artifact else None
    per_request = stored.per_request if stored is not None else None
    if per_request is not None and per_request.ttft_ms and per_request.latency_ms:
        context["distribution_figure"] = charts.build_latency_distribution_figure(
            ttft_ms=per_request.ttft_ms, tpot_ms=tpot_per_request(per_request)
        )
    spread = timeline(stored) if stored is not None else None
    if spread is not None:
        context["timeline_figure"] = charts.build_throughput_timeline_figure(
            seconds=spread.bucket_start_s, tokens_per_s=spread.output_tokens_per_s
        )
    telemetry = artifact.get("telemetry") or []
    if telemetry:
        start = min(s["timestamp_s"] for s in telemetry)
        context["telemetry_figure"] = charts.build_telemetry_figure(
            seconds=[s["timestamp_s"] - start for s in telemetry],
            utilization=[s.get("utilization_pct") for s in telemetry],
            power=[s.get("power_w") for s in telemetry],
        )
    return context


def _field_rows(sides: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Run fields with their labels, in the labels' order, one value per side given; a field
    no side states is left out."""
    rows = []
    for key in RUN_FIELD_LABELS:
        values = [side.get(key) for side in sides]
        if all(v in (None, "") for v in values):
            continue
        texts = [_field_text(key, v) for v in values]
        rows.append(
            {"key": key, "label": field_label(key), "values": texts, "differ": len(set(texts)) > 1}
        )
    return rows


def _field_text(key: str, value: Any) -> str:
    if value in (None, ""):
        return formatting.DASH
    if key.startswith("usd_per_"):
        return _money_text(value)
    return str(value)


def _update_message(
    run: BenchmarkRun, *, before_fields: Mapping[str, Any], before_name: str
) -> str:
    """ "Run 4 updated: quantization → int4, accelerators per replica → 4" (what changed)."""
    parts = []
    if run.name != before_name:
        parts.append(f"name → {run.name}")
    for key in EDITABLE_KEYS:
        old, new = before_fields.get(key), run.fields.get(key)
        if old != new:
            shown = "(cleared)" if new in (None, "") else str(new)
            parts.append(f"{RUN_FIELD_LABELS.get(key, key)} → {shown}")
    if not parts:
        return f"Run {run.pk}: nothing changed."
    return f"Run {run.pk} updated: {', '.join(parts)}"


# The run page's metric rows, in order, named by `benchmarks_app.metrics.METRIC_LABELS` (the one
# table of metric names); mean power per GPU shows only through tokens per joule.
RUN_PAGE_METRICS = (
    "ttft_p50_ms",
    "ttft_p95_ms",
    "tpot_p50_ms",
    "tpot_p95_ms",
    "itl_p95_ms",
    "e2e_p95_ms",
    "decode_tokens_per_s",
    "per_user_decode_tokens_per_s",
    "error_rate_pct",
    "output_tokens_per_gpu_hour",
    "gpu_utilization_pct",
    "tokens_per_joule",
)


def metric_text(metric: str, value: Any) -> str:
    """A benchmark metric as it reads: latencies as durations (``850 ms``, ``1.25 s``), the
    cost per 1M tokens as a price, utilisation as a percentage, rates with separators. A value
    that is not a number is shown as it is."""
    try:
        return _metric_text(metric, value)
    except ValueError:
        return str(value)


def _metric_text(metric: str, value: Any) -> str:
    if metric.endswith("_ms"):
        return formatting.duration(value)
    if metric == gating.COST_METRIC:
        return formatting.money_unit(value)
    if metric.endswith("_pct"):
        return formatting.percent(value)
    if metric == "output_tokens_per_gpu_hour":
        return formatting.count(value)
    if metric == "tokens_per_joule":
        return formatting.number(value, 2)
    return formatting.number(value, 1)


# Where a figure the metrics do not source themselves comes from, or why it is missing.
DERIVED_SOURCES = {"error_rate_pct": "failed / (completed + failed) requests"}
DERIVED_MISSING = {"error_rate_pct": "error rate: the file does not count failed requests"}


def _metric_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    sources = {**DERIVED_SOURCES, **(metrics.get("sources") or {})}
    missing = {**DERIVED_MISSING, **(metrics.get("missing") or {})}
    not_applicable = set(metrics.get("not_applicable") or ())
    rows = []
    for key in RUN_PAGE_METRICS:
        applicable = key not in not_applicable
        rows.append(
            {
                "label": _sentence_case(METRIC_LABELS[key]),
                "value": metrics.get(key),
                "text": metric_text(key, metrics.get(key)) if applicable else NOT_APPLICABLE,
                "source": sources.get(key, "") if applicable else "a hosted API",
                "missing": page_sentence(missing.get(key, "")) if applicable else "",
                "applicable": applicable,
            }
        )
    return rows


def _sentence_case(label: str) -> str:
    return label[:1].upper() + label[1:]  # "p95 TTFT" -> "P95 TTFT", never "P95 ttft"


# --- a gate ---------------------------------------------------------------------------------


def _check_rows(checks: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The gate's checks with a readable label, values in their units and the signed change
    (the error rate's in percentage points)."""
    return [
        {
            **check,
            "label": _sentence_case(gating.LABELS.get(check["metric"], check["metric"])),
            "baseline_text": metric_text(check["metric"], check.get("baseline")),
            "candidate_text": metric_text(check["metric"], check.get("candidate")),
            "change_text": _change_text(check),
            "tolerance_text": tolerance_text(check),
        }
        for check in checks
    ]


def tolerance_text(check: Mapping[str, Any]) -> str:
    """The regression the gate allowed this check, in the change's unit: ``5.0 %`` or, for a
    metric compared in percentage points, ``1.0 pts``; a dash for a gate recorded without."""
    allowed = check.get("allowed")
    if allowed is None:
        return formatting.DASH
    if check.get("metric") in gating.POINTS_METRICS:
        return f"{formatting.number(allowed, 1)} pts"
    return formatting.percent(allowed)


def _change_text(check: Mapping[str, Any]) -> str:
    points = check.get("delta_points")
    if check.get("metric") in gating.POINTS_METRICS and points is not None:
        rounded = formatting.number(abs(points), 1)
        sign = "" if rounded == "0.0" else ("+" if points > 0 else formatting.MINUS)
        return f"{sign}{rounded} pts"
    try:
        return formatting.percent_change(check.get("delta_pct"))
    except ValueError:
        return str(check.get("delta_pct"))


def _point_groups(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The checks grouped by where they were made: each matched point (its label and load),
    then the SLO's cost check at the operating points. A gate recorded before runs were curves
    has only `checks`: they are grouped by their `point`."""
    groups = []
    if result.get("points"):
        for point in result["points"]:
            where, label = str(point.get("where") or ""), str(point.get("label") or "")
            groups.append(
                {
                    "where": where,
                    # The tool's own name for the point, when it says more than the load.
                    "label": "" if label.casefold() in where.casefold() else label,
                    "checks": _check_rows(point.get("checks") or []),
                }
            )
        where = "the operating point"
        extra = [c for c in result.get("checks") or [] if c.get("point") == where]
        if extra:
            groups.append({"where": where, "label": "", "checks": _check_rows(extra)})
        return groups
    by_point: dict[str, list[Mapping[str, Any]]] = {}
    for check in result.get("checks") or []:
        by_point.setdefault(check.get("point") or "", []).append(check)
    return [
        {"where": where, "label": "", "checks": _check_rows(checks)}
        for where, checks in by_point.items()
    ]


def _slo_text(slo: Mapping[str, Any] | None) -> str:
    """ "p95 TTFT ≤ 500 ms and p95 TPOT ≤ 50 ms", or "" without an SLO."""
    parts = []
    for key, name in (("ttft_ms", "p95 TTFT"), ("tpot_ms", "p95 TPOT")):
        value = (slo or {}).get(key)
        if value is not None:
            parts.append(f"{name} ≤ {float(value):g} ms")
    return " and ".join(parts)


def _operating_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    operating = result.get("operating_point") or {}
    rows = []
    for side in SIDES:
        point = operating.get(side)
        if not point:
            rows.append({"side": side, "point": None})
            continue
        rows.append(
            {
                "side": side,
                "point": _point_name(point),
                "tokens": metric_text("decode_tokens_per_s", point.get("output_tokens_per_s")),
                "ttft": metric_text("ttft_p95_ms", point.get("ttft_p95_ms")),
                "tpot": metric_text("tpot_p95_ms", point.get("tpot_p95_ms")),
                "cost": _money_text(point.get("cost_per_million_tokens")),
            }
        )
    return rows


def _point_name(point: Mapping[str, Any]) -> str:
    """A recorded point as "concurrency 4", or "sweep 3 (concurrency 4)" when the tool's label
    says more than the load."""
    index = point.get("index") or 0
    label = str(point.get("label") or "")
    where = curves.load_text(point.get("load"), label, index)
    if not label or label.casefold() in where.casefold():
        return where
    return f"{label} ({where})"


def _unmatched_rows(result: Mapping[str, Any]) -> list[str]:
    """ "Baseline point 3 (concurrency 128, input 1,024 / output 128): no candidate point at
    the same load and lengths." """
    other = {"baseline": "candidate", "candidate": "baseline"}
    rows = []
    for point in result.get("unmatched") or []:
        side = point.get("side", "")
        where = curves.load_text(
            point.get("load"), point.get("label") or "", point.get("index") or 0
        )
        lengths = [
            f"{name} {formatting.count(point[key])}"
            for key, name in (("input_len", "input"), ("output_len", "output"))
            if point.get(key) is not None
        ]
        if lengths:
            where += f", {' / '.join(lengths)}"
        label = str(point.get("label") or "")
        label = f" “{label}”" if label and label.casefold() not in where.casefold() else ""
        rows.append(
            f"{side.capitalize()} point {(point.get('index') or 0) + 1}{label} ({where}): no "
            f"{other.get(side, 'other')} point at the same load and lengths."
        )
    return rows


def _pareto_summary(slo: Mapping[str, Any] | None) -> str:
    summary = "up and to the right is better; stars mark the operating points"
    if (slo or {}).get("tpot_ms") is not None:
        summary += "; right of the dashed SLO line, each user gets a p95 TPOT within the limit"
    return summary


def _cold_start_text(seconds: Any) -> str:
    try:
        value = formatting.to_decimal(seconds)
    except ValueError:
        return str(seconds)
    return formatting.duration(None if value is None else value * 1000)


class GateView(RoleRequiredMixin, View):
    template_name = "benchmarks/gate.html"

    def get(self, request: HttpRequest, gate_id: int) -> HttpResponse:
        gate = get_object_or_404(
            Gate.objects.select_related("baseline", "candidate", "created_by"), pk=gate_id
        )
        result, inputs = gate.result, gate.inputs
        used = inputs.get("fields") or {}
        serving = result.get("serving") or {}
        context = {
            "gate": gate,
            "checks": _check_rows(result.get("checks") or []),
            "point_groups": _point_groups(result),
            "operating_rows": _operating_rows(result),
            "slo_text": _slo_text(result.get("slo")),
            "unmatched": _unmatched_rows(result),
            "field_rows": _field_rows([used.get(side) or {} for side in SIDES]) if used else [],
            "prices": [(side, text) for side, text in (inputs.get("prices") or {}).items()],
            "serving": [(side, serving[side]) for side in SIDES if side in serving],
            "cold_start": _cold_start_text(inputs.get("cold_start_seconds")),
            "cost_figure": charts.build_cost_by_mode_figure(
                cost_by_mode=result.get("cost_by_mode") or {}
            ),
            "pareto_figure": charts.build_pareto_figure(
                curves=result.get("curves") or {}, slo=result.get("slo"), serving=serving
            ),
            "pareto_summary": _pareto_summary(result.get("slo")),
            "missing": [page_sentence(m) for m in result.get("missing") or []],
        }
        return render(request, self.template_name, context)


def page_sentence(sentence: str) -> str:
    """A run's or a gate's sentence as the page says it: the command line's
    `(--meta-candidate num_gpus=8)` becomes the run page's field,
    `(“Accelerators per replica” on the run page)`."""

    def fields(match: re.Match[str]) -> str:
        labels = [f"“{field_label(key)}”" for key in META_KEY.findall(match.group(1))]
        return f"({' and '.join(labels)} on the run page)"

    return META_FLAGS.sub(fields, sentence)
