"""Data kept by the audit app: its database schema, table by table.

One concern: the schema. Every model here is a table with its fields, choices, constraints and
small invariants (``clean()``, simple properties, a billing charge's default period); the one
write a model makes itself is ``Recommendation.move_to``, a status move with its event row
checked against the one table of allowed moves. Every other write goes through the services.

The tables: uploads and their contents (rollups, workload days, billing charges, period keys and
possible restatements), API tokens, single sign-on identities and failed logins, price cards,
serving pools, the data version that keys cached results and the state of derived results,
workloads with their classes and overrides, hardware targets and throughput assumptions,
recommendations with their events, and the audit trail. It runs past 600 lines because the app
has that many tables, not because a second concern lives here: a models package would cut it by
table, not by concern, and every caller imports the models from this one place.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models, transaction

from audit_app.lib.encryption import EncryptedTextField
from audit_app.lib.errors import DomainError, ErrorKind
from audit_app.lib.masking import mask_webhook


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
    # `uploads/<date>/<12 hex>-<name of up to 234 bytes>`: see services.uploads._storage_name.
    file = models.FileField(upload_to="uploads/%Y/%m/%d/", max_length=500)
    original_name = models.CharField(max_length=255)
    size_bytes = models.BigIntegerField(default=0)
    # Unique among live uploads only (see Meta): a failed upload does not block its bytes.
    sha256 = models.CharField(max_length=64, db_index=True)
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
    requested_format = models.CharField(max_length=32, default="auto")
    attempts = models.PositiveIntegerField(default=0)
    # First rejected rows ({"line", "field", "value", "reason"}), capped by the ingest service.
    rejects = models.JSONField(default=list, blank=True)
    # Sentences about how a token log landed that its reader must know (names folded over a
    # cardinality limit, `audit_app.ingestion.cardinality`); billing notes live in `billing_totals`.
    notes = models.JSONField(default=list, blank=True)
    # Totals of what landed, for the upload page and `ingest --json`.
    requests = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cached_input_tokens = models.BigIntegerField(default=0)
    logged_cost_usd = models.DecimalField(max_digits=24, decimal_places=9, default=0)
    # Billing uploads: {"billed": {"USD": "12.34"}, "effective": {...}} as decimal strings.
    billing_totals = models.JSONField(default=dict, blank=True)
    # A live stream (`audit_app.ingestion.live`): one upload per source and UTC day of receipt
    # holds what that source's micro-batches landed; it has no file. Empty for a file upload.
    stream_source = models.CharField(max_length=32, blank=True, default="")
    stream_day = models.DateField(null=True, blank=True)
    last_received_at = models.DateTimeField(null=True, blank=True)
    # A billing export pulled by a scheduled source (`audit_app.ingestion.sources`), and the
    # object it was read from (path, URL or bucket key).
    billing_source = models.ForeignKey(
        "BillingSource", null=True, blank=True, on_delete=models.SET_NULL, related_name="uploads"
    )
    source_object = models.CharField(max_length=1000, blank=True, default="")

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # The same bytes are refused while an upload of them is queued, running or
            # succeeded; once it failed they may be uploaded again. In the database, so two
            # identical uploads racing each other cannot both land.
            models.UniqueConstraint(
                fields=["sha256"],
                condition=~models.Q(status="failed"),
                name="upload_sha256_unique_unless_failed",
                violation_error_message=(
                    "Another queued, running or succeeded upload holds the same bytes (sha256)."
                ),
            ),
            models.UniqueConstraint(
                fields=["stream_source", "stream_day"],
                condition=~models.Q(stream_source=""),
                name="upload_one_stream_per_source_and_day",
            ),
        ]

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


class SsoIdentity(models.Model):
    """A user's account at an OpenID Connect issuer: (issuer, subject) names them for good, so
    each single sign-on finds the same user whatever their email or username becomes."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identities"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)
    last_sign_in_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_identity_unique")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer} ({self.user})"


class AuthFailureCount(models.Model):
    """Failed logins or invalid API tokens of one account or client address in a window
    (`audit_app.access.auth_failures`), seen by every web process and kept across restarts."""

    key = models.CharField(max_length=100, unique=True)
    failures = models.PositiveIntegerField(default=0)
    window_ends_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.key}: {self.failures} until {self.window_ends_at:%H:%M:%S}"


class PriceCard(models.Model):
    """Token prices of one provider's model from a date on; edited in admin.

    Requests whose log carries no cost are priced with the card valid on their day.
    """

    class Origin(models.TextChoices):
        CATALOG = "catalog", "Shipped catalog"
        DATASET = "dataset", "Price dataset (prices_sync)"
        LOCAL = "local", "Local override"

    provider = models.CharField(max_length=64)
    model = models.CharField(max_length=200)
    input_usd_per_mtok = models.DecimalField(max_digits=12, decimal_places=6)
    output_usd_per_mtok = models.DecimalField(max_digits=12, decimal_places=6)
    cached_input_usd_per_mtok = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Empty: cached input is priced as ordinary input.",
    )
    batch_input_usd_per_mtok = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Empty: batch-API input is priced as ordinary input.",
    )
    batch_output_usd_per_mtok = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Empty: batch-API output is priced as ordinary output.",
    )
    cache_write_input_usd_per_mtok = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="Cache creation (cache write) input. Empty: priced as ordinary input.",
    )
    long_context_threshold_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text=(
            "A request whose input is above this many tokens is priced at the long-context "
            "prices below (all its tokens). Empty: no long-context tier."
        ),
    )
    long_context_input_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    long_context_output_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    long_context_cached_input_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    long_context_cache_write_usd_per_mtok = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    per_request_usd = models.DecimalField(
        max_digits=12,
        decimal_places=6,
        null=True,
        blank=True,
        help_text="A price per request on top of the token prices (a provider that charges so).",
    )
    valid_from = models.DateField()
    source = models.CharField(max_length=300, blank=True)
    source_date = models.CharField(max_length=64, blank=True)
    origin = models.CharField(
        max_length=16,
        choices=Origin.choices,
        default=Origin.LOCAL,
        help_text="Where the card came from; a local card wins over the dataset's prices.",
    )
    dataset_model = models.CharField(
        max_length=200, blank=True, help_text="The price dataset's id of this model."
    )
    # The dataset's rule for the names a request may use for this model (its aliases):
    # {"equals": ...}, {"starts_with": ...}, {"or": [...]}, ... (`audit_app.costs.pricing`).
    match_rule = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["provider", "model", "-valid_from"]
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "model", "valid_from"], name="unique_price_card_per_day"
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider}/{self.model} from {self.valid_from}"


class RollupColumns(models.Model):
    """The key, the sums and the latency histograms every rollup carries (hourly and daily
    rollups add their time). `audit_app.ingestion.daily` lists the same names for code without
    models."""

    workload = models.CharField(max_length=200)
    team = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=64, blank=True)
    model = models.CharField(max_length=200)
    pool = models.CharField(max_length=100, blank=True)
    operation = models.CharField(max_length=64, blank=True)
    batch_api = models.BooleanField(default=False)
    requests = models.BigIntegerField(default=0)
    errors = models.BigIntegerField(default=0)
    streaming_requests = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cached_input_tokens = models.BigIntegerField(default=0)
    logged_requests = models.BigIntegerField(default=0)
    logged_cost_usd = models.DecimalField(max_digits=24, decimal_places=9, default=0)
    unlogged_input_tokens = models.BigIntegerField(default=0)
    unlogged_cached_input_tokens = models.BigIntegerField(default=0)
    unlogged_output_tokens = models.BigIntegerField(default=0)
    cache_creation_input_tokens = models.BigIntegerField(default=0)
    unlogged_cache_creation_input_tokens = models.BigIntegerField(default=0)
    # Tokens of unlogged requests whose input was above `long_context_threshold_tokens`,
    # counted at ingest: a card's long-context tier starting there prices them
    # (`audit_app.costs.pricing`).
    unlogged_long_context_input_tokens = models.BigIntegerField(default=0)
    unlogged_long_context_cached_input_tokens = models.BigIntegerField(default=0)
    unlogged_long_context_cache_creation_input_tokens = models.BigIntegerField(default=0)
    unlogged_long_context_output_tokens = models.BigIntegerField(default=0)
    # The threshold they were counted above: the model's card's tier start on the day, else
    # 200,000 (pricing.LONG_CONTEXT_THRESHOLD_TOKENS); 0 when rows of several were added up.
    long_context_threshold_tokens = models.PositiveIntegerField(default=200_000)
    # Latency histograms in LatencyHistogram's compact binary form (`to_bytes`, b"" when the
    # rows had none): pages merge thousands per request and decoding bytes is far cheaper than
    # JSON, and ingest writes them with COPY as raw bytes (`audit_app.lib.bulk`).
    ttft_histogram = models.BinaryField(default=b"")
    latency_histogram = models.BinaryField(default=b"")
    tpot_histogram = models.BinaryField(default=b"")

    class Meta:
        abstract = True


class HourlyRollup(RollupColumns):
    """Requests of one upload aggregated per hour and key; dashboards never read request rows,
    only these and their sums per day (`DailyRollup`).

    Cost is kept in two parts so price-card edits apply without re-ingesting: what the log
    itself said (``logged_cost_usd``) and the tokens of requests whose log carried no cost
    (``unlogged_*``), priced at read time from the price cards.
    """

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="rollups")
    hour = models.DateTimeField()
    distinct_end_users = models.IntegerField(default=0)

    class Meta:
        indexes = [
            models.Index(fields=["hour"], name="rollup_hour"),
            models.Index(fields=["workload", "hour"], name="rollup_workload_hour"),
            models.Index(fields=["provider", "model", "hour"], name="rollup_provider_model_hour"),
            models.Index(fields=["team", "hour"], name="rollup_team_hour"),
        ]

    def __str__(self) -> str:
        return f"{self.workload} {self.model} {self.hour:%Y-%m-%d %H}:00"


class DailyRollup(RollupColumns):
    """The hourly rollups of one upload summed per UTC day and key, histograms merged.

    Derived from `HourlyRollup` when an upload lands (and backfilled by migration), so pages
    over weeks or a year read ~24 times fewer rows; views that need the hour of day (heatmaps,
    GPU idle attribution, demand profiles) still read the hourly table.
    """

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="daily_rollups")
    day = models.DateField()

    class Meta:
        indexes = [
            models.Index(fields=["day"], name="daily_day"),
            models.Index(fields=["workload", "day"], name="daily_workload_day"),
            models.Index(fields=["provider", "model", "day"], name="daily_provider_model_day"),
            models.Index(fields=["team", "day"], name="daily_team_day"),
        ]

    def __str__(self) -> str:
        return f"{self.workload} {self.model} {self.day}"


class DataVersion(models.Model):
    """One row whose number goes up, in the same transaction, whenever what the dashboards
    compute from changes (an upload landed or deleted, a price card, serving pool, hardware
    entry or override edited), so cached results (audit_app.lib.results_cache) are keyed by data
    they cannot outlive. A landing of live records draws a new token but keeps the number, so
    derived results can tell it from the changes they follow at once (`lib.derived_state`).

    ``token`` is a random value drawn anew with every change: cache keys use it, not the
    number, so two databases (or a database restored from a backup) that reach the same
    number never read each other's results."""

    version = models.BigIntegerField(default=0)
    token = models.CharField(max_length=32, default="")
    changed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"data version {self.version}"


class DerivedState(models.Model):
    """One row: the data version that workload classes and recommendations were last computed
    from (`audit_app.derived`). Refreshes lock it, so two never run at once."""

    data_token = models.CharField(max_length=32, blank=True)
    data_version = models.BigIntegerField(default=0)
    computed_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"derived results of data version {self.data_version}"


class WorkloadDay(models.Model):
    """Per upload, workload and UTC day: the finer time shape classification needs.

    Counts per minute-of-hour and hour-of-day merge by addition across uploads; end users and
    callers are kept as capped sets of hashes / names so distinct counts merge too.
    """

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="workload_days")
    day = models.DateField()
    workload = models.CharField(max_length=200)
    requests = models.BigIntegerField(default=0)
    minute_counts = models.JSONField(default=list)  # 60 ints: requests per minute of the hour
    hour_counts = models.JSONField(default=list)  # 24 ints: requests per UTC hour of the day
    end_user_hashes = models.JSONField(default=list)
    callers = models.JSONField(default=list)

    class Meta:
        indexes = [models.Index(fields=["workload", "day"], name="workloadday_workload_day")]

    def __str__(self) -> str:
        return f"{self.workload} {self.day}"


class Workload(models.Model):
    """A named stream of requests (see `audit_app.ingestion.identity` for how names are given).

    Created when an ingest first sees the name; its numbers live in the rollups. Removed when
    the last upload naming it is deleted, unless a person decided something about it
    (`services.uploads.workloads_prune`).
    """

    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    latency_slo_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="The latency this workload must meet, if any."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class BillingCharge(models.Model):
    """One line of a billing export (FOCUS, AWS CUR, Azure), money kept exactly as billed.

    Restated exports: a charge belongs to a billing period of a provider's billing account;
    when a newer upload lands that restates this upload's charges of the same (provider,
    billing_account, billing_period_start, amortized) (the rule: `audit_app.ingestion.
    supersession`), this upload's lines for it stop counting and `superseded_by` names the
    upload that replaced them (null: current). Every read of money filters on
    `superseded_by__isnull=True`.

    `amortized` lines come from an amortized-cost export: their cost is in `effective_cost`
    and `billed_cost` is 0, so no billed total can count them.
    """

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="charges")
    line = models.PositiveIntegerField()
    provider = models.CharField(max_length=32)
    provider_raw = models.CharField(max_length=100, blank=True)
    service = models.CharField(max_length=200, blank=True)
    charge_category = models.CharField(max_length=32)
    charge_class = models.CharField(max_length=32, blank=True)
    period_start = models.DateTimeField()
    period_end = models.DateTimeField()
    # 16 integer digits (parse_amount refuses 10^15 and more) and 20 decimals: an export's
    # amount as written (Azure writes 16 decimals).
    billed_cost = models.DecimalField(max_digits=36, decimal_places=20)
    effective_cost = models.DecimalField(max_digits=36, decimal_places=20, null=True)
    currency = models.CharField(max_length=3)
    quantity = models.DecimalField(max_digits=30, decimal_places=10, null=True)
    unit = models.CharField(max_length=64, blank=True)
    resource_id = models.CharField(max_length=500, blank=True)
    region = models.CharField(max_length=64, blank=True)
    account_id = models.CharField(max_length=128, blank=True)
    sku = models.CharField(max_length=300, blank=True)
    description = models.CharField(max_length=300, blank=True)
    meter_kind = models.CharField(max_length=16, blank=True)
    meter_model = models.CharField(max_length=200, blank=True)
    token_class = models.CharField(max_length=16, blank=True)
    tier = models.CharField(max_length=16, blank=True)
    cross_region = models.BooleanField(default=False)
    block_size = models.PositiveIntegerField(default=1)
    instance_type = models.CharField(max_length=64, blank=True)
    instance_family = models.CharField(max_length=16, blank=True)
    tags = models.JSONField(default=dict, blank=True)
    billing_account = models.CharField(max_length=500, blank=True)
    billing_period_start = models.DateTimeField()
    billing_period_end = models.DateTimeField()
    amortized = models.BooleanField(default=False)
    superseded_by = models.ForeignKey(
        Upload,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="superseded_charges",
    )

    class Meta:
        indexes = [
            models.Index(fields=["period_start"], name="charge_period"),
            models.Index(fields=["meter_kind", "period_start"], name="charge_kind_period"),
            models.Index(fields=["resource_id"], name="charge_resource"),
            models.Index(
                fields=["provider", "billing_account", "billing_period_start"],
                name="charge_billing_period",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.sku} {self.billed_cost} {self.currency}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # A charge made by hand (admin, tests) without a billing period is billed in the
        # calendar month it starts in, as an export without the columns is.
        if self.billing_period_start is None or self.billing_period_end is None:
            from audit_app.ingestion.billing_exports.base import billing_month

            self.billing_period_start, self.billing_period_end = billing_month(self.period_start)
        super().save(*args, **kwargs)


class BillingPeriodKey(models.Model):
    """One row per restatement key that has ever landed. Landing or deleting a billing upload
    locks the rows of its keys first (`select_for_update`), so two uploads of the same
    account's month land one after the other and the later one always sees the earlier."""

    provider = models.CharField(max_length=32)
    billing_account = models.CharField(max_length=500, blank=True)
    billing_period_start = models.DateTimeField()
    amortized = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["provider", "billing_account", "billing_period_start", "amortized"],
                name="unique_billing_period_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.billing_account} {self.billing_period_start:%Y-%m-%d}"


class PossibleRestatement(models.Model):
    """Two billing uploads of the same billing periods whose charges overlap too little to call
    the later one a restatement and too much to call them parts of one split export
    (`audit_app.ingestion.supersession`): both count until someone decides. Also kept for a
    pair a person decided on by hand, with the decision."""

    class Decision(models.TextChoices):
        OPEN = "", "Not decided: both count"
        SUPERSEDES = "supersedes", "The upload supersedes the earlier one"
        SUPERSEDED = "superseded", "The earlier upload supersedes this one"
        KEEP_BOTH = "keep_both", "Both count"

    upload = models.ForeignKey(
        Upload, on_delete=models.CASCADE, related_name="possible_restatements"
    )
    earlier = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="possibly_restated")
    # Over the billing periods the two share: distinct charge keys of `earlier`, and how many of
    # them `upload` holds too (0 and 0 for a pair only decided by hand).
    earlier_keys = models.PositiveIntegerField(default=0)
    shared_keys = models.PositiveIntegerField(default=0)
    decision = models.CharField(max_length=16, choices=Decision.choices, blank=True, default="")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["upload", "earlier"], name="possible_restatement_unique_pair"
            )
        ]

    def __str__(self) -> str:
        return f"upload {self.upload_id} may restate upload {self.earlier_id}"


class ServingPool(models.Model):
    """Self-hosted serving capacity (GPU / accelerator instances) whose bill is spread over the
    workloads it served. Billing lines belong to it by resource id or by a tag; token-log
    requests by their `pool` field, or by model when the log has no pool."""

    name = models.CharField(max_length=100, unique=True)
    resource_ids = models.JSONField(default=list, blank=True)
    tag_key = models.CharField(max_length=100, blank=True)
    tag_value = models.CharField(max_length=200, blank=True)
    models_served = models.JSONField(
        default=list, blank=True, help_text="Models whose requests without a pool ran here."
    )
    capacity_tokens_per_hour = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Tokens the pool can serve in an hour; with it, busy hours can be part idle.",
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class WorkloadClass(models.TextChoices):
    REALTIME = "realtime", "Real-time"
    ASYNC = "async", "Asynchronous"
    UNKNOWN = "unknown", "Unknown"


class WorkloadClassification(models.Model):
    """The classifier's latest verdict on a workload (re-computed after each ingest)."""

    workload = models.OneToOneField(
        Workload, on_delete=models.CASCADE, related_name="classification"
    )
    workload_class = models.CharField(max_length=16, choices=WorkloadClass.choices)
    confidence = models.FloatField()
    evidence = models.JSONField(default=list)
    features = models.JSONField(default=dict)
    classified_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.workload}: {self.workload_class} ({self.confidence:.2f})"


class WorkloadOverride(models.Model):
    """A person's decision on a workload's class, with why. The newest one is in force; an
    override with an empty class hands the decision back to the classifier."""

    workload = models.ForeignKey(Workload, on_delete=models.CASCADE, related_name="overrides")
    workload_class = models.CharField(max_length=16, choices=WorkloadClass.choices, blank=True)
    reason = models.TextField()
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.workload}: {self.workload_class or 'cleared'} by {self.user}"


class HardwareTarget(models.Model):
    """A row of the hardware and price catalog (instances, chips, API models), with its source."""

    kind = models.CharField(max_length=16)  # instance, chip, api
    provider = models.CharField(max_length=64)
    name = models.CharField(max_length=200)
    accelerator = models.CharField(max_length=100, blank=True)
    accelerator_count = models.PositiveIntegerField(null=True, blank=True)
    usd_per_hour = models.DecimalField(max_digits=14, decimal_places=6, null=True, blank=True)
    usd_per_million_input_tokens = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    usd_per_million_output_tokens = models.DecimalField(
        max_digits=12, decimal_places=6, null=True, blank=True
    )
    batch_discount_pct = models.DecimalField(max_digits=5, decimal_places=2, null=True, blank=True)
    tdp_watts_per_accelerator = models.PositiveIntegerField(null=True, blank=True)
    source = models.CharField(max_length=500, blank=True)
    source_date = models.CharField(max_length=100, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        ordering = ["kind", "provider", "name"]
        constraints = [
            models.UniqueConstraint(fields=["kind", "provider", "name"], name="unique_target")
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.name}"


class ThroughputAssumption(models.Model):
    """Output tokens/s one replica (instance) is assumed to sustain for a model size class,
    until a benchmark gate measures it."""

    instance = models.CharField(max_length=100)
    model_class = models.CharField(max_length=16)  # 8b, 70b, ...
    tokens_per_second = models.FloatField()
    source = models.CharField(max_length=500)
    source_date = models.CharField(max_length=64, blank=True)
    confidence = models.CharField(max_length=16, blank=True)
    notes = models.TextField(blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["instance", "model_class"], name="unique_throughput")
        ]

    def __str__(self) -> str:
        return f"{self.instance} {self.model_class}: {self.tokens_per_second} tok/s"


class Recommendation(models.Model):
    """Move an asynchronous workload to a cheaper target, or change a serving pool (right-size,
    autoscale, consolidate, offload), priced on the last 30 days. A workload recommendation has
    a workload; a pool recommendation has a pool (and no workload)."""

    class Status(models.TextChoices):
        PROPOSED = "proposed", "Proposed"
        PILOT_APPROVED = "pilot_approved", "Pilot approved"
        REJECTED = "rejected", "Rejected"
        VERIFIED = "verified", "Verified by a gate"
        GATE_FAILED = "gate_failed", "Gate failed"

    class TargetKind(models.TextChoices):
        BATCH_API = "batch_api", "Batch API"
        CHEAPER_PROVIDER = "cheaper_provider", "Cheaper provider"
        DEDICATED_HARDWARE = "dedicated_hardware", "Dedicated throughput hardware"
        POOL_RIGHTSIZE = "pool_rightsize", "Right-size a pool"
        POOL_AUTOSCALE = "pool_autoscale", "Autoscale a pool"
        POOL_CONSOLIDATE = "pool_consolidate", "Consolidate pools"
        POOL_OFFLOAD = "pool_offload", "Move async traffic off a pool"

    workload = models.ForeignKey(
        Workload, on_delete=models.CASCADE, related_name="recommendations", null=True, blank=True
    )
    pool = models.ForeignKey(
        ServingPool,
        on_delete=models.CASCADE,
        related_name="recommendations",
        null=True,
        blank=True,
    )
    target_kind = models.CharField(max_length=32, choices=TargetKind.choices)
    target = models.CharField(max_length=300)
    current_monthly_usd = models.DecimalField(max_digits=16, decimal_places=2)
    projected_monthly_usd = models.DecimalField(max_digits=16, decimal_places=2)
    savings_monthly_usd = models.DecimalField(max_digits=16, decimal_places=2)
    assumptions = models.JSONField(default=list)
    confidence = models.CharField(max_length=300)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PROPOSED)
    period_start = models.DateField()
    period_end = models.DateField()
    # 1 for the workload's best option; 2, 3 for the alternatives grouped under it.
    rank = models.PositiveSmallIntegerField(default=1)
    # When the figures were computed, from which data version and which uploads.
    computed_at = models.DateTimeField(null=True, blank=True)
    data_version = models.BigIntegerField(default=0)
    source_upload_ids = models.JSONField(default=list, blank=True)
    # Pool recommendations: the chart series, the cold-start risk, the dollars moved off the pool.
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-savings_monthly_usd", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["workload", "target_kind", "target"], name="unique_recommendation"
            ),
            models.UniqueConstraint(
                fields=["pool", "target_kind", "target"],
                condition=models.Q(workload__isnull=True),
                name="unique_pool_recommendation",
            ),
            models.CheckConstraint(
                condition=models.Q(workload__isnull=False) | models.Q(pool__isnull=False),
                name="recommendation_has_workload_or_pool",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.subject} -> {self.target} (${self.savings_monthly_usd}/month)"

    @property
    def subject(self) -> str:
        """What the recommendation is about: its workload, else its pool."""
        if self.workload is not None:
            return self.workload.name
        return f"pool {self.pool.name}" if self.pool is not None else ""

    @property
    def is_pool(self) -> bool:
        return self.pool_id is not None and self.workload_id is None

    @transaction.atomic
    def move_to(self, status: str, *, user: Any, note: str = "") -> RecommendationEvent:
        """Move to ``status`` if `RECOMMENDATION_MOVES` allows it from the current one, writing
        the event that says who did it and why. Callers lock the row first (select_for_update)
        so that of two moves, the second sees the status the first set."""
        target = Recommendation.Status(status)
        if target not in RECOMMENDATION_MOVES.get(self.status, ()):
            raise RecommendationMoveRefused(recommendation=self, to_status=target)
        event = RecommendationEvent.objects.create(
            recommendation=self,
            from_status=self.status,
            to_status=target,
            user=user if user is not None and user.is_authenticated else None,
            note=note,
        )
        self.status = target
        self.save(update_fields=["status", "updated_at"])
        return event


# The one table of allowed status moves: a manager decides on a proposal; a gate run for an
# approved pilot verifies it or fails it. Every other status is final.
RECOMMENDATION_MOVES: dict[str, frozenset[Recommendation.Status]] = {
    Recommendation.Status.PROPOSED: frozenset(
        {Recommendation.Status.PILOT_APPROVED, Recommendation.Status.REJECTED}
    ),
    Recommendation.Status.PILOT_APPROVED: frozenset(
        {Recommendation.Status.VERIFIED, Recommendation.Status.GATE_FAILED}
    ),
}


class RecommendationMoveRefused(DomainError):
    """A status move `RECOMMENDATION_MOVES` does not allow: a conflict with the current status."""

    kind = ErrorKind.CONFLICT

    def __init__(self, *, recommendation: Recommendation, to_status: str) -> None:
        current = recommendation.get_status_display().lower()
        sources = sorted(
            Recommendation.Status(source).label.lower()
            for source, targets in RECOMMENDATION_MOVES.items()
            if to_status in targets
        )
        super().__init__(
            f"This recommendation is {current}: only a {' or '.join(sources)} "
            f"recommendation can become {Recommendation.Status(to_status).label.lower()}."
        )
        self.recommendation = recommendation
        self.to_status = to_status


class RecommendationEvent(models.Model):
    """Status history: who moved a recommendation from what to what, when, and why."""

    recommendation = models.ForeignKey(
        Recommendation, on_delete=models.CASCADE, related_name="events"
    )
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.recommendation_id}: {self.from_status} -> {self.to_status}"


class AuditEvent(models.Model):
    """Who did what to which object, and when: uploads, deletions, overrides, decisions, gates.

    Written by the services that do those things; shown to administrators only."""

    class Action(models.TextChoices):
        UPLOAD_CREATED = "upload_created", "Uploaded a file"
        UPLOAD_DELETED = "upload_deleted", "Deleted an upload"
        WORKLOAD_OVERRIDE = "workload_override", "Set a workload's class"
        RECOMMENDATION_DECISION = "recommendation_decision", "Decided on a recommendation"
        GATE_CREATED = "gate_created", "Ran a benchmark gate"
        RUN_EDITED = "run_edited", "Edited a benchmark run's fields"
        BUDGET_CHANGED = "budget_changed", "Created, changed or deleted a budget"
        ALERT_ACKNOWLEDGED = "alert_acknowledged", "Acknowledged an alert"
        SOURCE_CHANGED = "source_changed", "Created, changed or deleted a billing source"
        SSO_SIGN_IN = "sso_sign_in", "Signed in through single sign-on"
        SSO_ROLE_GRANTED = "sso_role_granted", "Was granted a role by the identity provider"
        SSO_ROLE_REMOVED = "sso_role_removed", "Lost a role at the identity provider"
        SSO_REFUSED = "sso_refused", "Was refused a single sign-on"
        ALLOCATION_CHANGED = "allocation_changed", "Changed how shared cost is allocated"
        RESTATEMENT_DECIDED = "restatement_decided", "Decided whether an upload restates another"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    actor_name = models.CharField(max_length=150, blank=True)  # kept if the user is deleted
    action = models.CharField(max_length=32, choices=Action.choices)
    object_type = models.CharField(max_length=32)
    object_id = models.CharField(max_length=64)
    summary = models.CharField(max_length=500)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name or 'system'}: {self.summary}"


class Budget(models.Model):
    """A spending limit on one scope of the spend read model over a calendar month or quarter
    (UTC), with the thresholds that alert and who to tell."""

    class ScopeKind(models.TextChoices):
        ALL = "all", "All spend"
        TEAM = "team", "Team"
        WORKLOAD = "workload", "Workload"
        PROVIDER = "provider", "Provider"
        MODEL = "model", "Model"

    class Period(models.TextChoices):
        MONTH = "month", "Month"
        QUARTER = "quarter", "Quarter"

    name = models.CharField(max_length=200, unique=True)
    scope_kind = models.CharField(max_length=16, choices=ScopeKind.choices)
    scope_value = models.CharField(max_length=200, blank=True)  # "" for all spend
    period = models.CharField(max_length=16, choices=Period.choices, default=Period.MONTH)
    amount_usd = models.DecimalField(max_digits=14, decimal_places=2)
    alert_at_pct = models.JSONField(default=list)  # e.g. [80, 100]
    on_forecast = models.BooleanField(default=True)
    notify_emails = models.JSONField(default=list, blank=True)
    notify_webhooks = models.JSONField(default=list, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} (${self.amount_usd} a {self.period})"


class Alert(models.Model):
    """One crossing or one anomaly, created once (the constraints refuse a second) and
    acknowledged by a person with a note."""

    class Kind(models.TextChoices):
        BUDGET_ACTUAL = "budget_actual", "Budget spent"
        BUDGET_FORECAST = "budget_forecast", "Budget forecast"
        ANOMALY = "anomaly", "Spend anomaly"

    kind = models.CharField(max_length=16, choices=Kind.choices)
    budget = models.ForeignKey(
        Budget, null=True, blank=True, on_delete=models.CASCADE, related_name="alerts"
    )
    period_start = models.DateField(null=True, blank=True)
    threshold_pct = models.PositiveIntegerField(null=True, blank=True)
    # "YYYY-MM-DD|workload|model" for an anomaly; "" for a budget alert.
    anomaly_key = models.CharField(max_length=500, blank=True)
    message = models.TextField()
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    acknowledged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="acknowledged_alerts",
    )
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    acknowledgement_note = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["kind", "budget", "period_start", "threshold_pct"],
                condition=models.Q(budget__isnull=False),
                name="alert_once_per_budget_period_threshold",
            ),
            models.UniqueConstraint(
                fields=["anomaly_key"],
                condition=models.Q(kind="anomaly"),
                name="alert_once_per_anomaly",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()}: {self.message[:60]}"


class AlertDelivery(models.Model):
    """One alert to one recipient (an email address or a webhook URL): each attempt counted,
    the last error kept."""

    class Channel(models.TextChoices):
        EMAIL = "email", "Email"
        WEBHOOK = "webhook", "Webhook"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    alert = models.ForeignKey(Alert, on_delete=models.CASCADE, related_name="deliveries")
    channel = models.CharField(max_length=16, choices=Channel.choices)
    target = models.CharField(max_length=2000)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["alert", "channel", "target"]
        constraints = [
            models.UniqueConstraint(
                fields=["alert", "channel", "target"], name="alert_delivery_once_per_target"
            )
        ]

    def __str__(self) -> str:
        return f"alert {self.alert_id} → {self.channel} {self.shown_target}: {self.status}"

    @property
    def shown_target(self) -> str:
        """The recipient as pages and answers show it: a webhook URL masked."""
        return mask_webhook(self.target) if self.channel == self.Channel.WEBHOOK else self.target


class LiveBatch(models.Model):
    """What one request to a live receiver carried (an OTLP export, a LiteLLM callback post):
    its accepted records as canonical requests (`audit_app.ingestion.live.records`), kept
    until a micro-batch lands them whole into the source's stream upload of the day."""

    class Source(models.TextChoices):
        OTLP = "otlp", "OpenTelemetry (OTLP/HTTP)"
        LITELLM = "litellm", "LiteLLM callback"

    source = models.CharField(max_length=32, choices=Source.choices)
    received_at = models.DateTimeField(db_index=True)
    received_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # zlib-compressed JSON (`live.records.encode_requests`).
    records = models.BinaryField()
    record_count = models.PositiveIntegerField(default=0)
    # Everything the request held, what was refused (with the first rejects) and what was not
    # an LLM call at all (a span without gen_ai attributes).
    rows_read = models.PositiveIntegerField(default=0)
    rows_rejected = models.PositiveIntegerField(default=0)
    rows_ignored = models.PositiveIntegerField(default=0)
    rejects = models.JSONField(default=list, blank=True)
    # Set when landed: the stream upload it went into, and how many of its records were new
    # (the others were re-sent within the de-duplication window).
    landed_at = models.DateTimeField(null=True, blank=True, db_index=True)
    upload = models.ForeignKey(
        Upload, null=True, blank=True, on_delete=models.CASCADE, related_name="live_batches"
    )
    records_landed = models.PositiveIntegerField(default=0)
    records_duplicate = models.PositiveIntegerField(default=0)
    # Why a landing set the batch aside instead of landing it (its records could not be decoded,
    # or the database refused them); empty for a batch that landed. A set-aside batch counts as
    # landed (never claimed again), its records as rejected, and keeps its payload.
    error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.source} batch {self.pk} ({self.record_count} records)"


class LiveRecordKey(models.Model):
    """A live record already counted: (source, key) is the span's trace/span id or the
    LiteLLM call id. A record re-sent with a key seen within LIVE_DEDUP_WINDOW_DAYS is landed
    once; keys older than that are forgotten. Deleting the stream upload forgets its keys."""

    source = models.CharField(max_length=32)
    key = models.CharField(max_length=255)
    seen_at = models.DateTimeField(db_index=True)
    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="+")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["source", "key"], name="live_record_key_unique")
        ]

    def __str__(self) -> str:
        return f"{self.source}:{self.key}"


class BillingSource(models.Model):
    """A place billing exports appear, polled on a schedule (`audit_app.ingestion.sources`):
    a local or mounted folder, an HTTP(S) URL, or an S3-compatible bucket and prefix. A new or
    changed object is ingested as a billing upload through the same pipeline as a file. An
    `openai` or `anthropic` source reads that provider's cost and usage API instead
    (`audit_app.ingestion.provider_sources`), each poll's report becoming one upload."""

    class Kind(models.TextChoices):
        FOLDER = "folder", "Folder"
        HTTP = "http", "HTTP(S) URL"
        S3 = "s3", "S3-compatible bucket"
        OPENAI = "openai", "OpenAI costs and usage API"
        ANTHROPIC = "anthropic", "Anthropic cost and usage API"

    name = models.CharField(max_length=100, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Folder path, URL, or bucket name.
    location = models.CharField(max_length=1000)
    # Folder: a file name pattern (glob, e.g. "*.csv.gz"); S3: a key prefix.
    prefix = models.CharField(max_length=500, blank=True, default="")
    # S3 only: another S3-compatible store's endpoint, its region, and keys (else boto3's own
    # credential chain: environment, profile, instance role).
    endpoint_url = models.CharField(max_length=500, blank=True, default="")
    region = models.CharField(max_length=64, blank=True, default="")
    access_key_id = models.CharField(max_length=200, blank=True, default="")
    # Encrypted at rest (`audit_app.lib.encryption`); read and written as plain text.
    secret_access_key = EncryptedTextField(blank=True, default="")
    # Billing format name, or "auto" to detect it (`audit_app.ingestion.formats`).
    format = models.CharField(max_length=32, default="auto")
    # openai / anthropic only: the organization admin key (encrypted at rest, never shown),
    # and the first day the first poll reads.
    api_key = EncryptedTextField(blank=True, default="")
    start_date = models.DateField(null=True, blank=True)
    poll_every_minutes = models.PositiveIntegerField(default=60)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_polled_at = models.DateTimeField(null=True, blank=True)
    last_changed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_error_at = models.DateTimeField(null=True, blank=True)
    consecutive_failures = models.PositiveIntegerField(default=0)
    # What each object looked like when last ingested: {object name: fingerprint}.
    seen = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"


class ProviderUsage(models.Model):
    """One spend row of a provider cost and usage report (an `openai` or `anthropic` source's
    upload): a day's requests, tokens and matched cost of one model, project or workspace, API
    key and tier. ``cost_usd`` is the report's cost matched to these tokens (None: no cost line
    matched, the tokens are priced from price cards); a cost line no usage matched is a row of
    its own with no tokens. Restated like charges: a newer report of the same source, provider
    and day sets ``superseded_by``. Where no token log covers the provider's day, the current
    rows become rollups of their upload (`audit_app.ingestion.provider_usage`)."""

    upload = models.ForeignKey(Upload, on_delete=models.CASCADE, related_name="provider_usage")
    provider = models.CharField(max_length=32)
    billing_account = models.CharField(max_length=500, blank=True)
    day = models.DateField()
    model = models.CharField(max_length=200)
    project_id = models.CharField(max_length=200, blank=True)
    project_name = models.CharField(max_length=200, blank=True)
    api_key_id = models.CharField(max_length=200, blank=True)
    batch = models.BooleanField(default=False)
    service_tier = models.CharField(max_length=32, blank=True)
    requests = models.BigIntegerField(default=0)
    input_tokens = models.BigIntegerField(default=0)  # uncached input
    output_tokens = models.BigIntegerField(default=0)
    cached_input_tokens = models.BigIntegerField(default=0)
    cache_write_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=24, decimal_places=9, null=True, blank=True)
    superseded_by = models.ForeignKey(
        Upload,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="superseded_usage",
    )

    class Meta:
        indexes = [
            models.Index(fields=["provider", "day"], name="provider_usage_day"),
            models.Index(
                fields=["provider", "billing_account", "day"], name="provider_usage_account"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.provider} {self.model} {self.day}"


# --- Statements (audit_app.statements) ---------------------------------------------------------
class AllocationRule(models.Model):
    """How shared cost (idle GPU, spend without a team) is split over teams: the global rule
    (``pool`` "") and one override per serving pool (`audit_app.statements.allocation`)."""

    class Method(models.TextChoices):
        PROPORTIONAL = "proportional", "Proportional to direct spend"
        EVEN = "even", "Even among the teams that used it"
        OWNER = "owner", "All to one owner team"

    pool = models.CharField(max_length=100, unique=True, blank=True)  # "" for the global rule
    method = models.CharField(max_length=16, choices=Method.choices, default=Method.PROPORTIONAL)
    owner_team = models.CharField(
        max_length=200, blank=True, help_text="The team that takes it all under owner."
    )
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["pool"]

    def __str__(self) -> str:
        return f"{self.pool or 'every pool'}: {self.method}"

    def clean(self) -> None:
        """The admin's check; the statements service refuses the same with a DomainError."""
        if self.method == self.Method.OWNER and not self.owner_team.strip():
            raise ValidationError({"owner_team": "The owner method needs an owner team."})
        if self.pool and not ServingPool.objects.filter(name=self.pool).exists():
            raise ValidationError({"pool": f"No serving pool named {self.pool!r}."})


class Team(models.Model):
    """A team as the data names it, with who owns its statement. Teams seen in the data get a
    row of their own (`audit_app.statements.services.team_directory`)."""

    name = models.CharField(max_length=200, unique=True)
    display_name = models.CharField(max_length=200, blank=True)
    owner_email = models.EmailField(blank=True, help_text="Receives the monthly statement.")
    cost_centre = models.CharField(max_length=64, blank=True)
    members = models.JSONField(
        default=list, blank=True, help_text="Usernames of engineers who see its statements."
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.display_name or self.name


class StatementDelivery(models.Model):
    """One team's statement of one month to its owner: created (claimed) before the email is
    sent, so the month's statement goes out once whatever runs the sending again."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        SENT = "sent", "Sent"
        FAILED = "failed", "Failed"

    team = models.CharField(max_length=200)
    month = models.DateField()  # the month's first day
    target = models.EmailField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-month", "team"]
        constraints = [
            models.UniqueConstraint(fields=["team", "month"], name="statement_once_per_team_month")
        ]

    def __str__(self) -> str:
        return f"{self.team} {self.month:%Y-%m} → {self.target}: {self.status}"
