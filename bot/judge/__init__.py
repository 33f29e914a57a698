"""The judge: one change in, one verdict record out. Usable without GitHub (the CLI, the
pre-push hook); knows no feature of the App, no settings loader and no storage backend.

    records.py         the verdict schema and the plain input types: the vocabulary
                       every other package speaks
    settings.py        `JudgeSettings`, the typed `JUDGE_*` settings of the tiers
    authorship.py      which model families wrote a change, and a model's family
    watched_authors.py whose changes are judged (`JUDGE_AUTHORS`, the hook and the App)
    record_table.py    a verdict record as plain text for a terminal
    console.py         `python -m bot.judge.console`, the module installed hooks run
    engine/      the engine and its parts: tiers, rounds, seating, prompts, cost, the
                 tiers' health (`engine/__init__.py` is `JudgeEngine`)
    rubrics/     the four rubrics and how a reply becomes an answer (`__init__` is the
                 registry: a new rubric lands here)
    providers/   the wire protocols and local CLIs (`__init__` is the registry: a new
                 provider lands here)
    checks/      what needs no model: mechanical findings, injection, Markdown links
    tagging/     rubric-term tags of a record
    doctor/      does each configured judge answer, and how (`judge-bot doctor`, the
                 status page, `/healthz?detail=1`): one tiny judgment per seat

Rooms import downward only: `engine` uses the others; `checks` and `tagging` read
`rubrics`; all of them read `records`; `doctor` sits above the engine.
"""
