"""Data kept by the audit app: uploads and API tokens.

Models hold data and small invariants; writes go through ``services``.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class Upload(models.Model):
    """One file a user gave us, kept as-is until the upload is deleted."""

    class Kind(models.TextChoices):
        TOKEN_LOG = "token_log", "Token / request log"
        BILLING = "billing", "Billing export"
        BENCHMARK = "benchmark", "Benchmark artifact"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    format = models.CharField(max_length=32, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    file = models.FileField(upload_to="uploads/%Y/%m/%d/")
    original_name = models.CharField(max_length=255)
    size_bytes = models.BigIntegerField(default=0)
    sha256 = models.CharField(max_length=64, unique=True)
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="uploads"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    bytes_read = models.BigIntegerField(default=0)
    rows_read = models.BigIntegerField(default=0)
    rows_accepted = models.BigIntegerField(default=0)
    rows_rejected = models.BigIntegerField(default=0)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.original_name} ({self.get_kind_display()}, {self.status})"

    @property
    def progress_percent(self) -> int:
        if self.status == self.Status.SUCCEEDED:
            return 100
        if not self.size_bytes:
            return 0
        return min(100, int(self.bytes_read * 100 / self.size_bytes))


class ApiToken(models.Model):
    """An API token. Only its SHA-256 is stored: a leaked database leaks no usable token."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=12, help_text="First characters, to tell tokens apart.")
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"
