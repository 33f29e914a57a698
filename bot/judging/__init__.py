"""Judging pushes and pull requests: one `judge` check run per head sha, and the repo config.
Judging imports no feature that reacts to it: it announces through `reactions`.

    handlers        the routers: which webhooks start a judgment
    flow            the judgment of one head sha, from claim to completed run
    reactions       what judging announces (`hold`, `judged`, `concluded`), and the port
                    the reacting features are plugged into (`bot/reactions.py` lists them)
    target          what to judge, read from webhook payloads (pure)
    rules           who judges a sha, the gate before judging, files and annotations (pure)
    four_eyes       who may decide in place of the judges (pure)
    conclusion      verdict x mode x cause -> the check's conclusion: the gate's
                    guarantee in one table (pure)
    check_run, group_sections, annotations, run_notices
                    everything the `judge` run shows (pure rendering)
    change_fetch    fetching what the judges read at a head sha
    ci_gate         CI shown to the judges, waiting for a rerun (pure)
    diffs, earlier, remarks, judge_requests, windows
                    diffs, earlier verdicts, writers' directives, the judge requests: per
                    rubric group, in batches and windows a judge reads whole (pure)
    repo_config, config_file, config_yaml
                    `.github/judge.yml`: its model, parsing with line-precise errors,
                    YAML within limits (pure)
    config_store    reading that file from the default branch, cached (kv `repo-config`)
    model_policy    `JUDGE_ALLOWED_MODELS`: which repository model overrides are refused
    state           `ShaState`, the per-sha state, and skip-label grants (kv owner)
    run_handle      the sha's one `judge` run: claimed, created and completed once (kv owner)
"""
