"""judge-bot: a GitHub App that judges agent-written changes with independent LLM judges.

Packages import downward only (docs/architecture.md draws the floors; tests/test_architecture.py
holds them). From the lowest floor up:

    storage         one `Storage` interface, SQLite and PostgreSQL behind it
    github          App auth, installation tokens, a rate-limit-aware client, typed calls
    judge           one change in, one verdict record out: the engine, rubrics, providers,
                    checks, tagging and the doctor; usable without GitHub
    credentials     the credential shapes every secret check reads
    gfm             verdict records turned into GitHub Markdown safely
    globs           gitignore-like globs over repository paths
    logs            one JSON object per line, secrets scrubbed
    metrics         the Prometheus registry, one per app
    lifetime        the clock and the background-task cleanup context the long-running
                    parts share
    link_health     what the process last saw of GitHub and of storage writes
    record_view     a verdict record's rounds as people are shown them
    record_metrics  one judgment's record counted on `/metrics`
    settings        every setting the process reads (the environment), through one loader
    notify          notices to an operator's webhook when a person is needed
    services        the collaborators handlers use besides the event, one object per process
    intake          webhook intake: a delivery stored, claimed, dispatched to the routers
    judging         one `judge` check run per head sha and the repository's
                    `.github/judge.yml`; announces its outcomes
    disagreement    the `[JUDGE-DISAGREEMENT]` issue
    reviews         the final outcome also submitted as a pull request review
    merging         merge on approve: the merge queues, batches, GitHub's own queue, breakers
    commands        `/judge` comment commands and the check run's buttons
    installations   where the App is installed
    reports         `judge-bot triage` and `calibrate` over the verdict log, and the KPI gauges
    dashboard       `/dashboard`: the verdict log, the judges' health and calibration
    pages           the shared Jinja2 environment and the status page at `/`
    evaluation      `judge-bot eval`: the panel measured on labelled changes
    app             the app factory: the only place that builds sessions, stores and workers
    routing         the feature routers composed, in one place
    reactions       what reacts to judging's announcements, listed in one place
    cli             every `judge-bot` command
    registration    registering the GitHub App from `app.yml` (setup mode)
    action          the App's judging as a GitHub Action step (`judge-bot action`)
    __main__        `python -m bot`: `serve` by default, other arguments to the CLI
"""

__version__ = "0.1.0"
