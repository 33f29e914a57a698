"""A reject at a head GitHub's merge queue is testing in a group fails that group's
`judge` run, so GitHub's queue drops the group instead of merging a rejected head.

GitHub refuses to take a pull request out of its queue while its entry is locked in a
group being tested, and the group's run may already have passed on the accepts stored
when it was checked: without this, a reject (a person's override above all) after the
hand-over could still be merged by GitHub.

    fail_groups   the live groups (`github_handover.groups_holding`) that merge the pull
                  request at that head: their runs completed `failure`, and the sha
                  taken from the delivery judging the group, if one still is: its
                  completion (`RunHandle.complete`) finds the sha no longer its own and
                  drops its accept instead of turning the run back to `success`
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from gidgethub.abc import GitHubAPI

from bot.gfm import code, short_sha
from bot.github.gateway import RepoGateway
from bot.judging.check_run import CheckRunOutput, finish_output
from bot.judging.run_handle import show
from bot.judging.state import load_state, save_state, state_key
from bot.storage.base import Storage

log = logging.getLogger(__name__)

# The owner of a group's sha once a reject failed it: no delivery's id, so no judging
# of the group still under way owns the sha any more.
FAILED_BY_REJECT = "merge-group-failed-by-reject"


def group_failed_output(number: int, head: str, verdict: str, group_head: str) -> CheckRunOutput:
    summary = (
        "## Verdict: reject\n"
        f"Merge group {code(short_sha(group_head))} merges #{number} at "
        f"{code(short_sha(head))}, which is now **{verdict}** at that head: the group "
        "fails, and GitHub's merge queue does not merge it."
    )
    title = f"reject · #{number} is {verdict} at the merged head"
    return finish_output(CheckRunOutput(conclusion="failure", title=title, summary=summary))


async def fail_groups(
    storage: Storage,
    client: GitHubAPI,
    repository: str,
    groups: Sequence[str],
    number: int,
    head: str,
    verdict: str,
) -> list[str]:
    """Fail the `judge` run of each group in `groups` (their head shas), which merge
    #`number` at `head`; the group heads failed. A group whose run does not exist yet
    needs nothing: when its checks are requested, `merge_group.decide_group` reads the
    reject and fails it."""
    gateway = RepoGateway(client, repository)
    failed = []
    for group_head in groups:
        key = state_key(repository, group_head)
        state = await load_state(storage, key)
        if state is None or state.check_run_id is None:
            continue
        update = {
            "verdict": "reject",
            "conclusion": "failure",
            "override": None,
            "owner": FAILED_BY_REJECT,
        }
        # Taken before showing: a judgment of the group checking its ownership from now
        # on writes nothing (`merging.handlers` fails the group again after one that
        # checked just before).
        failed_state = state.model_copy(update=update)
        await save_state(storage, key, failed_state)
        output = group_failed_output(number, head, verdict, group_head)
        await save_state(
            storage, key, await show(gateway, state.check_run_id, failed_state, output)
        )
        log.info("merge group %s failed: #%s is %s at %s", group_head, number, verdict, head)
        failed.append(group_head)
    return failed
