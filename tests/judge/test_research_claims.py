"""Reading a research file's claims, sources and confidence (`bot/judge/checks/research_claims.py`),
and the findings each threshold produces, as tables."""

from __future__ import annotations

from fractions import Fraction

import pytest

from bot.judge.checks.research_claims import (
    CitedSource,
    Claim,
    ResearchReport,
    StatedConfidence,
    _label,
    claim_shortfalls,
    domain_of,
    read_confidence,
    read_research,
    report_shortfalls,
    research_findings,
    urls_in,
    verifiable_ratio,
)
from bot.judge.rubrics.research_settings import ResearchRules

GOOD = """\
# Does caching cut latency?

Confidence: 80%

## Claim 1: The cache halves p99 latency
Evidence:
- [Benchmark](https://bench.example.org/run/7)
- [Vendor note](https://www.vendor.com/notes/cache)
Counter-evidence:
- [Field report](https://ops.example.net/incident)

## Claim 2: Cold starts are unaffected
Evidence:
- [Trace](https://bench.example.org/trace)
- [Paper](https://arxiv.org/abs/1234.5678)
Counter-evidence:
- [Blog](https://blog.example.io/cold)
"""


def claims_of(text: str) -> tuple[Claim, ...]:
    return read_research(text).claims


def kinds(text: str, rules: ResearchRules | None = None) -> list[tuple[str, str, int | None]]:
    found = research_findings("research/r.md", text, rules or ResearchRules())
    return [(f.kind, f.severity, f.line) for f in found]


# ---- claims ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "is_claim"),
    [
        ("## Claim 1: X", True),
        ("# Claim: X", True),
        ("### Claim A - X", True),
        ("## Claim #3) X", True),
        ("## Claim 2.1. X", True),
        ("## Claim 7", True),
        ("## Claim \u2014 X", True),
        ("- Claim: X", True),
        ("* **Claim 2:** X", True),
        ("1. Claim: X", True),
        ("- [ ] Claim: X", True),
        ("Claim: X", True),
        ("__Claim:__ X", True),
        ("CLAIM 4: X", True),
        ("## Claims", False),
        ("## Claims about X", False),
        ("Claimed by many: X", False),
        ("Claim about X", False),
        ("The claim: X", False),
        ("    ", False),
    ],
)
def test_what_starts_a_claim(line: str, is_claim: bool) -> None:
    """A claim is a heading, list item or line whose text begins `Claim`, an optional id
    and a separator; `Claims` and prose mentioning claims are not."""
    assert len(claims_of(line + "\n")) == (1 if is_claim else 0)


def test_claims_in_code_blocks_and_front_matter_are_not_read() -> None:
    text = "---\nnote: 'Claim: in front matter'\n---\n```\nClaim: in code\n```\nClaim: real\n"
    assert [c.line for c in claims_of(text)] == [7]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a heading claim keeps deeper headings and ends at one of its level or above
        ("## Claim: a\n### Evidence\nhttps://a.org/1\n", 1),
        ("## Claim: a\n## References\nhttps://a.org/1\n", 0),
        ("## Claim: a\n# Part two\nhttps://a.org/1\n", 0),
        ("### Claim: a\n## Counter-evidence\nhttps://a.org/1\n", 0),
        # any heading ends a claim that is not a heading
        ("- Claim: a\n#### Notes\nhttps://a.org/1\n", 0),
        ("- Claim: a\n  - https://a.org/1\n", 1),
        # the next claim ends the last
        ("## Claim: a\n- Claim: b\nhttps://a.org/1\n", 0),
    ],
)
def test_where_a_claim_ends(text: str, expected: int) -> None:
    """Sources count for the claim whose part they are in."""
    assert len(claims_of(text)[0].sources) == expected


def test_links_outside_claims_count_for_nothing() -> None:
    text = (
        "Intro https://intro.org/a\n\n## Claim 1: x\nhttps://a.org/1\n\n## Summary\nhttps://b.org\n"
    )
    (claim,) = claims_of(text)
    assert [s.url for s in claim.sources] == ["https://a.org/1"]


def test_the_claim_line_cites_too() -> None:
    (claim,) = claims_of("- Claim: x ([a](https://a.org/p), <https://b.org/q>)\n")
    assert [s.domain for s in claim.sources] == ["a.org", "b.org"]


# ---- sources -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[a](https://a.org/x)", ["https://a.org/x"]),
        ('[a](https://a.org/x "title")', ["https://a.org/x"]),
        ("<https://a.org/x>", ["https://a.org/x"]),
        ("see https://a.org/x.", ["https://a.org/x"]),
        ("see https://a.org/x, and http://b.org/y;", ["https://a.org/x", "http://b.org/y"]),
        ("(https://a.org/x)", ["https://a.org/x"]),
        (
            "[w](https://en.wikipedia.org/wiki/Foo_(bar))",
            ["https://en.wikipedia.org/wiki/Foo_(bar)"],
        ),
        ('<a href="https://a.org/x">a</a>', ["https://a.org/x"]),
        ("`https://in.code/x` only", []),
        ("[rel](../other.md) [mail](mailto:a@b.org) ftp://a.org", []),
        (
            "[text][r1] and [r2][] and [R3]",
            ["https://one.org", "https://two.org", "https://three.org"],
        ),
        ("[unknown][nope] [no such]", []),
    ],
)
def test_urls_a_line_cites(line: str, expected: list[str]) -> None:
    definitions = {"r1": "https://one.org", "r2": "https://two.org", "r3": "https://three.org"}
    assert list(urls_in(line, definitions)) == expected


def test_reference_definitions_resolve_and_are_not_sources_themselves() -> None:
    text = (
        "## Claim 1: x\nSee [the trial][T] and [2].\n\n## Notes\n"
        "[t]: https://trial.org/a\n[2]: <https://two.org/b>\n[t]: https://later.org\n"
        "[rel]: ./local.md\n"
    )
    (claim,) = claims_of(text)
    assert [s.url for s in claim.sources] == ["https://trial.org/a", "https://two.org/b"]
    # a definition inside a claim does not cite by itself
    (inside,) = claims_of("## Claim 1: x\n[t]: https://trial.org/a\n")
    assert inside.sources == ()


@pytest.mark.parametrize(
    ("url", "domain"),
    [
        ("https://www.Example.ORG/a", "example.org"),
        ("https://docs.python.org/3/", "docs.python.org"),
        ("https://example.org./a", "example.org"),
        ("http://user:pw@host.io:8080/x", "host.io"),
        ("https://www./a", None),
        ("https://", None),
        ("https://[::1/x", None),
    ],
)
def test_domain_of(url: str, domain: str | None) -> None:
    """The host without `www.`: an approximation of the registrable domain."""
    assert domain_of(url) == domain


def test_the_same_source_counts_once() -> None:
    """A fragment, a trailing slash, `www.` or the host's case do not make a new source."""
    text = (
        "## Claim: x\nhttps://a.org/p#one https://a.org/p#two https://A.org/p/ "
        "https://www.a.org/p https://a.org/p?q=1\n"
    )
    (claim,) = claims_of(text)
    assert [s.url for s in claim.sources] == ["https://a.org/p#one", "https://a.org/p?q=1"]


@pytest.mark.parametrize(
    ("label", "counter"),
    [
        ("Counter-evidence:", True),
        ("### Counter evidence", True),
        ("- **Counterevidence:**", True),
        ("Contradicting evidence:", True),
        ("Evidence against:", True),
        ("Counter-evidence: https://a.org/1", True),
        ("Evidence:", False),
        ("Supporting evidence:", False),
        ("### Sources", False),
        ("References:", False),
        ("Evidence for:", False),
    ],
)
def test_stance_labels(label: str, counter: bool) -> None:
    """A label line sets the stance of the links after it (and on it)."""
    (claim,) = claims_of(f"## Claim: x\nCounter-evidence:\n{label}\nhttps://a.org/1\n")
    assert [s.counter for s in claim.sources] == [counter]


def test_prose_mentioning_evidence_does_not_switch_stance() -> None:
    text = "## Claim: x\nCounter-evidence:\nEvidence suggests https://a.org/1\n"
    (claim,) = claims_of(text)
    assert claim.counter_evidence == 1


def test_stance_starts_supporting_for_every_claim() -> None:
    text = "## Claim: x\nCounter-evidence:\nhttps://a.org/1\n## Claim: y\nhttps://b.org/1\n"
    first, second = claims_of(text)
    assert (first.counter_evidence, second.counter_evidence) == (1, 0)


# ---- confidence ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "percent"),
    [
        ("80%", 80.0),
        ("80 %", 80.0),
        ("80", 80.0),
        ("72.5", 72.5),
        ("0.8", 80.0),
        (".7", 70.0),
        ("1.0", 100.0),
        ("1", 1.0),
        ("0.5%", 0.5),
        ("100%", 100.0),
        ("0", 0.0),
        ("80% (three trials)", 80.0),
        ("101", None),
        ("1.5", 1.5),
        ("high", None),
        ("", None),
        ("4/5", None),
        ("80/100", None),
        ("0.8.1", None),
        ("-5%", None),
    ],
)
def test_read_confidence(value: str, percent: float | None) -> None:
    """Percent with or without `%`; a decimal up to 1 is a fraction; anything else is
    unreadable rather than guessed."""
    assert read_confidence(3, value) == StatedConfidence(3, percent)


def test_confidence_belongs_to_the_report_or_to_its_claim() -> None:
    text = "**Confidence:** 75%\n\n## Claim: x\n- Confidence: 0.6\n\n## Summary\nConfidence: 90\n"
    report = read_research(text)
    assert report.confidence == (StatedConfidence(1, 75.0), StatedConfidence(7, 90.0))
    assert report.claims[0].confidence == (StatedConfidence(4, 60.0),)


# ---- shortfalls ----------------------------------------------------------------------


def claim(*sources: tuple[str, bool]) -> Claim:
    found = tuple(
        CitedSource(url=f"https://{domain}/{n}", domain=domain, line=2, counter=counter)
        for n, (domain, counter) in enumerate(sources)
    )
    return Claim(line=1, sources=found)


A, B, C = ("a.org", False), ("b.org", False), ("c.org", True)


@pytest.mark.parametrize(
    ("sources", "rules", "expected"),
    [
        ((), ResearchRules(), ["research-uncited"]),
        (
            (),
            ResearchRules(min_evidence_per_claim=0, min_distinct_domains_per_claim=0),
            ["research-uncited"],
        ),
        ((A, B, C), ResearchRules(), []),
        ((A, B), ResearchRules(), ["research-evidence", "research-counter-evidence"]),
        ((A, A, C), ResearchRules(), []),
        ((A, A, A), ResearchRules(), ["research-domains", "research-counter-evidence"]),
        ((A, A, ("a.org", True)), ResearchRules(), ["research-domains"]),
        ((A, B), ResearchRules(require_counter_evidence=False), ["research-evidence"]),
        ((A, B), ResearchRules(min_evidence_per_claim=2, require_counter_evidence=False), []),
        (
            (A,),
            ResearchRules(min_evidence_per_claim=1, require_counter_evidence=False),
            ["research-domains"],
        ),
        (
            (A,),
            ResearchRules(min_evidence_per_claim=0, min_distinct_domains_per_claim=0),
            ["research-counter-evidence"],
        ),
        (
            (A, B, C),
            ResearchRules(min_evidence_per_claim=4, min_distinct_domains_per_claim=4),
            [
                "research-evidence",
                "research-domains",
            ],
        ),
    ],
)
def test_claim_shortfalls(
    sources: tuple[tuple[str, bool], ...], rules: ResearchRules, expected: list[str]
) -> None:
    """Each per-claim rule at and around its threshold; an uncited claim gets one finding,
    not one per rule."""
    assert [s.kind for s in claim_shortfalls(claim(*sources), rules)] == expected


def report(verifiable: int, unverifiable: int, confidence: float | None = 80.0) -> ResearchReport:
    claims = [claim(A, B, C)] * verifiable + [claim()] * unverifiable
    stated = () if confidence is None else (StatedConfidence(1, confidence),)
    return ResearchReport(tuple(claims), stated)


@pytest.mark.parametrize(
    ("verifiable", "unverifiable", "ratio", "expected"),
    [
        (9, 1, 0.9, []),
        (8, 1, 0.9, ["research-verifiable-ratio"]),  # 0.888...
        (17, 2, 0.9, ["research-verifiable-ratio"]),  # 0.894...
        (18, 2, 0.9, []),
        (7, 3, 0.7, []),  # exactly 0.7, compared exactly
        (2, 1, 0.66, []),
        (2, 1, 0.67, ["research-verifiable-ratio"]),  # 0.666...
        (2, 1, 0.7, ["research-verifiable-ratio"]),
        (0, 1, 0.0, []),
        (0, 1, 0.01, ["research-verifiable-ratio"]),
        (1, 0, 1.0, []),
        (0, 0, 1.0, ["research-claims"]),  # no claims: the ratio is not checked
    ],
)
def test_verifiable_ratio_threshold(
    verifiable: int, unverifiable: int, ratio: float, expected: list[str]
) -> None:
    rules = ResearchRules(min_verifiable_ratio=ratio)
    found = report_shortfalls(report(verifiable, unverifiable), rules)
    assert [s.kind for s in found] == expected


def test_verifiable_ratio_is_exact() -> None:
    assert verifiable_ratio(report(2, 1), ResearchRules()) == Fraction(2, 3)
    assert verifiable_ratio(report(0, 0), ResearchRules()) is None


@pytest.mark.parametrize(
    ("claims", "min_claims", "expected"),
    [(0, 0, []), (0, 1, ["research-claims"]), (1, 1, []), (2, 3, ["research-claims"]), (3, 3, [])],
)
def test_min_claims(claims: int, min_claims: int, expected: list[str]) -> None:
    rules = ResearchRules(min_claims=min_claims)
    assert [s.kind for s in report_shortfalls(report(claims, 0), rules)] == expected


@pytest.mark.parametrize(
    ("stated", "minimum", "expected"),
    [
        ((80.0,), 70, []),
        ((70.0,), 70, []),
        ((69.5,), 70, ["research-confidence"]),
        ((), 70, ["research-confidence"]),
        ((), 0, []),
        ((None,), 0, ["research-confidence"]),  # unreadable is an error at any bar
        ((90.0, 40.0), 70, ["research-confidence"]),
        ((0.0,), 0, []),
    ],
)
def test_report_confidence(
    stated: tuple[float | None, ...], minimum: int, expected: list[str]
) -> None:
    base = report(1, 0)
    with_confidence = ResearchReport(base.claims, tuple(StatedConfidence(1, p) for p in stated))
    found = report_shortfalls(with_confidence, ResearchRules(min_confidence=minimum))
    assert [s.kind for s in found] == expected


# ---- findings ------------------------------------------------------------------------


def test_a_good_report_has_no_findings() -> None:
    assert kinds(GOOD) == []


def test_findings_name_lines_and_severities() -> None:
    text = (
        "Confidence: 50%\n\n"
        "## Claim 1: thin\nhttps://a.org/1\nConfidence: high\n\n"
        "## Claim 2: none\nNo sources here.\n"
    )
    assert kinds(text) == [
        ("research-confidence", "hard", 1),
        ("research-verifiable-ratio", "hard", None),
        ("research-evidence", "soft", 3),
        ("research-domains", "soft", 3),
        ("research-counter-evidence", "soft", 3),
        ("research-claim-confidence", "soft", 5),
        ("research-uncited", "soft", 7),
    ]


def test_claim_confidence_below_the_bar_is_soft() -> None:
    text = GOOD.replace("## Claim 2: Cold", "Confidence: 40%\n\n## Claim 2: Cold")
    assert kinds(text) == [("research-claim-confidence", "soft", 12)]


def test_messages_explain_and_never_quote_the_file() -> None:
    secretish = "ghp_" + "a" * 36
    text = f"## Claim 1: {secretish}\nhttps://a.org/x\n"
    found = research_findings("research/r.md", text, ResearchRules())
    messages = {f.kind: f.message for f in found}
    assert secretish not in " ".join(messages.values())
    assert messages["research-evidence"] == "claim cites 1 distinct source; at least 3 required"
    assert messages["research-domains"] == (
        "claim's sources are on 1 domain (a.org); at least 2 distinct required"
    )
    assert "Confidence: N%" in messages["research-confidence"]
    assert messages["research-verifiable-ratio"] == (
        "0 of 1 claim meet every per-claim rule; at least 0.9 of them must"
    )
    assert all(f.source == "mechanical" and f.path == "research/r.md" for f in found)


def test_no_claims_message_names_the_format() -> None:
    (finding,) = research_findings("r.md", "Confidence: 90%\n", ResearchRules())
    assert finding.kind == "research-claims" and finding.severity == "hard"
    assert "found 0 claims; at least 1 required" in finding.message
    assert "'Claim:'" in finding.message


def test_every_threshold_can_be_relaxed_to_nothing() -> None:
    """With every bar at zero a bare file passes: the operator decides what is required."""
    rules = ResearchRules(
        min_claims=0,
        min_evidence_per_claim=0,
        min_distinct_domains_per_claim=0,
        require_counter_evidence=False,
        min_confidence=0,
        min_verifiable_ratio=0,
    )
    assert kinds("just prose\n", rules) == []
    assert kinds("## Claim: x\n", rules) == [("research-uncited", "soft", 1)]


def test_a_link_without_a_host_is_no_source() -> None:
    (claim,) = claims_of("## Claim: x\nhttps://www./a and https://.\n")
    assert claim.sources == ()


def test_a_claim_confident_enough_has_no_finding() -> None:
    text = GOOD.replace("## Claim 2: Cold", "Confidence: 70%\n\n## Claim 2: Cold")
    assert kinds(text) == []


@pytest.mark.parametrize(
    ("line", "level", "text"),
    [
        ("## Claim 1: x ##", 2, "Claim 1: x"),
        ("# x#", 1, "x#"),
        ("#", 1, ""),
        ("### ###", 3, ""),
        ("##\tClaim", 2, "Claim"),
        ("   ## **Claim:** y  ", 2, "Claim: y"),
        ("#x", None, "#x"),
        ("####### Claim: a", None, "####### Claim: a"),
        ("- **Claim 2:** y", None, "Claim 2: y"),
        ("12) [x] Claim: y", None, "Claim: y"),
    ],
)
def test_label_reads_headings_and_list_items(line: str, level: int | None, text: str) -> None:
    """ATX headings (closing `#` run dropped), list items and emphasis, as labels are
    matched; a long run of spaces in a heading is read in linear time."""
    assert _label(line) == (level, text)
    assert _label("# a" + " " * 100_000 + "b") == (1, "a" + " " * 100_000 + "b")
