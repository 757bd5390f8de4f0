"""Benchmark pages: runs (list, import, detail) and gates (create, verdict)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.views import View
from django.views.generic import TemplateView

from audit_app.access.permissions import Role, RoleRequiredMixin, has_role
from audit_app.costs.costing import Deployment, busy_only_usd_per_million
from audit_app.lib import formatting
from benchmarks_app import charts, gating
from benchmarks_app.forms import GateForm, RunForm, stated_meta
from benchmarks_app.metrics import METRIC_LABELS
from benchmarks_app.models import BenchmarkPoint, BenchmarkRun, Gate
from benchmarks_app.services import (
    GateLinkRefused,
    GateRefused,
    RunRefused,
    benchmark_run_import,
    gate_evaluate,
)


def usd_per_million(run: BenchmarkRun) -> Decimal | None:
    """Busy-only cost per 1M output tokens of a run's first point (its own price and
    accelerators)."""
    first = run.points.defer("artifact").first()
    tokens = first.metrics.get("decode_tokens_per_s") if first is not None else None
    price, gpus = run.fields.get("usd_per_gpu_hour"), run.fields.get("num_gpus")
    if not tokens or not price or not gpus:
        return None
    return busy_only_usd_per_million(
        Deployment(
            tokens_per_second=float(tokens),
            accelerators_per_replica=int(gpus),
            usd_per_accelerator_hour=Decimal(str(price)),
        )
    )


class BenchmarkListView(RoleRequiredMixin, View):
    template_name = "benchmarks/benchmarks.html"

    def get(self, request: HttpRequest) -> HttpResponse:
        return self._render(request, RunForm(), GateForm())

    def post(self, request: HttpRequest) -> HttpResponse:
        if not has_role(request.user, [Role.ENGINEER]):
            return render(
                request,
                "403.html",
                {"exception": "Only engineers import runs and create gates."},
                status=403,
            )
        if "candidate" in request.POST:
            return self._gate(request)
        form = RunForm(request.POST, request.FILES)
        if not form.is_valid():
            return self._render(request, form, GateForm(), status=400)
        telemetry = form.cleaned_data.get("telemetry")
        try:
            run = benchmark_run_import(
                source=form.cleaned_data["file"],
                filename=form.cleaned_data["file"].name,
                format=form.cleaned_data["format"],
                meta=stated_meta(form.cleaned_data),
                name=form.cleaned_data["name"],
                user=request.user,
                telemetry=(telemetry, telemetry.name) if telemetry else None,
            )
        except RunRefused as exc:
            form.add_error("file" if exc.field not in form.fields else exc.field, str(exc))
            return self._render(request, form, GateForm(), status=400)
        messages.success(request, f"Imported run {run.pk} ({run.tool}, {run.model}).")
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
                recommendation=values["recommendation"],
                user=request.user,
            )
        except GateRefused as exc:
            form.add_error(exc.field, str(exc))  # the page's fields: traffic_csv, traffic_workload
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
        for run in runs:
            points = list(run.points.all())
            run.point_count = len(points)  # type: ignore[attr-defined]
            # The headline point: the highest-throughput one (a single point's own).
            run.headline = max(  # type: ignore[attr-defined]
                (p.metrics for p in points),
                key=lambda m: m.get("decode_tokens_per_s") or 0,
                default={},
            )
        context = {
            "runs": runs,
            "gates": Gate.objects.select_related("baseline", "candidate")[:50],
            "run_form": run_form,
            "gate_form": gate_form,
            "can_write": has_role(request.user, [Role.ENGINEER]),
        }
        return render(request, self.template_name, context, status=status)


class RunDetailView(RoleRequiredMixin, TemplateView):
    template_name = "benchmarks/run_detail.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        run = get_object_or_404(BenchmarkRun.objects.select_related("upload"), pk=kwargs["run_id"])
        point = run.points.first()
        artifact = point.artifact if point is not None else {}
        per_request = artifact.get("per_request") or {}
        context.update(
            run=run,
            usd_per_million=usd_per_million(run),
            metric_rows=_metric_rows(point.metrics if point is not None else {}),
        )
        if per_request.get("ttft_ms") and per_request.get("latency_ms"):
            tpot = [
                (e - t) / (n - 1)
                for t, e, n in zip(
                    per_request["ttft_ms"],
                    per_request["latency_ms"],
                    per_request.get("output_tokens") or [],
                    strict=False,
                )
                if n and n > 1
            ]
            context["distribution_figure"] = charts.build_latency_distribution_figure(
                ttft_ms=per_request["ttft_ms"], tpot_ms=tpot
            )
        if per_request.get("start_s") and per_request.get("latency_ms"):
            context["timeline_figure"] = _timeline(per_request)
        telemetry = artifact.get("telemetry") or []
        if telemetry:
            start = min(s["timestamp_s"] for s in telemetry)
            context["telemetry_figure"] = charts.build_telemetry_figure(
                seconds=[s["timestamp_s"] - start for s in telemetry],
                utilization=[s.get("utilization_pct") for s in telemetry],
                power=[s.get("power_w") for s in telemetry],
            )
        return context


def _timeline(per_request: dict[str, Any]) -> dict[str, Any]:
    """Output tokens/s per second of the run, each request's tokens spread over its duration."""
    buckets: dict[int, float] = {}
    for start, latency, tokens in zip(
        per_request["start_s"],
        per_request["latency_ms"],
        per_request.get("output_tokens") or [],
        strict=False,
    ):
        duration = max(latency / 1000, 1e-3)
        first, last = int(start), int(start + duration)
        for second in range(first, last + 1):
            overlap = min(second + 1, start + duration) - max(second, start)
            if overlap > 0:
                buckets[second] = buckets.get(second, 0.0) + tokens * overlap / duration
    seconds = sorted(buckets)
    return charts.build_throughput_timeline_figure(
        seconds=seconds, tokens_per_s=[buckets[s] for s in seconds]
    )


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


def _metric_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    sources = metrics.get("sources") or {}
    missing = metrics.get("missing") or {}
    return [
        {
            "label": _sentence_case(METRIC_LABELS[key]),
            "value": metrics.get(key),
            "text": metric_text(key, metrics.get(key)),
            "source": sources.get(key, ""),
            "missing": missing.get(key, ""),
        }
        for key in RUN_PAGE_METRICS
    ]


def _sentence_case(label: str) -> str:
    return label[:1].upper() + label[1:]  # "p95 TTFT" -> "P95 TTFT", never "P95 ttft"


def _check_rows(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The gate's checks with a readable label and values in their units."""
    return [
        {
            **check,
            "label": _sentence_case(gating.LABELS.get(check["metric"], check["metric"])),
            "baseline_text": metric_text(check["metric"], check.get("baseline")),
            "candidate_text": metric_text(check["metric"], check.get("candidate")),
        }
        for check in checks
    ]


def _cold_start_text(seconds: Any) -> str:
    try:
        value = formatting.to_decimal(seconds)
    except ValueError:
        return str(seconds)
    return formatting.duration(None if value is None else value * 1000)


class GateView(RoleRequiredMixin, TemplateView):
    template_name = "benchmarks/gate.html"

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        gate = get_object_or_404(
            Gate.objects.select_related("baseline", "candidate"), pk=kwargs["gate_id"]
        )
        same_model = BenchmarkRun.objects.filter(model=gate.baseline.model)
        points = [
            {
                "label": f"run {r.pk}",
                "tpot_p95_ms": next((p.metrics for p in r.points.defer("artifact")[:1]), {}).get(
                    "tpot_p95_ms"
                ),
                "usd_per_million": usd_per_million(r),
            }
            for r in same_model
        ]
        context.update(
            gate=gate,
            checks=_check_rows(gate.result.get("checks") or []),
            cold_start=_cold_start_text(gate.inputs.get("cold_start_seconds")),
            cost_figure=charts.build_cost_by_mode_figure(
                cost_by_mode=gate.result.get("cost_by_mode") or {}
            ),
            scatter_figure=charts.build_cost_vs_tpot_figure(
                points=[
                    p
                    for p in points
                    if p["usd_per_million"] is not None and p["tpot_p95_ms"] is not None
                ]
            ),
        )
        return context
