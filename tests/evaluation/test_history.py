"""`--from-history`'s dataset, from a real verdict log (SQLite and PostgreSQL) and a real
git clone (tests/evaluation/history_helpers.py tells the story)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from bot.evaluation.dataset import ExampleFile, example_line, parse_dataset
from bot.evaluation.history import (
    CONTENT_DIFFERS,
    NO_FILES,
    NOT_IN_CLONE,
    Candidates,
    GitClone,
    Labelled,
    build,
    candidates,
    example_of,
    files_at,
    recorded_files,
    repository_of_remote,
    reverted,
)
from bot.judge.records import RubricName, Verdict, content_sha256
from bot.storage.base import Storage
from tests.evaluation.history_helpers import (
    PR_HEAD,
    REPO,
    commit_file,
    git,
    make_clone,
    tell,
    text,
)


async def test_overridden_and_reverted_changes_become_labelled_examples(
    storage: Storage, tmp_path: Path
) -> None:
    story = make_clone(tmp_path)
    await tell(storage, story)
    built = await build(GitClone(story.clone), await candidates(storage, None))

    got = {e.task.id: e for e in built.examples}
    assert list(got) == ["task-b", "task-c", "task-a", "task-d"]  # overridden, then reverted
    assert {k: e.expected for k, e in got.items()} == {
        "task-b": "accept",
        "task-c": "reject",
        "task-a": "reject",
        "task-d": "reject",
    }
    b, c, a, d = got.values()
    assert b.files is not None and [(f.path, f.content) for f in b.files] == [
        ("docs/b.md", text("b"))
    ]
    assert b.task.description == "Write b"
    assert b.source["kind"] == "overridden" and b.source["decided_by"] == "maintainer"
    assert b.source["judged"] == "improve"  # the judges' last judgment of the change
    assert b.source["repository"] == REPO and b.source["head_sha"] == story.shas["b"]
    assert c.rubric is RubricName.RESEARCH
    assert a.source == {
        "kind": "reverted",
        "seq": a.source["seq"],
        "repository": REPO,
        "head_sha": story.shas["a"],
        "judged": "accept",
        "reverted_by": story.reverts["a"],
    }
    # judged at a pull request head the clone lacks; the reverted squash commit holds
    # exactly what the judges read
    assert d.source["head_sha"] == PR_HEAD and d.source["reverted_by"] == story.reverts["d"]
    assert d.files is not None and d.files[0].content == text("d")

    assert built.kinds == {"overridden": 2, "reverted": 2}
    assert built.skipped == {NOT_IN_CLONE: 1, CONTENT_DIFFERS: 1, NO_FILES: 1}


async def test_the_examples_are_a_dataset_eval_reads(storage: Storage, tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    await tell(storage, story)
    built = await build(GitClone(story.clone), await candidates(storage, None))
    items = parse_dataset([example_line(e) for e in built.examples], "history")
    assert [i.name for i in items] == [e.id for e in built.examples]
    assert all(i.name.startswith(("overridden-", "reverted-")) for i in items)


async def test_one_repository_only(storage: Storage, tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    await tell(storage, story)
    found = await candidates(storage, "octo/REPO")  # the name compared without case
    # b, c, x, e at a's commit, nofile (the cancelled one and the one without a head: no)
    assert [o.stored.task_id for o in found.overridden] == [
        "task-b",
        "task-c",
        "task-x",
        "task-e-at-a",
        "nofile",
    ]
    assert [s.task_id for s in found.accepted] == ["task-a", "task-d", "task-e"]
    assert (await candidates(storage, "other/repo")) == Candidates([], [])


async def test_an_empty_log_gives_nothing(storage: Storage, tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    built = await build(GitClone(story.clone), await candidates(storage, None))
    assert built.examples == [] and not built.skipped


async def test_a_file_removed_by_the_change_is_left_out(tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    clone = GitClone(story.clone)
    wanted = {"docs/gone.md": content_sha256(""), "docs/b.md": content_sha256(text("b"))}
    got = await files_at(clone, story.shas["b"], wanted)
    assert isinstance(got, list) and [f.path for f in got] == ["docs/b.md"]
    assert await files_at(clone, story.shas["b"], {"docs/gone.md": content_sha256("")}) == NO_FILES


async def test_the_clone_reader(tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    clone = GitClone(story.clone)
    assert await clone.check()
    assert not await GitClone(tmp_path).check()
    assert sorted(await clone.reverts()) == sorted(
        (story.reverts[n], story.shas[n]) for n in ("a", "d")
    )
    assert await clone.changed(story.shas["c"]) == frozenset({"docs/c.md"})
    assert await clone.read(story.shas["c"], "docs/c.md") == text("c")
    assert await clone.read(story.shas["a"], "docs/c.md") is None
    assert await clone.read(story.shas["a"], "docs") is None  # a directory is no file
    assert await clone.has(story.shas["a"]) and not await clone.has("0" * 40)


async def test_a_revert_naming_an_unknown_commit_is_ignored(tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    git(story.clone, "commit", "-q", "--allow-empty", "-m", "This reverts commit 0123456789abc.")
    assert len(await GitClone(story.clone).reverts()) == 2


def test_recorded_files_reads_only_well_formed_records() -> None:
    assert recorded_files({"files": ["a", "b", 3], "content_hashes": {"a": "h", "b": 1}}) == {
        "a": "h"
    }
    assert recorded_files({"files": "a", "content_hashes": {}}) == {}
    assert recorded_files({}) == {}


async def test_an_unknown_rubric_in_a_record_reads_as_content(
    storage: Storage, tmp_path: Path
) -> None:
    story = make_clone(tmp_path)
    await tell(storage, story)
    found = await candidates(storage, None)
    stored = found.overridden[0].stored
    record = {**stored.record, "rubric": "poetry", "description": " "}
    odd = Labelled("overridden", Verdict.ACCEPT, replace(stored, record=record), by="x")
    example = example_of(odd, [ExampleFile(path="a", content="")])
    assert example.rubric is RubricName.CONTENT
    assert example.task.description == f"Task {stored.task_id}"


async def test_a_revert_of_other_content_at_the_same_paths_labels_nothing(
    storage: Storage, tmp_path: Path
) -> None:
    """An accept of docs/d.md as it was before: the reverted commit changed that path but
    holds other content, so the revert did not undo what the judges accepted."""
    story = make_clone(tmp_path)
    await tell(storage, story)
    found = await candidates(storage, None)
    (d,) = [s for s in found.accepted if s.task_id == "task-d"]
    hashes = {"docs/d.md": content_sha256("an older d\n")}
    older = replace(d, record={**d.record, "content_hashes": hashes})
    assert await reverted(GitClone(story.clone), [older]) == []


async def test_a_revert_on_a_branch_that_never_landed_is_ignored(tmp_path: Path) -> None:
    """Only what reached the default branch took the change back: a revert on another
    branch (an experiment, an unmerged pull request) labels nothing."""
    story = make_clone(tmp_path)
    git(story.clone, "checkout", "-q", "-b", "experiment")
    git(story.clone, "revert", "--no-edit", story.shas["b"])
    git(story.clone, "checkout", "-q", "main")
    assert sorted(await GitClone(story.clone).reverts()) == sorted(
        (story.reverts[n], story.shas[n]) for n in ("a", "d")
    )


async def test_the_default_branch_is_origins_even_with_another_checked_out(
    tmp_path: Path,
) -> None:
    story = make_clone(tmp_path)
    git(story.clone, "update-ref", "refs/remotes/origin/main", "main")
    git(story.clone, "symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main")
    git(story.clone, "checkout", "-q", "-b", "experiment")
    git(story.clone, "revert", "--no-edit", story.shas["b"])
    assert len(await GitClone(story.clone).reverts()) == 2


async def test_reverts_merged_in_count_only_for_commits_the_default_branch_held(
    tmp_path: Path,
) -> None:
    """A pull request that reverts its own earlier commit and is merged with a merge
    commit undid nothing of the default branch; a revert pull request merged the same way
    undid a commit the branch held."""
    story = make_clone(tmp_path)
    clone = story.clone
    git(clone, "checkout", "-q", "-b", "topic")
    draft = commit_file(clone, "docs/draft.md", text("draft"))
    git(clone, "revert", "--no-edit", draft)
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-ff", "topic", "-m", "Merge pull request #7 from topic")
    git(clone, "checkout", "-q", "-b", "revert-c")
    git(clone, "revert", "--no-edit", story.shas["c"])
    undo_c = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "-q", "main")
    git(clone, "merge", "-q", "--no-ff", "revert-c", "-m", "Merge pull request #8 from revert-c")
    assert sorted(await GitClone(clone).reverts()) == sorted(
        [*((story.reverts[n], story.shas[n]) for n in ("a", "d")), (undo_c, story.shas["c"])]
    )


@pytest.mark.parametrize(
    ("url", "repository"),
    [
        ("https://github.com/Octo/Repo.git", "Octo/Repo"),
        ("https://github.com/octo/repo", "octo/repo"),
        ("https://x-access-token:abc@github.com/octo/re.po.git/", "octo/re.po"),
        ("git@github.com:octo/repo.git", "octo/repo"),
        ("ssh://git@ghe.example.com:2222/team/tool.git", "team/tool"),
        ("git://example.com/team/tool", "team/tool"),
        ("/srv/git/octo/repo.git", None),
        ("../repo", None),
        ("https://github.com/just-owner", None),
        ("", None),
    ],
)
def test_the_repository_a_remote_names(url: str, repository: str | None) -> None:
    assert repository_of_remote(url) == repository


async def test_the_clone_names_its_origins_repository(tmp_path: Path) -> None:
    story = make_clone(tmp_path)
    assert await GitClone(story.clone).origin_repository() == "Octo/Repo"
    git(story.clone, "remote", "remove", "origin")
    assert await GitClone(story.clone).origin_repository() is None


async def test_a_revert_that_is_the_branchs_first_commit_undid_nothing(tmp_path: Path) -> None:
    clone = tmp_path / "odd"
    clone.mkdir()
    git(clone, "init", "-q", "-b", "side")
    git(clone, "commit", "-q", "--allow-empty", "-m", "elsewhere")
    elsewhere = git(clone, "rev-parse", "HEAD")
    git(clone, "checkout", "-q", "--orphan", "main")
    git(clone, "commit", "-q", "--allow-empty", "-m", f"This reverts commit {elsewhere}.")
    assert await GitClone(clone).reverts() == []
