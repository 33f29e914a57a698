"""`/judge` comment commands and the check run's buttons.

grammar, policy and outcome decide, replies word the answers, plan puts them together,
handlers fetch and carry out.
"""
