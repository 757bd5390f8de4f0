"""Structured reading of billing meter strings: token meters, GPU instances, everything else.

Its rules in full: `docs/formats.md`, section "Billing meters".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

KIND_TOKEN = "token"
KIND_GPU_INSTANCE = "gpu_instance"
KIND_OTHER = "other"
KIND_UNKNOWN = "unknown"

TIER_STANDARD = "standard"
TIERS = frozenset({"standard", "batch", "flex", "priority"})

# EC2 / SageMaker instance families with accelerators: NVIDIA GPUs (p, g, gr), AWS Trainium
# and Inferentia, Habana Gaudi (dl).
AWS_ACCELERATOR_FAMILIES = frozenset({"p", "g", "gr", "trn", "inf", "dl"})

# Service names (any provider, lower case) whose meters are AI usage; a meter of theirs that
# no grammar here reads is `unknown`, not `other`.
AI_SERVICE_WORDS = (
    "bedrock",
    "sagemaker",
    "openai",
    "cognitive",
    "foundry",
    "vertex",
    "gemini",
    "generative ai",
)
AI_METER_WORDS = re.compile(r"\b(?:tokens?|gpus?)\b", re.IGNORECASE)

_AWS_REGION_PREFIX = re.compile(r"^(?:[A-Z]{2,4}\d{1,2}|EU)-")

_BEDROCK_TOKEN = re.compile(
    r"^(?P<model>.+?)-(?:mantle-)?(?:(?:text|image|audio|video)-)?"
    r"(?P<token_class>input|output|cache-read|cache-write)"
    r"(?:-(?:image|audio|video))?-(?:input-)?tokens?(?:-count)?"
    r"(?P<suffix>(?:-[a-z0-9.]+)*)$",
    re.IGNORECASE,
)
_BEDROCK_CROSS_REGION_WORD = re.compile(r"-?cross-?region(?=-|$)", re.IGNORECASE)
# Bedrock Marketplace models: `MP:USE1_input_tokens_global_standard-Units` (snake) and
# `MP:USE1_CacheWrite1hInputTokenCount_Global-Units` (camel). The model is not in the text.
_BEDROCK_MARKETPLACE = re.compile(r"^MP:(?:[A-Z0-9]+_)?(?P<body>.+?)(?:-Units)?$")
_BEDROCK_CAMEL = re.compile(
    r"^(?:Million)?(?P<batch>Batch)?(?:Cache(?P<cache>Read|Write)(?:\d+[mh])?)?"
    r"(?P<direction>Input|Output)?Token(?:Count|s)$"
)
_MARKETPLACE_EDITION = " (Amazon Bedrock Edition)"

_INSTANCE_TYPE = (
    r"(?P<instance_type>(?P<ml>ml\.)?(?P<family>[a-z]+)\d+[a-z0-9-]*"
    r"\.(?:\d*x?large|medium|small|micro|nano|metal(?:-\d+xl)?))"
)
_AWS_USAGE_INSTANCE = re.compile(
    r"^(?:(?:[A-Z]{2,4}\d{1,2}|EU)-)?(?P<component>[A-Za-z][A-Za-z0-9-]*?):"
    r"(?:[A-Za-z]+-)?" + _INSTANCE_TYPE + r"$"
)
_INSTANCE_ANYWHERE = re.compile(r"(?<![\w.])" + _INSTANCE_TYPE + r"(?![\w])")

# Azure N-series VM meters: `ND96isr H100 v5`, `NC24ads A100 v4 Spot`, `NC6s v3`, and the ARM
# size spelling `Standard_ND96isr_H100_v5`.
_AZURE_GPU_VM = re.compile(
    r"^(?:Standard[_ ])?(?P<size>N(?P<series>[CDVG])\d+[a-z]*)"
    r"(?:[_ ](?P<accelerator>[A-Z]+\d+[A-Za-z]*))?(?:[_ ](?P<version>v\d+))?"
    r"(?:\s+(?:Spot|Low Priority))?$"
)

_AZURE_WORD_SPLIT = re.compile(r"[\s_-]+")
_AZURE_TOKEN_SUFFIX = re.compile(r"\s+tokens?$", re.IGNORECASE)
_AZURE_SHORT_DIRECTIONS = {"inp": "input", "outp": "output"}
_AZURE_LONG_DIRECTIONS = {"input": "input", "output": "output"}
_AZURE_CACHED = frozenset({"cached", "cchd", "cache"})
_AZURE_DEPLOYMENTS = {
    "glbl": "global",
    "global": "global",
    "regnl": "regional",
    "rgnl": "regional",
    "regional": "regional",
    "dzone": "datazone",
    "datazone": "datazone",
    "dz": "datazone",
}
_AZURE_TIERS = {"batch": "batch", "flex": "flex", "priority": "priority", "prty": "priority"}
_CROSS_REGION_DEPLOYMENTS = frozenset({"global", "geo", "datazone"})

_GCP_TOKEN = re.compile(
    r"^(?P<model>.+?)\s+(?:(?:Text|Image|Audio|Video)(?:\s+and\s+Thinking)?\s+)?"
    r"(?P<cached>Cached\s+)?(?:Text\s+)?(?P<direction>Input|Output)\b(?P<rest>.*)$",
    re.IGNORECASE,
)
_GCP_TOKEN_CONTEXT = re.compile(r"gemini|palm|claude|llama|token|text|character", re.IGNORECASE)

_BLOCK_SIZE = re.compile(r"^\s*(?P<number>\d+)\s*(?P<scale>[KM])?(?![A-Za-z])", re.IGNORECASE)
_BLOCK_SCALES = {"": 1, "k": 1_000, "m": 1_000_000}


@dataclass(frozen=True, kw_only=True)
class ParsedMeter:
    """What one billing meter string says, field by field (see the module docstring)."""

    kind: str
    model: str = ""
    token_class: str = ""
    tier: str = ""
    cross_region: bool = False
    block_size: int = 1
    deployment: str = ""
    instance_type: str = ""
    instance_family: str = ""
    sagemaker_role: str = ""
    raw: str = ""


def parse_meter(
    *, provider: str, sku: str, unit: str = "", description: str = "", service: str = ""
) -> ParsedMeter:
    """Read a meter string; `provider` is the short name (aws, azure, gcp, ...).

    `unit` gives the block size (`1K`, `1M`, `1K tokens`, `10K`, `100 Hours`); `description`
    is searched for a GPU instance type when the meter itself names none (FOCUS rows from AWS
    carry only an opaque SkuId, but their ChargeDescription names the instance).
    """
    return _parse_meter_cached(
        provider.strip().lower(), sku.strip(), unit.strip(), description.strip(), service.strip()
    )


def block_size_from_unit(unit: str) -> int:
    """Units per billed quantity: `1K` → 1000, `1M` → 1_000_000, `10K` → 10000, `Hrs` → 1."""
    match = _BLOCK_SIZE.match(unit)
    if match is None:
        return 1
    return int(match["number"]) * _BLOCK_SCALES[(match["scale"] or "").lower()] or 1


@lru_cache(maxsize=8192)
def _parse_meter_cached(
    provider: str, sku: str, unit: str, description: str, service: str
) -> ParsedMeter:
    # Bills repeat the same few hundred meters millions of times, hence the cache.
    block_size = block_size_from_unit(unit)
    parsers = _PARSERS_BY_PROVIDER.get(provider, _ALL_PARSERS)
    for parser in parsers:
        parsed = parser(sku, service, block_size)
        if parsed is not None:
            return parsed
    from_description = _accelerator_instance_in(description, raw=sku, block_size=block_size)
    if from_description is not None:
        return from_description
    looks_ai = AI_METER_WORDS.search(sku) is not None or any(
        word in service.lower() for word in AI_SERVICE_WORDS
    )
    return ParsedMeter(
        kind=KIND_UNKNOWN if looks_ai else KIND_OTHER, block_size=block_size, raw=sku
    )


# ---------------------------------------------------------------------------------------------
# AWS: Bedrock usage types, EC2 and SageMaker instances
# ---------------------------------------------------------------------------------------------


def _bedrock_token(sku: str, service: str, block_size: int) -> ParsedMeter | None:
    body = _AWS_REGION_PREFIX.sub("", sku, count=1)
    if body.startswith("MP:"):
        return _bedrock_marketplace_token(body, sku=sku, service=service, block_size=block_size)
    match = _BEDROCK_TOKEN.match(body)
    if match is None:
        return None
    model = match["model"]
    # `USE1-Claude3.5Sonnet-CrossRegion-input-tokens`: a marker inside the model part.
    cross_region = _BEDROCK_CROSS_REGION_WORD.search(model) is not None
    model = _BEDROCK_CROSS_REGION_WORD.sub("", model).strip("-")
    token_class = match["token_class"].lower().replace("-", "_")
    tier = TIER_STANDARD
    deployment = ""
    words = [word for word in match["suffix"].lower().split("-") if word]
    for index, word in enumerate(words):
        if word in TIERS:
            tier = word
        elif word in ("global", "geo"):
            cross_region = True
            deployment = word
        elif word == "cross" and words[index + 1 : index + 2] == ["region"]:
            cross_region = True
    return ParsedMeter(
        kind=KIND_TOKEN,
        model=model,
        token_class=token_class,
        tier=tier,
        cross_region=cross_region,
        block_size=block_size,
        deployment=deployment,
        raw=sku,
    )


def _bedrock_marketplace_token(
    body: str, *, sku: str, service: str, block_size: int
) -> ParsedMeter | None:
    match = _BEDROCK_MARKETPLACE.match(body)
    if match is None:
        return None
    segments = match["body"].split("_")
    token_class = ""
    tier = TIER_STANDARD
    qualifiers: list[str] = []
    camel = _BEDROCK_CAMEL.match(segments[0])
    if camel is not None:
        if camel["cache"]:
            token_class = f"cache_{camel['cache'].lower()}"
        elif camel["direction"]:
            token_class = camel["direction"].lower()
        if camel["batch"]:
            tier = "batch"
        qualifiers = [segment.lower() for segment in segments[1:]]
    else:
        lowered = [segment.lower() for segment in segments]
        if lowered[:2] in (["cache", "read"], ["cache", "write"]):
            token_class, lowered = f"cache_{lowered[1]}", lowered[2:]
        elif lowered[:1] in (["input"], ["output"]):
            token_class, lowered = lowered[0], lowered[1:]
        if lowered[:1] != ["tokens"]:
            return None
        qualifiers = lowered[1:]
    if not token_class:
        return None
    deployment = ""
    for word in qualifiers:
        if word in TIERS:
            tier = word
        elif word in ("global", "geo"):
            deployment = word
    # The usage type does not name the model; the product name ("... (Amazon Bedrock
    # Edition)") does, when the importer passes it as `service`.
    model = (
        service.removesuffix(_MARKETPLACE_EDITION) if service.endswith(_MARKETPLACE_EDITION) else ""
    )
    return ParsedMeter(
        kind=KIND_TOKEN,
        model=model,
        token_class=token_class,
        tier=tier,
        cross_region=bool(deployment),
        block_size=block_size,
        deployment=deployment,
        raw=sku,
    )


def _aws_instance(sku: str, service: str, block_size: int) -> ParsedMeter | None:
    match = _AWS_USAGE_INSTANCE.match(sku)
    if match is None:
        match = _INSTANCE_ANYWHERE.search(sku)
        if match is None:
            return None
        component = ""
    else:
        component = match["component"]
    family = match["family"]
    return ParsedMeter(
        kind=KIND_GPU_INSTANCE if family in AWS_ACCELERATOR_FAMILIES else KIND_OTHER,
        block_size=block_size,
        instance_type=match["instance_type"],
        instance_family=family,
        sagemaker_role=component if match["ml"] else "",
        raw=sku,
    )


def _accelerator_instance_in(text: str, *, raw: str, block_size: int) -> ParsedMeter | None:
    for match in _INSTANCE_ANYWHERE.finditer(text):
        if match["family"] in AWS_ACCELERATOR_FAMILIES:
            return ParsedMeter(
                kind=KIND_GPU_INSTANCE,
                block_size=block_size,
                instance_type=match["instance_type"],
                instance_family=match["family"],
                raw=raw,
            )
    return None


# ---------------------------------------------------------------------------------------------
# Azure: OpenAI / Foundry token meters and N-series GPU VMs
# ---------------------------------------------------------------------------------------------


def _azure_token(sku: str, service: str, block_size: int) -> ParsedMeter | None:
    says_tokens = _AZURE_TOKEN_SUFFIX.search(sku) is not None
    name = _AZURE_TOKEN_SUFFIX.sub("", sku)
    words = [word for word in _AZURE_WORD_SPLIT.split(name) if word]
    ai_service = any(word in service.lower() for word in AI_SERVICE_WORDS)
    # "Input"/"Output" also name data-transfer meters, so the long spellings need a sign that
    # this is a token meter; "Inp"/"Outp" appear only on model meters.
    long_ok = says_tokens or ai_service or block_size >= 1_000
    model_words: list[str] = []
    direction = ""
    cached = False
    deployment = ""
    tier = TIER_STANDARD
    markers_started = False
    lowered_words = [word.lower() for word in words]
    for index, lowered in enumerate(lowered_words):
        if lowered in _AZURE_SHORT_DIRECTIONS or (long_ok and lowered in _AZURE_LONG_DIRECTIONS):
            direction = _AZURE_SHORT_DIRECTIONS.get(lowered) or _AZURE_LONG_DIRECTIONS[lowered]
        elif lowered in _AZURE_CACHED:
            cached = True
        elif lowered in _AZURE_DEPLOYMENTS:
            deployment = _AZURE_DEPLOYMENTS[lowered]
        elif lowered == "data" and lowered_words[index + 1 : index + 2] == ["zone"]:
            deployment = "datazone"
        elif lowered == "zone" and deployment == "datazone":
            pass
        elif lowered in _AZURE_TIERS:
            tier = _AZURE_TIERS[lowered]
        else:
            if not markers_started:
                model_words.append(words[index])
            continue
        markers_started = True
    if not direction:
        return None
    token_class = "cache_read" if cached and direction == "input" else direction
    return ParsedMeter(
        kind=KIND_TOKEN,
        model="-".join(model_words),
        token_class=token_class,
        tier=tier,
        cross_region=deployment in _CROSS_REGION_DEPLOYMENTS,
        block_size=block_size,
        deployment=deployment,
        raw=sku,
    )


def _azure_gpu_vm(sku: str, service: str, block_size: int) -> ParsedMeter | None:
    match = _AZURE_GPU_VM.match(sku)
    if match is None:
        return None
    parts = [match["size"], match["accelerator"], match["version"]]
    return ParsedMeter(
        kind=KIND_GPU_INSTANCE,
        block_size=block_size,
        instance_type="_".join(part for part in parts if part),
        instance_family=f"n{match['series'].lower()}",
        raw=sku,
    )


# ---------------------------------------------------------------------------------------------
# GCP: Vertex AI / Gemini SKU descriptions
# ---------------------------------------------------------------------------------------------


def _gcp_token(sku: str, service: str, block_size: int) -> ParsedMeter | None:
    match = _GCP_TOKEN.match(sku)
    if match is None:
        return None
    ai_service = any(word in service.lower() for word in AI_SERVICE_WORDS)
    if not ai_service and _GCP_TOKEN_CONTEXT.search(sku) is None:
        return None
    direction = match["direction"].lower()
    rest = match["rest"].lower()
    tier = next((word for word in ("batch", "flex", "priority") if word in rest), TIER_STANDARD)
    return ParsedMeter(
        kind=KIND_TOKEN,
        model=match["model"],
        token_class="cache_read" if match["cached"] and direction == "input" else direction,
        tier=tier,
        block_size=block_size,
        raw=sku,
    )


_ALL_PARSERS = (_bedrock_token, _aws_instance, _azure_token, _azure_gpu_vm, _gcp_token)
_PARSERS_BY_PROVIDER = {
    "aws": (_bedrock_token, _aws_instance),
    "azure": (_azure_token, _azure_gpu_vm),
    "gcp": (_gcp_token,),
}
