"""Merge on approve: a durable merge queue per repository and base branch. Reacts to
judging's outcomes (`approval.on_concluded`, listed in `bot/reactions.py`).

    eligibility       who enters the queue, and how (pure)
    approval          an outcome at a head: admit, update or leave the queue
    step              one pure step per queued pull request
    transitions       the queue's states and moves (pure)
    driver            the worker's side: carry out one step
    queue_worker      claims queue heads, in the background
    github_calls      the merge's GitHub calls
    merge_notices     the comments and labels a merge leaves (pure)
    branch_cleanup    whether a merged head branch is deleted, and GitHub's answer (pure)
    conflicts         where a conflicting pull request conflicts (pure)
    breaker           loop prevention's decisions (pure)
    breaker_flow      loop prevention carried out (kv `circuit-breaker`)
    breaker_messages  what a tripped breaker says (pure)
    merge_group       GitHub's own merge queue: what a group merges, whether it is judged
                      (pure)
    group_runs        a reject at a head in a group GitHub's queue is testing fails that
                      group's `judge` run, so the group is dropped, not merged
    github_queue      GitHub's merge queue and auto-merge through GraphQL (enqueue,
                      dequeue, enable auto-merge); GitHub's refusals read as outcomes
    github_handover   branches that require GitHub's merge queue: their rules (cached), the
                      accepted pull requests handed over and taken out (kv `branch-rules`,
                      `github-merge-queue`)
    queue_estimate    time to merge and why pull requests left, from the queue's history
                      (pure)
    merge_metrics     what a merged pull request cost, on /metrics
    batching          batches and speculative checks: what to build, land, split, evict
                      or discard next (pure)
    batch_driver      the worker's side of batches: one step for a whole queue, under the
                      lease on its head
    batch_checks      a batch's required checks on its tip (pure)
    batch_review      the `judge` run on a batch's tip: no model when nothing is re-read
    batch_files       each queued pull request's files and the base's since (kv
                      `merge-batch-files`)
    queue_branch      queue branches `judge-bot/queue/<base>/<n>`: a batch built from its
                      members' judged heads, the base moved to a tested tip, what the
                      base's protection allows
    handlers          the routers (pull_request closed, reviews, merge groups, ...)
"""
