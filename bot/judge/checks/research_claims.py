"""What a research file claims and cites, read without a model, and the findings it earns
against `ResearchRules` (bot/judge/rubrics/research_settings.py).

The expected format, in Markdown (fenced code and front matter are not read):

    # Does X cause Y?

    Confidence: 80%

    ## Claim 1: X raises Y in adults
    Evidence:
    - [Trial A](https://journal.example.org/a)
    - [Agency report](https://agency.gov/report)
    Counter-evidence:
    - [Study D](https://other.edu/d)

    - **Claim 2:** a claim may also be a list item or a line of its own ([src](https://...))

* A **claim** starts at a line, heading or list item whose text (emphasis aside) begins
  `Claim`, an optional id (`1`, `A`, `#3`, `2.1`) and then `:`, `.`, `)`, `-` or the end
  of the line; `## Claims` and "Claims about X" are not claims. A heading claim runs to
  the next claim or the next heading of its level or above (so `### Counter-evidence`
  under `## Claim 1` is part of it, a `## References` section after it is not); any
  other claim runs to the next claim or the next heading.
* Its **sources** are the distinct http(s) links in it (inline, `<autolinks>`, bare URLs,
  and reference links resolved through their `[label]: url` definitions), the claim's
  own line included; a URL's fragment does not make it another source. Other schemes and
  relative links are not sources. Links before the first claim or after a claim ends
  count for nothing.
* A label line `Counter-evidence:` (also `Counter evidence`, `Counterevidence`,
  `Contradicting evidence`, `Evidence against`, as a heading, list item or line) makes
  the claim's following links **counter-evidence**; `Evidence:`, `Supporting evidence`,
  `Evidence for`, `Sources:` or `References:` switches back. Evidence counts every source
  of the claim, supporting or counter (as in the system seed 004 describes).
* A source's **domain** approximates the registrable domain: the host, lower-cased,
  without a leading `www.` (`docs.python.org` and `python.org` are two domains).
* `Confidence: 80%`, `Confidence: 80` or `Confidence: 0.8` (a number with a decimal
  point up to 1 is a fraction) states a **confidence**: outside any claim, the report's;
  inside one, that claim's. Anything else after `Confidence:` is unreadable.

Findings (every one `source="mechanical"`; a hard one rejects without a model call):

    kind                        severity  when
    research-claims             hard      fewer claims than `min_claims`
    research-confidence         hard      the report states no confidence (and
                                          `min_confidence` > 0), or one below it or unreadable
    research-verifiable-ratio   hard      the share of verifiable claims is below
                                          `min_verifiable_ratio` (unchecked without claims)
    research-uncited            soft      a claim without any source
    research-evidence           soft      a cited claim with fewer sources than
                                          `min_evidence_per_claim`
    research-domains            soft      a cited claim with fewer domains than
                                          `min_distinct_domains_per_claim`
    research-counter-evidence   soft      `require_counter_evidence` and a claim without any
    research-claim-confidence   soft      a claim's own confidence below `min_confidence`,
                                          or unreadable

A claim is **verifiable** when it has no uncited, evidence, domains or counter-evidence
finding; its own confidence does not count. Per-claim shortfalls are soft because one
thin claim need not sink a report: the verifiable ratio is what turns them into a
reject, so `min_verifiable_ratio` is the knob for how many a report may have. The ratio
is compared exactly (9 of 10 meets 0.9).

The whole file is read, not only the lines a change added: a report is judged as it now
stands. Messages never quote the file's text.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from urllib.parse import urlsplit

from bot.credentials import redact
from bot.judge.checks import markdown
from bot.judge.records import Finding, Severity
from bot.judge.rubrics.base import exact
from bot.judge.rubrics.research_settings import ResearchRules

NOT_IN_A_HEADING = 7
"""The level of a claim that is not a heading: deeper than any heading, so every
heading that is not a label ends it."""

_LIST_MARKER = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?")
_EMPHASIS = re.compile(r"[*_]{1,3}")
_CLAIM = re.compile(r"^claim(?:\s+#?[\w.]+)?\s*(?:[:.)\u2013\u2014-]|$)", re.IGNORECASE)
_COUNTER = re.compile(
    r"^(?:counter[\s-]?evidence|contradicting evidence|evidence against)\s*(?::|$)",
    re.IGNORECASE,
)
_SUPPORT = re.compile(
    r"^(?:evidence|supporting evidence|evidence for|sources?|references?)\s*(?::|$)",
    re.IGNORECASE,
)
_CONFIDENCE = re.compile(r"^confidence\s*:\s*(.*)$", re.IGNORECASE)
_CONFIDENCE_VALUE = re.compile(r"^(\d+(?:\.\d+)?|\.\d+)\s*(%?)(?![\d/.%])")
_URL = re.compile(r"https?://(?:[^\s<>()\[\]{}\"'`|\\^]|\([^\s<>()]*\))+", re.IGNORECASE)
_URL_TAIL = ".,:;!?*~_"
_DEFINITION = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*<?([^\s>]+)>?")
_FULL_REFERENCE = re.compile(r"\[([^\[\]]+)\]\[([^\[\]]*)\]")
_SHORTCUT_REFERENCE = re.compile(r"\[([^\[\]]+)\](?![\[(:])")


@dataclass(frozen=True)
class CitedSource:
    url: str
    domain: str
    line: int
    counter: bool


@dataclass(frozen=True)
class StatedConfidence:
    line: int
    percent: float | None
    """None when the value after `Confidence:` is not a number from 0 to 100%."""


@dataclass(frozen=True)
class Claim:
    line: int
    sources: tuple[CitedSource, ...] = ()
    confidence: tuple[StatedConfidence, ...] = ()

    @property
    def domains(self) -> list[str]:
        return sorted({s.domain for s in self.sources})

    @property
    def counter_evidence(self) -> int:
        return sum(1 for s in self.sources if s.counter)


@dataclass(frozen=True)
class ResearchReport:
    claims: tuple[Claim, ...]
    confidence: tuple[StatedConfidence, ...]
    """The report's own confidence lines (those outside every claim)."""


# -- reading -------------------------------------------------------------------------


def _label(line: str) -> tuple[int | None, str]:
    """(heading level or None, the line's text without heading or list marker and
    emphasis), for matching labels."""
    heading = markdown.atx_heading(line)
    if heading is not None:
        level, text = heading
        return level, _EMPHASIS.sub("", text.strip())
    text = _LIST_MARKER.sub("", line, count=1)
    return None, _EMPHASIS.sub("", text).strip()


def read_confidence(line: int, value: str) -> StatedConfidence:
    """`80%` and `80` are percent; `0.8` (a decimal point, at most 1) is a fraction."""
    match = _CONFIDENCE_VALUE.match(value.strip())
    if match is None:
        return StatedConfidence(line, None)
    number = Decimal(match.group(1))
    if not match.group(2) and "." in match.group(1) and number <= 1:
        number *= 100
    return StatedConfidence(line, float(number) if number <= 100 else None)


def domain_of(url: str) -> str | None:
    """The host without `www.`, lower-cased; None when the URL names no host."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    return host.removeprefix("www.").rstrip(".") or None


def _source_key(url: str) -> str:
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    query = f"?{parts.query}" if parts.query else ""
    return f"{(parts.hostname or '').removeprefix('www.')}{path}{query}"


def _reference_label(text: str) -> str:
    return " ".join(text.split()).lower()


def _definitions(text: str) -> dict[str, str]:
    """Reference definitions whose target is an http(s) URL; the first definition of a
    label wins, as in CommonMark."""
    found: dict[str, str] = {}
    for _, line in markdown.prose_lines(text):
        match = _DEFINITION.match(line)
        if match and _URL.fullmatch(match.group(2)):
            found.setdefault(_reference_label(match.group(1)), match.group(2))
    return found


def urls_in(line: str, definitions: Mapping[str, str]) -> Iterator[str]:
    """The http(s) URLs a line cites, in order: written out, or through a reference."""
    visible = markdown.blank_code_spans(line)
    for match in _URL.finditer(visible):
        yield match.group(0).rstrip(_URL_TAIL)
    for full in _FULL_REFERENCE.finditer(visible):
        target = definitions.get(_reference_label(full.group(2) or full.group(1)))
        if target is not None:
            yield target
    for short in _SHORTCUT_REFERENCE.finditer(_FULL_REFERENCE.sub(" ", visible)):
        target = definitions.get(_reference_label(short.group(1)))
        if target is not None:
            yield target


@dataclass
class _OpenClaim:
    line: int
    level: int
    counter: bool = False
    sources: dict[str, CitedSource] = field(default_factory=dict)
    confidence: list[StatedConfidence] = field(default_factory=list)

    def close(self) -> Claim:
        return Claim(self.line, tuple(self.sources.values()), tuple(self.confidence))

    def cite(self, url: str, line: int) -> None:
        domain = domain_of(url)
        if domain is not None:
            self.sources.setdefault(_source_key(url), CitedSource(url, domain, line, self.counter))


@dataclass
class _Scan:
    claims: list[Claim] = field(default_factory=list)
    confidence: list[StatedConfidence] = field(default_factory=list)
    current: _OpenClaim | None = None

    def end_claim(self) -> None:
        if self.current is not None:
            self.claims.append(self.current.close())
            self.current = None

    def line(self, number: int, line: str, definitions: Mapping[str, str]) -> None:
        level, text = _label(line)
        if _CLAIM.match(text):
            self.end_claim()
            self.current = _OpenClaim(number, level or NOT_IN_A_HEADING)
        elif level is not None and self.current is not None and level <= self.current.level:
            self.end_claim()
        self._label_line(number, text)
        if self.current is not None:
            for url in urls_in(line, definitions):
                self.current.cite(url, number)

    def _label_line(self, number: int, text: str) -> None:
        """Apply a confidence or stance label, when the line is one."""
        stated = _CONFIDENCE.match(text)
        if stated:
            confidence = read_confidence(number, stated.group(1))
            where = self.current.confidence if self.current is not None else self.confidence
            where.append(confidence)
        elif self.current is not None and _COUNTER.match(text):
            self.current.counter = True
        elif self.current is not None and _SUPPORT.match(text):
            self.current.counter = False


def read_research(text: str) -> ResearchReport:
    """The claims, their sources and the stated confidences of a Markdown research file."""
    definitions = _definitions(text)
    scan = _Scan()
    for number, line in markdown.prose_lines(text):
        if _DEFINITION.match(line):
            continue
        scan.line(number, line, definitions)
    scan.end_claim()
    return ResearchReport(tuple(scan.claims), tuple(scan.confidence))


# -- judging the counts ----------------------------------------------------------------


@dataclass(frozen=True)
class Shortfall:
    kind: str
    line: int | None
    message: str


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _percent(value: float) -> str:
    return f"{value:g}%"


def claim_shortfalls(claim: Claim, rules: ResearchRules) -> list[Shortfall]:
    """What keeps a claim from being verifiable (its own confidence aside)."""
    at = claim.line
    if not claim.sources:
        return [Shortfall("research-uncited", at, "claim cites no http(s) source")]
    out: list[Shortfall] = []
    count = len(claim.sources)
    if count < rules.min_evidence_per_claim:
        out.append(
            Shortfall(
                "research-evidence",
                at,
                f"claim cites {_plural(count, 'distinct source')}; at least "
                f"{rules.min_evidence_per_claim} required",
            )
        )
    domains = claim.domains
    if len(domains) < rules.min_distinct_domains_per_claim:
        out.append(
            Shortfall(
                "research-domains",
                at,
                f"claim's sources are on {_plural(len(domains), 'domain')} "
                f"({', '.join(domains[:3])}); at least "
                f"{rules.min_distinct_domains_per_claim} distinct required",
            )
        )
    if rules.require_counter_evidence and claim.counter_evidence == 0:
        out.append(
            Shortfall(
                "research-counter-evidence",
                at,
                "claim cites no counter-evidence (links under a 'Counter-evidence:' label)",
            )
        )
    return out


def _confidence_shortfall(
    stated: StatedConfidence, rules: ResearchRules, kind: str, whose: str
) -> Shortfall | None:
    if stated.percent is None:
        return Shortfall(
            kind,
            stated.line,
            f"{whose} confidence is not a number from 0 to 100% (write e.g. 'Confidence: 80%')",
        )
    if stated.percent < rules.min_confidence:
        return Shortfall(
            kind,
            stated.line,
            f"{whose} stated confidence {_percent(stated.percent)} is below "
            f"{_percent(rules.min_confidence)}",
        )
    return None


def report_shortfalls(report: ResearchReport, rules: ResearchRules) -> list[Shortfall]:
    """The file-level shortfalls: too few claims, the report's confidence, the ratio."""
    out: list[Shortfall] = []
    claims = len(report.claims)
    if claims < rules.min_claims:
        out.append(
            Shortfall(
                "research-claims",
                None,
                f"found {_plural(claims, 'claim')}; at least {rules.min_claims} required "
                "(a claim is a heading, list item or line starting 'Claim:' or 'Claim N:')",
            )
        )
    if not report.confidence and rules.min_confidence > 0:
        out.append(
            Shortfall(
                "research-confidence",
                None,
                "the report states no confidence (add a line 'Confidence: N%' outside the "
                f"claims); at least {_percent(rules.min_confidence)} required",
            )
        )
    for stated in report.confidence:
        found = _confidence_shortfall(stated, rules, "research-confidence", "the report's")
        if found is not None:
            out.append(found)
    ratio = verifiable_ratio(report, rules)
    if ratio is not None and ratio < exact(rules.min_verifiable_ratio):
        out.append(
            Shortfall(
                "research-verifiable-ratio",
                None,
                f"{ratio * claims} of {_plural(claims, 'claim')} meet every per-claim rule; "
                f"at least {rules.min_verifiable_ratio:g} of them must",
            )
        )
    return out


def verifiable_ratio(report: ResearchReport, rules: ResearchRules) -> Fraction | None:
    """The exact share of verifiable claims; None for a report without claims."""
    if not report.claims:
        return None
    verifiable = sum(1 for c in report.claims if not claim_shortfalls(c, rules))
    return Fraction(verifiable, len(report.claims))


_HARD = frozenset({"research-claims", "research-confidence", "research-verifiable-ratio"})


def _severity(kind: str) -> Severity:
    return "hard" if kind in _HARD else "soft"


def research_findings(path: str, text: str, rules: ResearchRules) -> list[Finding]:
    """Every research finding of one Markdown file, file-level first, then by line."""
    report = read_research(text)
    shortfalls = report_shortfalls(report, rules)
    for claim in report.claims:
        shortfalls += claim_shortfalls(claim, rules)
        for stated in claim.confidence:
            found = _confidence_shortfall(stated, rules, "research-claim-confidence", "claim's")
            if found is not None:
                shortfalls.append(found)
    return [
        Finding(
            source="mechanical",
            kind=s.kind,
            severity=_severity(s.kind),
            path=path,
            line=s.line,
            message=redact(s.message),
        )
        for s in shortfalls
    ]
