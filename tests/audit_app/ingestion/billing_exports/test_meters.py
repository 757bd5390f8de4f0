"""Meter parsing: Bedrock usage types, Azure OpenAI meter names, GPU instances, the rest.

The meter strings are the spellings documented in shared/reference/formats-billing.md (AWS
Bedrock CUR guide, Price List usage types, Azure Retail Prices / cost exports). Each expected
value is read off the string by hand.
"""

from __future__ import annotations

from typing import Any

import pytest

from audit_app.ingestion.billing_exports.meters import (
    ParsedMeter,
    block_size_from_unit,
    parse_meter,
)


def token(model: str, token_class: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "token",
        "model": model,
        "token_class": token_class,
        "tier": "standard",
        **extra,
    }


def gpu(instance_type: str, family: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "gpu_instance",
        "instance_type": instance_type,
        "instance_family": family,
        **extra,
    }


CASES = [
    # --- AWS Bedrock usage types -------------------------------------------------------------
    ("aws", "USE1-Claude3.5Sonnet-input-tokens", "", "", token("Claude3.5Sonnet", "input")),
    ("aws", "USW2-Llama3-70B-output-tokens", "", "", token("Llama3-70B", "output")),
    (
        "aws",
        "USE1-Claude4Sonnet-cache-read-input-token-count",
        "1K tokens",
        "",
        token("Claude4Sonnet", "cache_read", block_size=1000),
    ),
    (
        "aws",
        "USE1-Claude4Sonnet-cache-write-input-token-count",
        "",
        "",
        token("Claude4Sonnet", "cache_write"),
    ),
    (
        "aws",
        "USE1-Llama4-Maverick-17B-input-tokens-batch",
        "",
        "",
        token("Llama4-Maverick-17B", "input", tier="batch"),
    ),
    (
        "aws",
        "USE1-Nova2.0Lite-input-tokens-flex",
        "",
        "",
        token("Nova2.0Lite", "input", tier="flex"),
    ),
    (
        "aws",
        "USE1-gpt-oss-120b-output-tokens-priority",
        "",
        "",
        token("gpt-oss-120b", "output", tier="priority"),
    ),
    (
        "aws",
        "USE1-Claude4.6Sonnet-output-tokens-cross-region-global",
        "",
        "",
        token("Claude4.6Sonnet", "output", cross_region=True, deployment="global"),
    ),
    (
        "aws",
        "USE1-Nova2.0Lite-input-tokens-cross-region-global-batch",
        "",
        "",
        token("Nova2.0Lite", "input", tier="batch", cross_region=True, deployment="global"),
    ),
    (
        "aws",
        "USE1-Nova2.0Pro-text-input-tokens-priority-cross-region-global",
        "",
        "",
        token("Nova2.0Pro", "input", tier="priority", cross_region=True, deployment="global"),
    ),
    (
        "aws",
        "USE1-Claude3.5Sonnet-CrossRegion-input-tokens",
        "",
        "",
        token("Claude3.5Sonnet", "input", cross_region=True),
    ),
    (
        "aws",
        "USE1-openai.gpt-oss-120b-mantle-input-tokens-standard",
        "",
        "",
        token("openai.gpt-oss-120b", "input"),
    ),
    (
        "aws",
        "USE1-anthropic.claude-opus-5-mantle-cache-read-tokens-global-standard",
        "",
        "",
        token("anthropic.claude-opus-5", "cache_read", cross_region=True, deployment="global"),
    ),
    (
        "aws",
        "USE1-Claude4Sonnet-output-tokens-long-context-cross-region-global",
        "",
        "",
        token("Claude4Sonnet", "output", cross_region=True, deployment="global"),
    ),
    (
        "aws",
        "USE1-MP:USE1_CacheWrite1hInputTokenCount_Global-Units",
        "",
        "Claude 3.7 Sonnet (Amazon Bedrock Edition)",
        token("Claude 3.7 Sonnet", "cache_write", cross_region=True, deployment="global"),
    ),
    (
        "aws",
        "USE1-MP:USE1_MillionBatchInputTokens-Units",
        "1M tokens",
        "",
        token("", "input", tier="batch", block_size=1_000_000),
    ),
    # --- AWS GPU / accelerator instances ---------------------------------------------------------
    ("aws", "BoxUsage:p5.48xlarge", "Hrs", "AmazonEC2", gpu("p5.48xlarge", "p")),
    ("aws", "USE1-BoxUsage:g5.2xlarge", "Hrs", "AmazonEC2", gpu("g5.2xlarge", "g")),
    ("aws", "USE1-BoxUsage:trn1.32xlarge", "Hrs", "AmazonEC2", gpu("trn1.32xlarge", "trn")),
    ("aws", "USE2-BoxUsage:trn2.48xlarge", "Hrs", "AmazonEC2", gpu("trn2.48xlarge", "trn")),
    ("aws", "BoxUsage:inf2.xlarge", "Hrs", "AmazonEC2", gpu("inf2.xlarge", "inf")),
    ("aws", "EUW1-BoxUsage:inf2.8xlarge", "Hrs", "AmazonEC2", gpu("inf2.8xlarge", "inf")),
    ("aws", "trn1.32xlarge", "", "", gpu("trn1.32xlarge", "trn")),
    ("aws", "UnusedDed:p5.48xlarge", "Hrs", "AmazonEC2", gpu("p5.48xlarge", "p")),
    ("aws", "BoxUsage:p6-b200.48xlarge", "Hrs", "AmazonEC2", gpu("p6-b200.48xlarge", "p")),
    (
        "aws",
        "USE1-Host:ml.g5.2xlarge",
        "Hrs",
        "AmazonSageMaker",
        gpu("ml.g5.2xlarge", "g", sagemaker_role="Host"),
    ),
    (
        "aws",
        "Train:ml.p4d.24xlarge",
        "Hrs",
        "AmazonSageMaker",
        gpu("ml.p4d.24xlarge", "p", sagemaker_role="Train"),
    ),
    (
        "aws",
        "USE1-AsyncInf:ml.g6e.2xlarge",
        "Hrs",
        "AmazonSageMaker",
        gpu("ml.g6e.2xlarge", "g", sagemaker_role="AsyncInf"),
    ),
    # CPU instances are ordinary compute: "other", but the instance type is still read.
    (
        "aws",
        "BoxUsage:m5.large",
        "Hrs",
        "AmazonEC2",
        {"kind": "other", "instance_type": "m5.large", "instance_family": "m"},
    ),
    (
        "aws",
        "USE1-Studio:JupyterLab-ml.r6i.4xlarge",
        "Hrs",
        "AmazonSageMaker",
        {
            "kind": "other",
            "instance_type": "ml.r6i.4xlarge",
            "instance_family": "r",
            "sagemaker_role": "Studio",
        },
    ),
    # --- Azure OpenAI meter names --------------------------------------------------------------
    (
        "azure",
        "gpt-4o-mini-0718-Inp-glbl Tokens",
        "1K",
        "Cognitive Services",
        token("gpt-4o-mini-0718", "input", cross_region=True, deployment="global", block_size=1000),
    ),
    (
        "azure",
        "gpt-4o-0513-Outp-regnl Tokens",
        "1M",
        "Cognitive Services",
        token("gpt-4o-0513", "output", deployment="regional", block_size=1_000_000),
    ),
    (
        "azure",
        "gpt 4o 0513 Input global Tokens",
        "1K",
        "",
        token("gpt-4o-0513", "input", cross_region=True, deployment="global", block_size=1000),
    ),
    (
        "azure",
        "gpt 4o 1120 cached Inp glbl",
        "1K",
        "Cognitive Services",
        token("gpt-4o-1120", "cache_read", cross_region=True, deployment="global", block_size=1000),
    ),
    (
        "azure",
        "gpt-4o-mini-0718-cached-Inp-DZone Tokens",
        "1K",
        "",
        token(
            "gpt-4o-mini-0718",
            "cache_read",
            cross_region=True,
            deployment="datazone",
            block_size=1000,
        ),
    ),
    (
        "azure",
        "gpt-4o-0806-Batch-Inp-glbl Tokens",
        "1K",
        "",
        token(
            "gpt-4o-0806",
            "input",
            tier="batch",
            cross_region=True,
            deployment="global",
            block_size=1000,
        ),
    ),
    (
        "azure",
        "gpt-35-turbo-4k-Input-regional",
        "1K",
        "Cognitive Services",
        token("gpt-35-turbo-4k", "input", deployment="regional", block_size=1000),
    ),
    (
        "azure",
        "R1 Inp glbl Tokens",
        "1M",
        "Foundry Models",
        token("R1", "input", cross_region=True, deployment="global", block_size=1_000_000),
    ),
    # --- Azure GPU VMs ---------------------------------------------------------------------------
    ("azure", "ND96isr H100 v5", "1 Hour", "Virtual Machines", gpu("ND96isr_H100_v5", "nd")),
    ("azure", "NC24ads A100 v4 Spot", "1 Hour", "Virtual Machines", gpu("NC24ads_A100_v4", "nc")),
    ("azure", "NC6s v3", "1 Hour", "Virtual Machines", gpu("NC6s_v3", "nc")),
    ("azure", "NV36ads A10 v5", "1 Hour", "Virtual Machines", gpu("NV36ads_A10_v5", "nv")),
    # Ls-series is storage optimised, not an NVIDIA L4: an ordinary VM.
    ("azure", "L4s Spot", "1 Hour", "Virtual Machines", {"kind": "other"}),
    # --- GCP Vertex AI ------------------------------------------------------------------------
    (
        "gcp",
        "Gemini 2.5 Pro Text Input (≤200k)",
        "",
        "Vertex AI",
        token("Gemini 2.5 Pro", "input"),
    ),
    (
        "gcp",
        "Gemini 2.5 Pro Text and Thinking Output (≤200k)",
        "",
        "Vertex AI",
        token("Gemini 2.5 Pro", "output"),
    ),
    # --- ordinary meters and unknown ones ------------------------------------------------------
    ("aws", "USW2-Requests-Tier1", "Requests", "AmazonS3", {"kind": "other"}),
    ("aws", "USW2-TimedStorage-ByteHrs", "GB-Mo", "AmazonS3", {"kind": "other"}),
    ("aws", "USE1-CAN1-AWS-Out-Bytes", "GB", "AWSDataTransfer", {"kind": "other"}),
    (
        "azure",
        "Hot LRS Write Operations",
        "10K",
        "Storage",
        {"kind": "other", "block_size": 10_000},
    ),
    ("azure", "Intra-Region Ingress", "1 GB", "Virtual Network", {"kind": "other"}),
    ("aws", "", "", "AWSCloudTrail", {"kind": "other"}),
    # AI services and token / GPU words with a grammar this module does not know: flagged.
    ("aws", "USE1-Claude-ModelUnits-1month", "", "AmazonBedrock", {"kind": "unknown"}),
    (
        "azure",
        "gpt-4o Provisioned Managed Global",
        "1 Hour",
        "Cognitive Services",
        {"kind": "unknown"},
    ),
    ("gcp", "Nvidia H100 80GB GPU running in Americas", "", "Compute Engine", {"kind": "unknown"}),
    ("oracle", "GPU - A10", "", "COMPUTE", {"kind": "unknown"}),
]


@pytest.mark.parametrize(("provider", "sku", "unit", "service", "expected"), CASES)
def test_parse_meter(
    provider: str, sku: str, unit: str, service: str, expected: dict[str, Any]
) -> None:
    meter = parse_meter(provider=provider, sku=sku, unit=unit, service=service)
    defaults = ParsedMeter(kind=expected["kind"], raw=sku)
    assert meter == ParsedMeter(**{**defaults.__dict__, **expected})


def test_there_are_enough_table_cases() -> None:
    assert len(CASES) >= 25
    assert {case[4]["kind"] for case in CASES} == {"token", "gpu_instance", "other", "unknown"}


def test_unknown_meter_keeps_the_raw_text() -> None:
    meter = parse_meter(provider="aws", sku="USE1-SomethingNew-xyz", service="AmazonBedrock")
    assert meter.kind == "unknown"
    assert meter.raw == "USE1-SomethingNew-xyz"


def test_gpu_instance_found_in_the_description_when_the_sku_is_opaque() -> None:
    # FOCUS rows from AWS carry only an opaque SkuId; the description names the instance.
    meter = parse_meter(
        provider="aws",
        sku="4GQWNPC9K2PZAY97",
        unit="Hours",
        description="$1.624 per On Demand Linux g5.4xlarge Instance Hour",
    )
    assert (meter.kind, meter.instance_type, meter.instance_family, meter.raw) == (
        "gpu_instance",
        "g5.4xlarge",
        "g",
        "4GQWNPC9K2PZAY97",
    )


def test_cpu_instance_in_the_description_is_not_a_gpu() -> None:
    meter = parse_meter(
        provider="aws",
        sku="F9GPUA3E29X6GJVE",  # "GPU" inside an opaque id is not the word GPU
        description="$0.0116 per On Demand Linux t2.micro Instance Hour",
    )
    assert meter.kind == "other"


def test_data_transfer_output_is_not_a_token_meter() -> None:
    # The long spelling "Output" needs a token context (Tokens, an AI service or a 1K unit).
    meter = parse_meter(
        provider="azure", sku="Data Transfer Output", unit="1 GB", service="Bandwidth"
    )
    assert meter.kind == "other"


@pytest.mark.parametrize(
    ("unit", "expected"),
    [
        ("1K", 1_000),
        ("1M", 1_000_000),
        ("1K tokens", 1_000),
        ("1M tokens", 1_000_000),
        ("10K", 10_000),
        ("100 Hours", 100),
        ("1 Hour", 1),
        ("1 GB", 1),
        ("1 MB", 1),
        ("Hrs", 1),
        ("", 1),
        ("Tokens", 1),
    ],
)
def test_block_size_from_unit(unit: str, expected: int) -> None:
    assert block_size_from_unit(unit) == expected
