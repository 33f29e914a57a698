"""The `[JUDGE-DISAGREEMENT]` issue.

Reacts to judging's verdicts (`sync.reconcile`, listed in `bot/reactions.py`).

    issue      its title, body and comments (pure)
    lifecycle  its next step: open, comment, reopen, close (pure)
    sync       keeping it in line on GitHub (kv owner: the issue of each task)
"""
