"""`/judge` comment commands and the check run's buttons.

grammar    a comment's words -> a command (pure)
policy     who may run it (pure, with `judging.four_eyes`)
meant_head which head an override comment was about (pure)
outcome    what an override does to the state and the run (pure)
replies    the answers, worded (pure)
plan       what a command does, from the fetched facts (pure)
handlers   the routers: fetch, plan, carry out
"""
