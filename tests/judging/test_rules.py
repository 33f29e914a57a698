"""The judging flow's pure decisions, exhaustively."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from bot.github.types import ChangedPath, CommitInfo
from bot.judge.settings import Mode
from bot.judging.annotations import Annotation
from bot.judging.config_file import parse_repo_config
from bot.judging.rules import (
    ClaimAction,
    FinishEarly,
    JudgeFiles,
    bypass_of,
    claim_action,
    gate,
    honoured_skip,
    judges_authors,
    prepare_files,
    push_needs_no_run,
    unsent,
)
from bot.judging.state import LabelGrant, ShaState
from bot.judging.target import Target

SHA = "a" * 40


def target(**changes: Any) -> Target:
    base = Target("o/r", 1, SHA, "main", "o/r#1", "test")
    return Target(**{**base.__dict__, **changes})


# -- claims --------------------------------------------------------------------------------


def expected_claim(
    state: str, same_owner: bool, incoming_pull: bool, explicit: bool, failed: bool
) -> ClaimAction:
    if state == "none":
        return ClaimAction.CLAIM
    if same_owner:
        return ClaimAction.RESUME
    if explicit or failed:
        return ClaimAction.TAKE_OVER
    if incoming_pull and state == "push":
        return ClaimAction.TAKE_OVER
    return ClaimAction.SKIP


@pytest.mark.parametrize(
    ("state", "same_owner", "incoming_pull", "explicit", "failed"),
    [
        combo
        for combo in itertools.product(
            ["none", "push", "pull"], [False, True], [False, True], [False, True], [False, True]
        )
        if not (combo[0] == "none" and (combo[1] or combo[4]))
    ],
)
def test_claim_action_table(
    state: str, same_owner: bool, incoming_pull: bool, explicit: bool, failed: bool
) -> None:
    stored: ShaState | None = None
    if state != "none":
        stored = ShaState(
            owner="me" if same_owner else "other",
            target={"pull_number": 5 if state == "pull" else None},
        )
    action = claim_action(
        stored, owner="me", incoming_is_pull=incoming_pull, explicit=explicit, owner_failed=failed
    )
    assert action is expected_claim(state, same_owner, incoming_pull, explicit, failed)


# -- pushes that need no run ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "changed", "authors", "expected"),
    [
        ("", [("docs/a.md", "added")], ["agent"], False),
        ("", [("src/a.py", "added")], ["agent"], True),
        ("", [("docs/a.md", "removed")], ["agent"], True),
        ("authors: [agent]\n", [("docs/a.md", "added")], ["agent"], False),
        ("authors: [agent]\n", [("docs/a.md", "added")], ["human"], True),
        ("", None, ["agent"], False),
    ],
)
def test_push_needs_no_run(
    config: str,
    changed: list[tuple[str, str]] | None,
    authors: list[str],
    expected: bool,
) -> None:
    commits = tuple(CommitInfo("s", "m", name, name, name, name) for name in authors)
    paths = None if changed is None else tuple(ChangedPath(p, s) for p, s in changed)
    # The pusher is one of the commits' people here (test_authors_counts_vouched_...
    # covers pushers who are not).
    push = target(pull_number=None, changed=paths, commits=commits, sender=authors[0])
    assert push_needs_no_run(parse_repo_config(config), push) is expected


# -- bypass ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("labels", "message", "kind"),
    [
        ((), "Add notes", None),
        (("judge-skip",), "Add notes", "label"),
        (("other",), "WIP [skip judge]", "commit-message"),
        (("other",), "WIP [SKIP JUDGE]", "commit-message"),
        (("other",), "WIP [judge skip]", "commit-message"),
        (("judge-skip",), "WIP [skip judge]", "label"),
    ],
)
def test_bypass(labels: tuple[str, ...], message: str, kind: str | None) -> None:
    bypass = bypass_of(target(labels=labels, labeled_by="lead"), "judge-skip", message)
    assert (bypass.kind if bypass else None) == kind
    if bypass is not None:
        assert bypass.by == ("lead" if kind == "label" else SHA)


def test_no_skip_label_configured() -> None:
    assert bypass_of(target(labels=("judge-skip",)), None, "msg") is None


# -- files -----------------------------------------------------------------------------------------


def test_prepare_files_cuts_and_reports() -> None:
    changed = [
        ChangedPath("a.md", "added", "@@ -0,0 +1,2 @@\n+x\n+y"),
        ChangedPath("b.md", "modified"),
    ]
    texts = {"a.md": "x\ny\n", "b.md": "z" * 50, "c.bin": None}
    files, left_out = prepare_files(["a.md", "b.md", "c.bin"], texts, changed, 10, {"a.md"})
    assert [(f.path, f.content, f.added_lines, f.status) for f in files] == [
        ("a.md", "x\ny\n", [1, 2], "added"),
        ("b.md", "z" * 10, None, "modified"),
    ]
    reasons = {(item.path, item.reason.split()[0]) for item in left_out}
    assert reasons == {("a.md", "too"), ("b.md", "cut"), ("c.bin", "binary")}


def test_annotations_are_never_sent_twice() -> None:
    one: Annotation = {
        "path": "a.md",
        "start_line": 1,
        "end_line": 1,
        "annotation_level": "warning",
        "message": "m",
        "title": "t",
    }
    two: Annotation = {**one, "start_line": 2, "end_line": 2}
    first = unsent([one, two, one], [])
    assert first == [one, two]
    from bot.judging.rules import annotation_key

    assert unsent([one, two], [annotation_key(one)]) == [two]


# -- the gate before judging ------------------------------------------------------------------


def _commit(message: str = "Add notes", author: str = "agent") -> CommitInfo:
    return CommitInfo(SHA, message, author, author, author, author)


@pytest.mark.parametrize(
    ("config_text", "labels", "message", "paths", "title"),
    [
        ("", ("judge-skip",), "Add notes", ("docs/a.md",), "skipped"),
        ("", (), "Add notes [skip judge]", ("docs/a.md",), "skipped"),
        ("authors: [someone-else]\n", (), "Add notes", ("docs/a.md",), "nothing to judge"),
        ("", (), "Add notes", ("src/app.py",), "nothing to judge"),
    ],
    ids=["skip label", "commit marker", "authors", "nothing watched"],
)
def test_gate_finishes_early(
    config_text: str, labels: tuple[str, ...], message: str, paths: tuple[str, ...], title: str
) -> None:
    changed = tuple(ChangedPath(p, "modified") for p in paths)
    gated = gate(
        parse_repo_config(config_text),
        target(labels=labels, changed=changed, commits=(_commit(message),), sender="agent"),
    )
    assert isinstance(gated, FinishEarly)
    assert gated.verdict == "skipped"
    assert gated.output.conclusion == "neutral"
    assert title in gated.output.title


def test_gate_passes_the_selection_on() -> None:
    changed = (ChangedPath("docs/a.md", "modified"), ChangedPath("src/app.py", "modified"))
    gated = gate(parse_repo_config(""), target(changed=changed, commits=(_commit(),)))
    assert not isinstance(gated, FinishEarly)
    assert [f.path for f in gated.selection.files] == ["docs/a.md"]
    assert [item.path for item in gated.selection.left_out] == ["src/app.py"]
    assert gated.notes == ()


# -- who may skip in blocking mode -------------------------------------------------------------

MAINTAINER = LabelGrant(by="lead", permission="maintain", head_sha=SHA)


@pytest.mark.parametrize(
    ("grant", "honoured", "why"),
    [
        (MAINTAINER, True, None),
        (LabelGrant(by="agent", permission="write", head_sha=SHA), False, "pull request author"),
        (
            LabelGrant(by="committer-login", permission="admin", head_sha=SHA),
            False,
            "author or committer",
        ),
        (LabelGrant(by="visitor", permission="read", head_sha=SHA), False, "needs write"),
        (
            LabelGrant(by="ci[bot]", by_type="Bot", permission="admin", head_sha=SHA),
            False,
            "bots cannot",
        ),
        (None, False, "nobody is known"),
        (MAINTAINER.model_copy(update={"head_sha": "b" * 40}), False, "at bbbbbbb, before"),
        (MAINTAINER.model_copy(update={"head_sha": ""}), False, "before this head"),
    ],
    ids=[
        "maintainer",
        "pr author",
        "commit author",
        "reader",
        "bot",
        "unknown",
        "earlier head",
        "head not known",
    ],
)
def test_skip_label_in_blocking_mode(
    grant: LabelGrant | None, honoured: bool, why: str | None
) -> None:
    pushed = target(
        labels=("judge-skip",),
        pull_author="agent",
        commits=(CommitInfo(SHA, "m", "Agent", "committer-login", "Agent", None),),
    )
    bypass, notes = honoured_skip(parse_repo_config(""), pushed, Mode.BLOCKING, grant)
    assert (bypass is not None) is honoured
    if why is None:
        assert notes == ()
    else:
        [note] = notes
        assert note.startswith("The `judge-skip` label was not honoured") and why in note


@pytest.mark.parametrize(
    ("config_text", "mode", "vouched", "honoured"),
    [
        ("", Mode.ADVISORY, {}, True),
        ("", Mode.BLOCKING, {"sender": "agent-login"}, False),
        ("skip_marker_authors: [someone-else]\n", Mode.BLOCKING, {"sender": "agent-login"}, False),
        ("skip_marker_authors: ['@Agent-Login']\n", Mode.BLOCKING, {"sender": "agent-login"}, True),
        ("skip_marker_authors: [agent@example.com]\n", Mode.BLOCKING, {"sender": "x"}, False),
        # The commit's author line names a listed login, but GitHub says someone else pushed.
        ("skip_marker_authors: [agent-login]\n", Mode.BLOCKING, {"sender": "intruder"}, False),
        ("skip_marker_authors: [agent-login]\n", Mode.BLOCKING, {}, False),
        # A pull request: its author and whoever pushed must both be listed.
        (
            "skip_marker_authors: [agent-login]\n",
            Mode.BLOCKING,
            {"sender": "agent-login", "pull_author": "bot-author"},
            False,
        ),
        (
            "skip_marker_authors: [agent-login, lead]\n",
            Mode.BLOCKING,
            {"sender": "lead", "pull_author": "agent-login"},
            True,
        ),
    ],
)
def test_skip_marker_by_mode_and_vouched_accounts(
    config_text: str, mode: Mode, vouched: dict[str, str], honoured: bool
) -> None:
    head = CommitInfo(SHA, "WIP [skip judge]", "Agent", "agent-login", "Agent", None)
    pushed = target(commits=(head,), **vouched)
    bypass, notes = honoured_skip(parse_repo_config(config_text), pushed, mode)
    assert (bypass is not None) is honoured
    assert bool(notes) is not honoured


@pytest.mark.parametrize(
    ("vouched", "commit_author", "judged"),
    [
        ({"pull_author": "agent"}, "Jane Doe", True),
        ({"sender": "agent"}, "Jane Doe", True),
        ({"sender": "jane"}, "agent", True),  # a commit line may add the agent
        ({"sender": "jane", "pull_author": "jane"}, "Jane Doe", False),
        # A merge group: nobody vouched for, so typed lines cannot exempt it.
        ({}, "Jane Doe", True),
    ],
)
def test_authors_counts_vouched_accounts_and_commit_lines_only_add(
    vouched: dict[str, str], commit_author: str, judged: bool
) -> None:
    config = parse_repo_config("authors: [agent]\n")
    head = CommitInfo(SHA, "m", commit_author, None, commit_author, None)
    changed = (ChangedPath("docs/a.md", "modified"),)
    pushed = target(commits=(head,), changed=changed, **vouched)
    assert judges_authors(config, pushed) is judged
    assert push_needs_no_run(config, pushed) is not judged
    assert isinstance(gate(config, pushed, Mode.BLOCKING), JudgeFiles) is judged


def test_every_skip_is_honoured_in_advisory_mode_without_a_grant() -> None:
    pushed = target(labels=("judge-skip",), labeled_by="agent", pull_author="agent")
    bypass, notes = honoured_skip(parse_repo_config(""), pushed, Mode.ADVISORY, None)
    assert bypass is not None and bypass.by == "agent" and notes == ()


def test_a_refused_label_still_lets_a_listed_marker_skip() -> None:
    head = CommitInfo(SHA, "[skip judge]", "Agent", "agent", "Agent", None)
    config = parse_repo_config("skip_marker_authors: [agent]\n")
    pushed = target(labels=("judge-skip",), commits=(head,), sender="agent")
    bypass, notes = honoured_skip(config, pushed, Mode.BLOCKING, None)
    assert bypass is not None and bypass.kind == "commit-message"
    assert len(notes) == 1
