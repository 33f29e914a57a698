"""The per-sha state: one model, versioned, and rows written before it still load."""

from __future__ import annotations

from bot.judge.records import Verdict
from bot.judge.settings import Mode
from bot.judging.state import (
    STATE_VERSION,
    LabelGrant,
    Override,
    ShaState,
    claim_ci_rerun,
    load_grant,
    load_state,
    put_state_if_absent,
    save_grant,
    save_state,
    state_key,
)
from bot.storage.base import Storage
from tests.support.verdict_builders import HEAD, make_record

LEGACY_ROW = {
    "owner": "d-1",
    "check_run_id": 11,
    "check_run_url": "https://github.com/octo/repo/runs/11",
    "annotations_sent": ["a1"],
    "target": {"repository": "octo/repo", "pull_number": 5},
    "verdict": "reject",
    "conclusion": "failure",
    "mode": "blocking",
    "commit_people": ["agent"],
    "records": [make_record().model_dump(mode="json")],
    "override": {"verdict": "accept", "by": "maria"},
}


def test_state_key_ignores_repository_case() -> None:
    assert state_key("Octo/Repo", HEAD) == f"octo/repo@{HEAD}"


async def test_a_row_written_before_the_model_loads(storage: Storage) -> None:
    await storage.kv_put("judged-sha", "k", LEGACY_ROW)
    state = await load_state(storage, "k")
    assert state is not None
    assert state.version == 0
    assert state.mode is Mode.BLOCKING
    assert state.override == Override(verdict=Verdict.ACCEPT, by="maria")
    assert state.records[0] == make_record()
    assert state.judged and not state.claimed_by_push


async def test_save_writes_the_current_version_and_round_trips(storage: Storage) -> None:
    state = ShaState.model_validate(LEGACY_ROW)
    await save_state(storage, "k", state)
    raw = await storage.kv_get("judged-sha", "k")
    assert raw is not None and raw["version"] == STATE_VERSION
    assert await load_state(storage, "k") == state.model_copy(update={"version": STATE_VERSION})


async def test_put_if_absent_claims_once(storage: Storage) -> None:
    state = ShaState(owner="d-1")
    assert await put_state_if_absent(storage, "k", state)
    assert not await put_state_if_absent(storage, "k", ShaState(owner="d-2"))
    loaded = await load_state(storage, "k")
    assert loaded is not None and loaded.owner == "d-1"
    assert await load_state(storage, "absent") is None


def test_run_and_annotation_bookkeeping() -> None:
    state = ShaState(owner="d-1", annotations_sent=("old",)).with_run(12, "u")
    assert (state.check_run_id, state.check_run_url, state.annotations_sent) == (12, "u", ())
    assert state.with_sent(["a", "b"]).annotations_sent == ("a", "b")
    assert not state.judged
    assert ShaState().claimed_by_push and ShaState().judged_target("t") is None


async def test_label_grants_are_remembered_and_forgotten(storage: Storage) -> None:
    grant = LabelGrant(by="lead", permission="maintain", role_name="maintain")
    await save_grant(storage, "Octo/Repo", 5, grant)
    assert await load_grant(storage, "octo/repo", 5) == grant
    assert await load_grant(storage, "octo/repo", 6) is None
    await save_grant(storage, "octo/repo", 5, None)
    assert await load_grant(storage, "octo/repo", 5) is None


async def test_one_delivery_takes_each_wait_for_ci(storage: Storage) -> None:
    """Several webhooks end one wait (a check run, its suite, a status): one judges; its
    retry keeps the wait; a sha that waits again (another skip) can be taken again."""
    key = state_key("octo/repo", HEAD)
    waiting = ShaState(completed_by="skip-1", awaiting_ci=("check:tests",))
    assert await claim_ci_rerun(storage, key, waiting, "run-a")
    assert not await claim_ci_rerun(storage, key, waiting, "suite-b")
    assert await claim_ci_rerun(storage, key, waiting, "run-a")
    again = waiting.model_copy(update={"completed_by": "run-a"})
    assert await claim_ci_rerun(storage, key, again, "suite-b")


async def test_a_wait_for_ci_is_taken_in_the_rows_shape(storage: Storage) -> None:
    """The row names the delivery that took the wait, as installations already hold it."""
    key = state_key("octo/repo", HEAD)
    waiting = ShaState(completed_by="skip-1")
    assert await claim_ci_rerun(storage, key, waiting, "run-a")
    assert await storage.kv_get("judged-sha-ci-rerun", f"{key}#skip-1") == {"owner": "run-a"}
    await storage.kv_put("judged-sha-ci-rerun", f"{key}#skip-2", {"owner": "suite-b"})
    later = ShaState(completed_by="skip-2")
    assert await claim_ci_rerun(storage, key, later, "suite-b")
    assert not await claim_ci_rerun(storage, key, later, "run-a")
