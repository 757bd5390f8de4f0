"""What a price sync adds: the dataset's cards set against the cards already kept.

Pure module (no Django). Rules (docs/using.md, "Where prices come from"):
- A dataset model is the same model as a kept card when their names match
  (`pricing.card_model_name`) or the dataset's match rule matches the card's name
  (``claude-sonnet-4-5`` is the catalog's ``claude-sonnet-4-5 (Vertex)``); its new cards then
  take the kept card's name, so the history of one model stays one list.
- A model with no card gets the dataset's whole price history.
- A kept model gets a dataset price only when it starts after the model's latest card and
  differs from the price in effect then: kept cards (the shipped catalog's, earlier syncs',
  hand-entered ones) are history, never rewritten, and a sync never deletes a card.
- A model with a local override (a card entered or edited by hand) gets nothing: the override
  wins until an admin removes it.
- A kept catalog or dataset card learns what the dataset knows and it left empty (cache-write
  price, long-context tier, per-request and batch prices) when the prices it has agree with
  the dataset's price in effect on its day; and it takes the dataset's match rule (aliases)
  when it has none. No price a card has is ever changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date

from audit_app.costs.dataset import DatasetCard
from audit_app.costs.pricing import PRICE_FIELDS, card_model_name, rule_matches

ORIGIN_LOCAL = "local"


@dataclass(frozen=True, kw_only=True)
class KeptCard:
    """A card already in the database, as the sync compares it."""

    id: int
    provider: str
    model: str
    valid_from: date
    origin: str
    has_rule: bool
    prices: tuple[object, ...]  # `DatasetCard.prices` order


@dataclass(frozen=True, kw_only=True)
class PriceDifference:
    """A dataset price that differs from a kept card's but starts before it: not added."""

    provider: str
    model: str
    kept_valid_from: date
    dataset_valid_from: date


@dataclass(kw_only=True)
class SyncPlan:
    added: list[DatasetCard] = field(default_factory=list)
    new_models: int = 0
    new_prices: int = 0  # cards added to models that had cards
    rules_for: dict[int, Mapping[str, object]] = field(default_factory=dict)  # kept card id
    completions: dict[int, dict[str, object]] = field(default_factory=dict)  # kept card id
    local_overrides: list[tuple[str, str]] = field(default_factory=list)
    differences: list[PriceDifference] = field(default_factory=list)


def plan_sync(kept: Iterable[KeptCard], dataset: Sequence[DatasetCard]) -> SyncPlan:
    by_model: dict[tuple[str, str], list[KeptCard]] = defaultdict(list)
    for card in kept:
        by_model[(card.provider, card_model_name(card.model))].append(card)
    names_by_provider: dict[str, list[str]] = defaultdict(list)
    for provider, name in sorted(by_model):
        names_by_provider[provider].append(name)
    plan = SyncPlan()
    handled: set[tuple[str, str]] = set()
    for (provider, model_id), versions in _group(dataset).items():
        rule = versions[0].match_rule
        kept_name = _kept_name(model_id, rule, names_by_provider.get(provider, []))
        cards = by_model.get((provider, kept_name), []) if kept_name else []
        card_name = cards[0].model if cards else model_id
        # The first dataset model that names a card decides it (the dataset's own rule: the
        # first model that matches a name prices it).
        if (provider, card_model_name(card_name)) in handled:
            continue
        handled.add((provider, card_model_name(card_name)))
        if any(card.origin == ORIGIN_LOCAL for card in cards):
            plan.local_overrides.append((provider, card_name))
            continue
        versions = [replace(v, model=card_name) for v in versions]
        for card in cards:
            if not card.has_rule and rule:
                plan.rules_for[card.id] = rule
        if cards:
            latest = max(cards, key=lambda card: card.valid_from)
            _complete(latest, versions, plan)
            added = _additions(versions, latest)
            plan.new_prices += len(added)
        else:
            added = versions
            plan.new_models += 1
        plan.added.extend(added)
    return plan


def _group(dataset: Sequence[DatasetCard]) -> dict[tuple[str, str], list[DatasetCard]]:
    grouped: dict[tuple[str, str], list[DatasetCard]] = defaultdict(list)
    for card in dataset:
        grouped[(card.provider, card.model)].append(card)
    for versions in grouped.values():
        versions.sort(key=lambda card: card.valid_from)
    return grouped


def _kept_name(model_id: str, rule: Mapping[str, object] | None, names: list[str]) -> str | None:
    wanted = card_model_name(model_id)
    if wanted in names:
        return wanted
    if rule:
        return next((name for name in names if rule_matches(rule, name)), None)
    return None


def _additions(versions: list[DatasetCard], latest: KeptCard) -> list[DatasetCard]:
    """The dataset's prices that start after the latest kept card, each differing from the
    price in effect before it."""
    added: list[DatasetCard] = []
    in_effect = latest.prices
    for version in versions:
        if version.valid_from > latest.valid_from and version.prices() != in_effect:
            in_effect = version.prices()
            added.append(version)
    return added


def _complete(latest: KeptCard, versions: list[DatasetCard], plan: SyncPlan) -> None:
    """Fill what ``latest`` left empty from the dataset price in effect on its day, when no
    price both give differs; when one does, the kept card stays as it is (reported)."""
    in_effect = [v for v in versions if v.valid_from <= latest.valid_from]
    if not in_effect:
        return
    theirs = in_effect[-1].prices()
    pairs = list(zip(PRICE_FIELDS, latest.prices, theirs, strict=True))
    if any(m is not None and t is not None and m != t for _, m, t in pairs):
        plan.differences.append(
            PriceDifference(
                provider=latest.provider,
                model=latest.model,
                kept_valid_from=latest.valid_from,
                dataset_valid_from=in_effect[-1].valid_from,
            )
        )
        return
    filled: dict[str, object] = {name: t for name, m, t in pairs if m is None and t is not None}
    if filled:
        plan.completions[latest.id] = filled
