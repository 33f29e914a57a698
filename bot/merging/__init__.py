"""Merge on approve: a durable merge queue per repository and base branch. Reacts to
judging's outcomes (`approval.on_judged`, listed in `bot/reactions.py`).

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
    handlers          the routers (pull_request closed, reviews, merge groups, ...)
"""
