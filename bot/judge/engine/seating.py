"""Who judges: the configured panel, and the four-eyes seating for one change.

`build_panel` turns the configuration into seats (one provider per endpoint, so tiers
on the same endpoint share its structured-output memory). `seat_panel` then applies
the four-eyes rule to one change: no model family that authored the change judges
it. A replaced tier takes any other configured model of an independent family (its
alternates first, then other tiers' alternates and models) before it is left empty:
trailers may exclude a family, never thin the panel while a judge is left. It is
pure, so the engine can compute the seating before anything is counted against a
budget, and the verdict cache can key on exactly who would judge.

Families are declared, models are served: two tiers declared as different families can
still be one model on one endpoint (`JUDGE_DEEP_FAMILY` set to get past the shared-family
check, or a local server whose every name is one model). Their agreement is then one
model agreeing with itself. `shared_models` finds such tiers, whatever their families;
the engine warns at start and names them in the record's reason
(`shared_model_note`), never silently counting them as two judges.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

import httpx

from bot.judge.providers import (
    OUTPUT_MODES,
    LLMProvider,
    OutputMode,
    StructuredOutputMemory,
    make_provider,
)
from bot.judge.providers.server_facts import ContextFacts, ContextMemory
from bot.judge.records import Tier
from bot.judge.settings import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    TIER_ORDER,
    Endpoint,
    JudgeSettings,
    seat_host,
)


@dataclass(frozen=True)
class ContextProbe:
    """Where a seat's model's context is found: its endpoint (a setting, or its server:
    bot/judge/providers/server_facts.py), through the memory the panel shares."""

    memory: ContextMemory
    client: httpx.AsyncClient
    endpoint: Endpoint

    async def facts(self) -> ContextFacts:
        return await self.memory.context_of(self.client, self.endpoint)

    def learn(self, tokens: int) -> None:
        """The server said its context while refusing a prompt: later calls fit it."""
        self.memory.learn(self.endpoint.base_url, self.endpoint.model, tokens)


@dataclass(frozen=True)
class Seat:
    """A model that can sit at a tier: its family, endpoint and limits."""

    model: str
    family: str
    provider: LLMProvider
    timeout: float
    max_chars: int
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    """The answer length limit sent with each call (the tier's own, else the global)."""
    output_mode: OutputMode | None = None
    """A structured-output mode fixed by the settings; None negotiates (the model's
    server, not the seat, decides it: a stand-in keeps its own)."""
    temperature: float = 0.0
    context: ContextProbe | None = None
    """Where its model's context is found (a stand-in keeps its own: the model's server
    decides it); None: unknown, the seat reads `max_chars`."""


@dataclass(frozen=True)
class JudgePanel:
    tiers: Mapping[Tier, Seat]
    alternates: Mapping[Tier, Sequence[Seat]] = field(default_factory=dict)


@dataclass(frozen=True)
class Seating:
    """Who judges at one tier for this change (None: nobody independent is left)."""

    seat: Seat | None
    substituted_for: str | None = None
    reason: str | None = None


def seat_panel(
    panel: JudgePanel, authoring: Sequence[str], *, allow_shared_family: bool
) -> dict[Tier, Seating]:
    """Four-eyes: no tier whose family authored the change judges it.

    A replaced tier takes the first model of `_candidates` whose family neither
    authored the change nor, unless shared families are allowed, already sits at
    another tier; only when none fits is the seat left empty. Pure: the same panel and
    authors give the same seating.
    """
    authored = {family.lower() for family in authoring}
    kept = {tier: seat for tier, seat in panel.tiers.items() if seat.family.lower() not in authored}
    used = {seat.family.lower() for seat in kept.values()}
    out: dict[Tier, Seating] = {}
    for tier in TIER_ORDER:
        configured = panel.tiers.get(tier)
        if configured is None:
            continue
        if tier in kept:
            out[tier] = Seating(configured)
            continue
        replaced = configured.family.lower()
        for candidate in _candidates(panel, tier):
            family = candidate.family.lower()
            if family in authored or (not allow_shared_family and family in used):
                continue
            used.add(family)
            out[tier] = Seating(candidate, substituted_for=replaced)
            break
        else:
            out[tier] = Seating(
                None,
                substituted_for=replaced,
                reason=f"four-eyes: the {tier.value} judge's family ({replaced}) authored the "
                "change and no other configured model of an independent family is available",
            )
    return out


def _candidates(panel: JudgePanel, tier: Tier) -> list[Seat]:
    """Who may stand in for `tier`, in order: its own alternates, the other tiers'
    alternates, then the other tiers' configured models.

    Authorship must never thin the panel while an independent configured model is
    left, since a missing tier makes the protocol lean on fewer judges. A model from
    another tier's list works under this tier's limits (time, characters, answer
    length): the seat, not the model, decides how much a judge reads."""
    configured = panel.tiers[tier]
    own = list(panel.alternates.get(tier, ()))
    others = [t for t in TIER_ORDER if t is not tier and t in panel.tiers]
    borrowed = [s for t in others for s in panel.alternates.get(t, ())]
    borrowed += [panel.tiers[t] for t in others]
    out: list[Seat] = []
    seen: set[tuple[str, str, str]] = set()
    for seat in [*own, *(_at_limits_of(configured, s) for s in borrowed)]:
        key = _identity(seat)
        if key not in seen:
            seen.add(key)
            out.append(seat)
    return out


def _at_limits_of(configured: Seat, seat: Seat) -> Seat:
    return replace(
        seat,
        timeout=configured.timeout,
        max_chars=configured.max_chars,
        max_output_tokens=configured.max_output_tokens,
        temperature=configured.temperature,
    )


def _identity(seat: Seat) -> tuple[str, str, str]:
    """A model where it is served (one model listed for several tiers is one candidate)."""
    provider = seat.provider
    return (seat.model, getattr(provider, "kind", ""), getattr(provider, "base_url", ""))


def build_panel(
    settings: JudgeSettings,
    client: httpx.AsyncClient,
    *,
    memory: StructuredOutputMemory | None = None,
    contexts: ContextMemory | None = None,
) -> JudgePanel:
    """Seats for every configured tier and alternate; one provider per endpoint."""
    memory = memory if memory is not None else StructuredOutputMemory()
    contexts = contexts if contexts is not None else ContextMemory()
    providers: dict[tuple[str, str, str], LLMProvider] = {}

    def seat(endpoint: Endpoint) -> Seat:
        key = endpoint.endpoint_key()
        if key not in providers:
            providers[key] = make_provider(
                endpoint.provider, client, endpoint.base_url, key[2], memory=memory
            )
        return Seat(
            model=endpoint.model,
            family=endpoint.family,
            provider=providers[key],
            timeout=endpoint.timeout,
            max_chars=endpoint.max_chars,
            max_output_tokens=endpoint.max_output_tokens,
            output_mode=OUTPUT_MODES.get(endpoint.response_format),
            temperature=endpoint.temperature,
            context=ContextProbe(contexts, client, endpoint),
        )

    tiers = {tier: seat(endpoint) for tier, endpoint in settings.tiers().items()}
    alternates = {tier: [seat(e) for e in settings.alternates(tier)] for tier in tiers}
    return JudgePanel(tiers=tiers, alternates=alternates)


@dataclass(frozen=True)
class SharedModel:
    """Tiers whose judges are one model on one endpoint."""

    tiers: tuple[Tier, ...]
    model: str
    host: str
    families: tuple[str, ...]

    def describe(self) -> str:
        names = " and ".join(tier.value for tier in self.tiers)
        declared = ", ".join(self.families)
        return (
            f"the {names} judges are one model ({self.model} at {self.host}, declared "
            f"families {declared}): their agreement is not independent"
        )


def _served_by(seat: Seat) -> tuple[str, str, str]:
    """A model where it is served, its base URL read so that case in the host and a
    trailing slash do not hide a match."""
    kind = getattr(seat.provider, "kind", "")
    base_url = str(getattr(seat.provider, "base_url", ""))
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return (seat.model, kind, base_url)
    if not parts.netloc:
        return (seat.model, kind, base_url)  # a CLI's command, or no URL at all
    where = f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}"
    return (seat.model, kind, where)


def shared_models(seats: Mapping[Tier, Seat | None]) -> list[SharedModel]:
    """Every group of two or more tiers served by one model on one endpoint, whatever
    families they declare, in protocol order."""
    groups: dict[tuple[str, str, str], list[Tier]] = {}
    for tier in TIER_ORDER:
        seat = seats.get(tier)
        if seat is not None:
            groups.setdefault(_served_by(seat), []).append(tier)
    out: list[SharedModel] = []
    for tiers in groups.values():
        if len(tiers) < 2:
            continue
        first = seats[tiers[0]]
        assert first is not None
        provider = first.provider
        out.append(
            SharedModel(
                tiers=tuple(tiers),
                model=first.model,
                host=seat_host(getattr(provider, "kind", ""), getattr(provider, "base_url", "")),
                families=tuple(dict.fromkeys(s.family for t in tiers if (s := seats[t]))),
            )
        )
    return out


def shared_model_note(seating: Mapping[Tier, Seating], ran: Iterable[Tier]) -> str | None:
    """What the record says when tiers that judged this change were one model, or None."""
    seats = {tier: seating[tier].seat for tier in ran if tier in seating}
    shared = shared_models(seats)
    return "; ".join(s.describe() for s in shared) or None
