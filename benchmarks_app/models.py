"""Benchmark runs and gates."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from audit_app.models import Recommendation, Upload


class BenchmarkRun(models.Model):
    """One benchmark run: a curve of load points (`BenchmarkPoint`) from one or more artifact
    files (vLLM, GuideLLM, AIPerf, LLMPerf, …) of one model, with the run fields no tool records.

    The fields can be completed after import (each edit is in the audit trail, and the points'
    metrics are recomputed); a gate records the values it used, so an edit never changes a
    recorded verdict."""

    # The first file of the run; one artifact file can back several runs (the same result with
    # different run fields). Every file's points name their own upload.
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="benchmark_runs")
    telemetry_upload = models.ForeignKey(
        Upload, null=True, blank=True, on_delete=models.SET_NULL, related_name="telemetry_for"
    )
    name = models.CharField(max_length=200)
    tool = models.CharField(max_length=32)
    model = models.CharField(max_length=300)
    fields = models.JSONField(default=dict)  # RunFields, as given (form / --meta / metadata)
    assumptions = models.JSONField(default=list)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.name} ({self.tool}, {self.model})"


class BenchmarkPoint(models.Model):
    """One measured load point of a run: its load, configured lengths, artifact and metrics."""

    run = models.ForeignKey(BenchmarkRun, on_delete=models.CASCADE, related_name="points")
    index = models.PositiveIntegerField()  # position in the run, from 0
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="benchmark_points")
    label = models.CharField(max_length=200, blank=True)
    load = models.JSONField(null=True, blank=True)  # curves.Load.as_json(); null = not recorded
    input_len = models.PositiveIntegerField(null=True, blank=True)
    output_len = models.PositiveIntegerField(null=True, blank=True)
    dataset = models.CharField(max_length=200, blank=True)
    artifact = models.JSONField(default=dict)  # BenchmarkArtifact of this point, as stored
    metrics = models.JSONField(default=dict)  # RunMetrics

    class Meta:
        ordering = ["run", "index"]
        constraints = [
            models.UniqueConstraint(fields=["run", "index"], name="benchmark_point_run_index")
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} point {self.index + 1}: {self.label}"


class Gate(models.Model):
    """An immutable comparison of a candidate run with a baseline: inputs, artifact hashes,
    outputs, who and when. Never edited; a new comparison is a new gate."""

    class Verdict(models.TextChoices):
        PASS = "pass", "Pass"
        FAIL = "fail", "Fail"
        INVALID = "invalid", "Invalid"
        INCOMPLETE = "incomplete", "Incomplete"

    # A run compared in a gate is kept, and so is its upload: `audit_app` finds these gates
    # through the reverse relations to refuse deleting it (`upload_gate_uses`).
    baseline = models.ForeignKey(
        BenchmarkRun, on_delete=models.PROTECT, related_name="gates_as_baseline"
    )
    candidate = models.ForeignKey(
        BenchmarkRun, on_delete=models.PROTECT, related_name="gates_as_candidate"
    )
    baseline_sha256 = models.CharField(max_length=64)
    candidate_sha256 = models.CharField(max_length=64)
    # mode, cold start, traffic, tolerances, slo, and the run fields used on each side
    inputs = models.JSONField(default=dict)
    verdict = models.CharField(max_length=16, choices=Verdict.choices)
    result = models.JSONField(default=dict)  # checks, confounders, missing, costs, summary
    recommendation = models.ForeignKey(
        Recommendation, null=True, blank=True, on_delete=models.SET_NULL, related_name="gates"
    )
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"gate {self.pk}: {self.verdict}"
