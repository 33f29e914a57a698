"""judge-bot as a GitHub Action step: `judge-bot action` (bot/cli/action.py) runs the App's
judging, commands and conclusion table inside a workflow, with no server and no database
to run (docs/action.md).

    environment     the run's GITHUB_* variables and event file, read and checked (pure)
    settings        the action's own JUDGE_ACTION_* settings
    github          the App's GitHub client on the workflow's token: the one seam (and
                    the `github-actions` App's id on this server)
    cache           the restored verdict cache: plain data taken in, never trusted to pass
    forks           a run GitHub gave no secrets (a fork's, Dependabot's) whose judges need
                    a key: its run (Cause.NO_KEYS)
    comments        `/judge` comments where the pull request's state is not cached
    reactions       what reacts to judging here: the disagreement issue, merge on accept
    runner          one run: the event to the App's handler, then the sha's outcome
    outcome         exit status, outputs and step summary from that outcome (pure)
    records_import  downloaded verdict records into a database, for triage and calibrate
"""
