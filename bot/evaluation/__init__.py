"""`judge-bot eval`: the configured panel measured against labelled changes, before a team
switches to blocking mode (docs/eval.md). The command itself is `bot/cli/eval.py`.

    dataset  the JSONL dataset: its schema (pydantic), diffs read into files, and errors
             that name the line (pure, apart from reading the file)
    runner   each example judged by the engine `judge-bot judge` uses, without storage,
             and again with its files in another order
    metrics  agreement with the labels, Cohen's kappa between tiers, swap consistency,
             latency, tokens and cost per change and per tier and model (pure)
    view     the figures as tables against the blocking-mode limits, or as JSON (pure)
    history  a dataset from the App's records: overridden verdicts and reverted accepts,
             the files read from a git clone and checked against the judged content
"""
