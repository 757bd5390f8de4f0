"""Benchmark runs and gates API."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from django.http import QueryDict
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, JSONParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from audit_app.access.permissions import ALL_ROLES, Role, RolesByMethod
from audit_app.api.pagination import PAGE_PARAMETERS, PageOutput, paginate
from audit_app.ingestion.formats import BENCHMARK_FORMATS
from audit_app.models import Recommendation
from benchmarks_app.forms import EDITABLE_KEYS, SCALING_MODES, stated_meta
from benchmarks_app.models import BenchmarkPoint, BenchmarkRun, Gate
from benchmarks_app.runs import benchmark_run_update, run_points
from benchmarks_app.services import (
    benchmark_run_import,
    gate_evaluate,
)

# Every role reads runs and gates; engineers import and complete runs and create gates.
RUN_WRITERS = frozenset({Role.ENGINEER})
RUN_ROLES: RolesByMethod = {"GET": ALL_ROLES, "POST": RUN_WRITERS, "PATCH": RUN_WRITERS}


class RunInput(serializers.Serializer):
    file = serializers.FileField(
        help_text="One result file, or several parts named `file` imported as one curve."
    )
    telemetry = serializers.FileField(required=False)
    format = serializers.ChoiceField(choices=BENCHMARK_FORMATS, default="auto")
    name = serializers.CharField(required=False, allow_blank=True, default="")


class PointOutput(serializers.ModelSerializer):
    file = serializers.CharField(source="upload.original_name")
    sha256 = serializers.CharField(source="upload.sha256")

    class Meta:
        model = BenchmarkPoint
        fields = [
            "index",
            "label",
            "load",
            "input_len",
            "output_len",
            "dataset",
            "file",
            "sha256",
            "metrics",
        ]


class RunOutput(serializers.ModelSerializer):
    sha256 = serializers.CharField(source="upload.sha256")
    points = serializers.SerializerMethodField()
    metrics = serializers.SerializerMethodField(
        help_text="The first point's metrics (a single-point run's)."
    )
    failed_requests = serializers.SerializerMethodField(
        help_text="Failed requests over all points; null when no file says."
    )

    class Meta:
        model = BenchmarkRun
        fields = [
            "id",
            "name",
            "tool",
            "model",
            "fields",
            "metrics",
            "points",
            "failed_requests",
            "assumptions",
            "sha256",
            "created_at",
        ]

    def _points(self, run: BenchmarkRun) -> list[BenchmarkPoint]:
        cache = getattr(run, "_points_cache", None)
        if cache is None:
            cache = run_points(run)
            run._points_cache = cache  # type: ignore[attr-defined]
        return cache

    @extend_schema_field(PointOutput(many=True))
    def get_points(self, run: BenchmarkRun) -> list[dict[str, Any]]:
        return list(PointOutput(self._points(run), many=True).data)

    @extend_schema_field(serializers.DictField())
    def get_metrics(self, run: BenchmarkRun) -> dict[str, Any]:
        points = self._points(run)
        return dict(points[0].metrics) if points else {}

    @extend_schema_field(serializers.IntegerField(allow_null=True))
    def get_failed_requests(self, run: BenchmarkRun) -> int | None:
        counts = [p.metrics.get("failed_requests") for p in self._points(run)]
        known = [c for c in counts if c is not None]
        return sum(known) if known else None


class RunPageOutput(PageOutput):
    results = RunOutput(many=True)


class RunListCreateApi(APIView):
    """List runs, or import one (multipart: file, optional telemetry, format, name and any
    run field: model_hash, quantization, batch_size, num_gpus, usd_per_gpu_hour, ...)."""

    roles_by_method = RUN_ROLES
    parser_classes = [MultiPartParser, FormParser]

    @extend_schema(
        parameters=PAGE_PARAMETERS, responses=RunPageOutput, operation_id="v1_benchmark_runs_list"
    )
    def get(self, request: Request) -> Response:
        page = paginate(BenchmarkRun.objects.select_related("upload"), request)
        return Response(RunPageOutput(page.envelope(page.items)).data)

    @extend_schema(request={"multipart/form-data": RunInput}, responses={201: RunOutput})
    def post(self, request: Request) -> Response:
        files = request.FILES.getlist("file")
        if not files:
            raise ValidationError({"file": ["No file was submitted."]})
        for file in files:
            # Each part is checked as the one `file` would be (empty, nameless, too long).
            form: dict[str, Any] = {
                k: v
                for k, v in cast(QueryDict, request.data).dict().items()
                if k not in ("file", "telemetry")
            }
            form["file"] = file
            if "telemetry" in request.FILES:
                form["telemetry"] = request.FILES["telemetry"]
            checked = RunInput(data=form)
            if not checked.is_valid():
                errors = dict(checked.errors)
                if "file" in errors and len(files) > 1:
                    errors["file"] = [f"{file.name}: {e}" for e in errors["file"]]
                raise ValidationError(errors)
        data = checked
        telemetry = data.validated_data.get("telemetry")
        run = benchmark_run_import(
            files=[(file, file.name) for file in files],
            format=data.validated_data["format"],
            # The parsers are multipart and form only: the data is a QueryDict.
            meta=stated_meta(cast(QueryDict, request.data)),
            name=data.validated_data["name"],
            user=request.user,
            telemetry=(telemetry, telemetry.name) if telemetry else None,
        )
        return Response(RunOutput(run).data, status=status.HTTP_201_CREATED)


class RunDetailApi(APIView):
    """Read a run; PATCH completes its fields (engineers; recorded in the audit trail)."""

    roles_by_method = RUN_ROLES
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(responses=RunOutput)
    def get(self, request: Request, run_id: int) -> Response:
        return Response(RunOutput(get_object_or_404(BenchmarkRun, pk=run_id)).data)

    @extend_schema(
        request={
            "application/json": {"type": "object", "additionalProperties": {"type": "string"}}
        },
        responses=RunOutput,
        description="Set run fields by name (quantization, num_gpus, usd_per_gpu_hour, serving, "
        "provider, usd_per_million_input, …; an empty string clears one) and / or `name`.",
    )
    def patch(self, request: Request, run_id: int) -> Response:
        run = get_object_or_404(BenchmarkRun, pk=run_id)
        data = request.data
        if not isinstance(data, Mapping):
            raise ValidationError({"fields": ["send a JSON object of run fields"]})
        values = {str(k): data[k] for k in data}
        unknown = sorted(set(values) - set(EDITABLE_KEYS) - {"name"})
        if unknown:
            raise ValidationError(
                {unknown[0]: [f"not a run field; known: name, {', '.join(EDITABLE_KEYS)}"]}
            )
        if not values:
            raise ValidationError({"fields": ["give the run fields to set, or a name"]})
        for key, value in values.items():
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise ValidationError({key: [f"expected text or a number, got {value!r}"]})
        name = values.pop("name", None)
        updated = benchmark_run_update(
            run=run,
            changes={k: str(v) for k, v in values.items()},
            name=None if name is None else str(name),
            user=request.user,
        )
        return Response(RunOutput(updated).data)


class GateInput(serializers.Serializer):
    baseline = serializers.IntegerField()
    candidate = serializers.IntegerField()
    mode = serializers.ChoiceField(choices=SCALING_MODES, default=SCALING_MODES[0])
    cold_start_seconds = serializers.FloatField(default=0.0, min_value=0)
    traffic_csv = serializers.CharField(required=False, allow_blank=True, default="")
    traffic_workload = serializers.CharField(required=False, allow_blank=True, default="")
    recommendation = serializers.IntegerField(required=False)
    tolerances = serializers.DictField(child=serializers.FloatField(min_value=0), required=False)
    slo_ttft_ms = serializers.FloatField(
        required=False, min_value=0, help_text="p95 TTFT limit of the operating point (ms)."
    )
    slo_tpot_ms = serializers.FloatField(
        required=False, min_value=0, help_text="p95 TPOT limit of the operating point (ms)."
    )


class GateOutput(serializers.ModelSerializer):
    class Meta:
        model = Gate
        fields = [
            "id",
            "baseline",
            "candidate",
            "baseline_sha256",
            "candidate_sha256",
            "inputs",
            "verdict",
            "result",
            "recommendation",
            "created_at",
        ]


class GatePageOutput(PageOutput):
    results = GateOutput(many=True)


class GateCreateApi(APIView):
    """Compare a candidate run with a baseline; the verdict is recorded for good."""

    roles_by_method = RUN_ROLES
    parser_classes = [JSONParser, FormParser, MultiPartParser]

    @extend_schema(
        parameters=PAGE_PARAMETERS, responses=GatePageOutput, operation_id="v1_gates_list"
    )
    def get(self, request: Request) -> Response:
        page = paginate(Gate.objects.all(), request)
        return Response(GatePageOutput(page.envelope(page.items)).data)

    @extend_schema(
        request=GateInput,
        responses={
            201: GateOutput,
            400: OpenApiResponse(
                description="Bad input, or the runs do not match the recommendation (the gate "
                "is recorded, unlinked; its id is in `gate`)."
            ),
            409: OpenApiResponse(
                description="The recommendation is not approved for a pilot "
                "(the gate is recorded, unlinked; its id is in `gate`)."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        data = GateInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        runs: dict[str, BenchmarkRun] = {}
        for side in ("baseline", "candidate"):
            run = BenchmarkRun.objects.filter(pk=values[side]).first()
            if run is None:
                raise ValidationError({side: [f"no benchmark run with id {values[side]}"]})
            runs[side] = run
        recommendation = None
        if values.get("recommendation"):
            recommendation = Recommendation.objects.filter(pk=values["recommendation"]).first()
            if recommendation is None:
                raise ValidationError(
                    {"recommendation": [f"no recommendation with id {values['recommendation']}"]}
                )
        # GateLinkRefused: 409 when the recommendation's status refuses the link, 400 when the
        # runs do not match it, with the recommendation, each mismatch and the gate recorded.
        gate = gate_evaluate(
            baseline=runs["baseline"],
            candidate=runs["candidate"],
            mode=values["mode"],
            cold_start_seconds=values["cold_start_seconds"],
            traffic_csv=values["traffic_csv"],
            traffic_workload=values["traffic_workload"],
            tolerances=values.get("tolerances"),
            slo_ttft_ms=values.get("slo_ttft_ms"),
            slo_tpot_ms=values.get("slo_tpot_ms"),
            recommendation=recommendation,
            user=request.user,
        )
        return Response(GateOutput(gate).data, status=status.HTTP_201_CREATED)


class GateDetailApi(APIView):
    @extend_schema(responses=GateOutput)
    def get(self, request: Request, gate_id: int) -> Response:
        return Response(GateOutput(get_object_or_404(Gate, pk=gate_id)).data)
