"""action.yml and the example workflows of docs/action.md: linted, safe by construction, and
in step with their page.

* The linters CI runs (`.ci/run`): check-jsonschema against GitHub's schemas for the action
  metadata and each workflow, and zizmor with no findings at its default level (offline).
  They skip with a reason where they are not installed; zizmor is shown to find what it
  should, so a clean run means something.
* The security defaults docs/action.md lists, each checked on the files' structure: no
  trigger that runs the base repository's secrets for a fork, nothing checked out, judge-bot
  installed from the action's own files, no expression inside a script, every action pinned
  by sha, each job's permissions within what its events need (the page's table), the comment
  workflow filtered and its lint exception reasoned.
* The action's two scripts run for real: inputs become `JUDGE_*` settings only when set, and
  the verdict cache's key is its content's digest.
* The page shows the minimal workflow as the file has it, lists every example and every input
  and output, and its links resolve.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from bot.action.outcome import RunOutcome, output_lines
from bot.action.settings import ActionSettings
from bot.judge.settings import JudgeSettings
from tests.test_docs_readme import anchors

ROOT = Path(__file__).resolve().parent.parent
ACTION = ROOT / "action.yml"
PAGE = ROOT / "docs" / "action.md"
WORKFLOWS = sorted((ROOT / "docs" / "workflows").glob("*.yml"))
SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+(?:/[\w./-]+)?@[0-9a-f]{40}$")
VERSION_COMMENT = re.compile(r"# v\d+(?:\.\d+)*$")
LEVELS = {"none": 0, "read": 1, "write": 2}
FORK_SECRET_TRIGGERS = {"pull_request_target", "workflow_run"}
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_TEST_TIMEOUT = 120
LOCK = ROOT / "action" / "requirements.lock"
INSTALLS = (
    (
        ("--require-hashes", "--only-binary=:all:", "-r"),
        '"$GITHUB_ACTION_PATH/action/requirements.lock"',
    ),
    (("--no-deps", "--no-build-isolation"), '"$GITHUB_ACTION_PATH"'),
)


def load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def on_of(workflow: dict[Any, Any]) -> Any:
    """A workflow's `on:` (YAML 1.1, as PyYAML reads it, takes the bare key `on` for True)."""
    return workflow.get("on", workflow.get(True))


def triggers(workflow: dict[Any, Any]) -> set[str]:
    on = on_of(workflow)
    if isinstance(on, str):
        return {on}
    if isinstance(on, list):
        return set(on)
    assert isinstance(on, dict)
    return set(on)


def jobs(workflow: dict[str, Any]) -> dict[str, dict[str, Any]]:
    found = workflow["jobs"]
    assert isinstance(found, dict)
    return found


def steps_of(path: Path) -> list[dict[str, Any]]:
    data = load(path)
    if "runs" in data:
        return list(data["runs"]["steps"])
    return [step for job in jobs(data).values() for step in job.get("steps", [])]


def action_step(name: str) -> dict[str, Any]:
    (step,) = [step for step in steps_of(ACTION) if step.get("name") == name]
    return step


def linter(name: str) -> str:
    """The linter installed beside this Python (the project's venv), else on PATH."""
    found = shutil.which(
        name, path=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    )
    if found is None:
        pytest.skip(
            f"{name} is not installed (pip install -e '.[dev]'): the rules below still hold"
        )
    return found


def run(command: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=_TEST_TIMEOUT, check=False
    )


# -- the linters CI runs ---------------------------------------------------------------------


def test_the_action_metadata_passes_githubs_schema() -> None:
    result = run(
        [linter("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(ACTION)]
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_each_example_workflow_passes_githubs_schema(workflow: Path) -> None:
    schema = "vendor.github-workflows"
    result = run([linter("check-jsonschema"), "--builtin-schema", schema, str(workflow)])
    assert result.returncode == 0, result.stdout + result.stderr


def zizmor(*paths: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    flags = ["--offline", "--no-config", "--no-progress", "--strict-collection", "--color=never"]
    return run([linter("zizmor"), *flags, *map(str, paths)], cwd=cwd)


def test_zizmor_finds_nothing_at_its_default_level() -> None:
    result = zizmor(ACTION, *WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "No findings to report" in result.stdout


COMMENTS = ROOT / "docs" / "workflows" / "overrides.yml"
INJECTED = "      - run: echo ${{ github.event.comment.body }}\n"


@pytest.mark.parametrize(
    ("change", "audit"),
    [
        (
            lambda text: text.replace(" # zizmor: ignore[dangerous-triggers]", ""),
            "dangerous-triggers",
        ),
        (lambda text: text + INJECTED, "template-injection"),
        (lambda text: re.sub(r"@[0-9a-f]{40}", "@v1", text), "unpinned-uses"),
    ],
    ids=["comment-trigger-unexplained", "comment-in-a-script", "action-by-tag"],
)
def test_zizmor_finds_what_it_should(tmp_path: Path, change: Any, audit: str) -> None:
    """The clean run above means something: the same audits flag each slip."""
    mutated = tmp_path / "overrides.yml"
    mutated.write_text(change(COMMENTS.read_text(encoding="utf-8")), encoding="utf-8")
    result = zizmor(mutated, cwd=tmp_path)
    assert result.returncode != 0
    assert f"[{audit}]" in result.stdout, result.stdout


def test_ci_runs_the_linters_on_every_file() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert "check-jsonschema --builtin-schema vendor.github-actions action.yml" in ci
    assert "check-jsonschema --builtin-schema vendor.github-workflows docs/workflows/*.yml" in ci
    (audit,) = [line for line in ci if line.startswith("zizmor ")]
    assert "--offline" in audit and "--no-config" in audit
    assert audit.endswith(" action.yml docs/workflows/*.yml")
    assert not re.search(r"--(min-severity|min-confidence|persona|no-exit-codes)", audit)


def test_the_dev_extras_install_the_linters() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    for name in ("check-jsonschema", "zizmor"):
        assert any(re.fullmatch(rf"{name}>=[\d.]+", pin) for pin in dev), name


# -- security defaults -----------------------------------------------------------------------


def test_no_workflow_runs_with_the_base_repositorys_secrets_for_a_fork() -> None:
    for workflow in WORKFLOWS:
        assert not triggers(load(workflow)) & FORK_SECRET_TRIGGERS, workflow.name
    assert not FORK_SECRET_TRIGGERS & triggers({"on": {"pull_request": None}})
    assert FORK_SECRET_TRIGGERS & triggers({True: ["pull_request_target"]})


def test_the_config_comes_from_the_base_branch_and_nothing_is_checked_out() -> None:
    for path in (ACTION, *WORKFLOWS):
        for step in steps_of(path):
            assert not str(step.get("uses", "")).startswith("actions/checkout"), path.name
            assert "github.workspace" not in json.dumps(step), path.name
            assert "GITHUB_WORKSPACE" not in str(step.get("run", "")), path.name
    page = " ".join(PAGE.read_text(encoding="utf-8").split())
    assert "read from the base branch through the API, never from a checkout" in page


def test_judge_bot_is_installed_from_the_actions_own_files() -> None:
    """Afresh on every run: the Actions cache holds the verdict cache only, never code."""
    install = action_step("Install judge-bot from this action's own files")
    script = str(install["run"]).replace("\\\n", " ")
    installs = [" ".join(line.split()) for line in script.splitlines() if "pip install" in line]
    # The dependencies from the action's hashed lock, wheels only; then judge-bot itself,
    # with nothing more fetched (no dependency, no build backend of its own choosing).
    assert len(installs) == len(INSTALLS)
    for line, (options, source) in zip(installs, INSTALLS, strict=True):
        assert all(option in line.split() for option in options), line
        assert line.endswith(source), line
    judge = action_step("Judge")
    assert judge["run"].rstrip().endswith('exec "$VENV/bin/judge-bot" action')
    assert judge["env"]["VENV"] == install["env"]["VENV"]
    cached = [
        step["with"]["path"]
        for step in steps_of(ACTION)
        if "actions/cache" in str(step.get("uses"))
    ]
    assert cached and all(str(path).endswith("/verdict-cache.sqlite3") for path in cached)


def lock_pins() -> dict[str, tuple[Version, int]]:
    """The lock's pins: each distribution's version and how many wheel hashes it names."""
    pins: dict[str, tuple[Version, int]] = {}
    entries = LOCK.read_text(encoding="utf-8").replace("\\\n", " ")
    for line in entries.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        requirement, *hashes = line.split()
        name, _, version = requirement.partition("==")
        assert version and all(h.startswith("--hash=sha256:") for h in hashes), line
        pins[canonicalize_name(name)] = (Version(version), len(hashes))
    return pins


def test_the_lock_covers_every_runtime_dependency_at_a_version_it_allows() -> None:
    """pyproject.toml's dependencies, its build backend and everything they need in turn
    (as the installed distributions of those versions declare it) are pinned, each at a
    version meeting pyproject's bound, each with at least one wheel hash."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = lock_pins()
    wanted = [
        Requirement(text)
        for text in (*project["project"]["dependencies"], *project["build-system"]["requires"])
    ]
    seen: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{requirement} is not in action/requirements.lock"
        version, hashes = pins[name]
        assert hashes >= 1 and requirement.specifier.contains(version, prereleases=True), (
            f"{requirement}: the lock pins {version}"
        )
        if name in seen:
            continue
        seen.add(name)
        wanted += needs_of(name, version, requirement.extras)
    # Nothing pinned that nothing needs: every line is part of the install.
    assert set(pins) == seen


def needs_of(name: str, version: Version, extras: set[str]) -> list[Requirement]:
    """What a pinned distribution needs on the runner (Linux, CPython 3.11), read from the
    installed one of that version; none read when another version is installed here."""
    try:
        installed = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return []
    if Version(installed.version) != version:
        return []
    needs = []
    for text in installed.requires or []:
        requirement = Requirement(text)
        marker = requirement.marker
        runner = {
            "python_version": "3.11",
            "python_full_version": "3.11.0",
            "sys_platform": "linux",
        }
        if marker is None or any(
            marker.evaluate({**runner, "extra": extra}) for extra in ("", *extras)
        ):
            needs.append(requirement)
    return needs


def scripts(path: Path) -> list[str]:
    return [str(step["run"]) for step in steps_of(path) if "run" in step]


def test_no_expression_is_expanded_inside_a_script() -> None:
    assert scripts(ACTION), "the action has scripts to check"
    for path in (ACTION, *WORKFLOWS):
        for script in scripts(path):
            assert "${{" not in script, f"{path.name}: {script[:80]}"


def uses_lines(path: Path) -> list[str]:
    return [
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s*-?\s*uses:", line)
    ]


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.name)
def test_every_action_is_pinned_by_a_full_commit_sha(path: Path) -> None:
    lines = uses_lines(path)
    assert lines
    for line in lines:
        reference = line.split("uses:", 1)[1].split("#", 1)[0].strip()
        assert SHA_PIN.match(reference), line
        assert VERSION_COMMENT.search(line), f"say which version the sha is: {line}"


def test_the_pin_rule_refuses_tags_and_short_shas() -> None:
    assert SHA_PIN.match("actions/cache/restore@" + "a" * 40)
    assert not SHA_PIN.match("actions/cache@v5")
    assert not SHA_PIN.match("actions/cache@27d5ce7")


def documented_permissions() -> dict[str, dict[str, str]]:
    """The page's table: event (or `merge`) -> {permission: level} it may ask for."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("### Permissions and exit status", 1)[1].split("\n\n| exit status", 1)[0]
    table: dict[str, dict[str, str]] = {}
    for row in section.splitlines():
        cells = row.split(" | ")
        if not row.startswith("| ") or len(cells) != 2 or "---" in row or "permissions" in cells[1]:
            continue
        event = "merge" if "merge:" in cells[0] else cells[0].strip("| `")
        table[event] = dict(re.findall(r"`([a-z-]+): (read|write)`", cells[1]))
    return table


def events_of_job(workflow: dict[str, Any], job: dict[str, Any]) -> set[str]:
    """The workflow's events, narrowed by a job's `if: github.event_name == '...'`."""
    named = set(re.findall(r"github\.event_name == '([a-z_]+)'", str(job.get("if", ""))))
    return named or triggers(workflow)


def allowed(events: set[str], merges: bool) -> dict[str, str]:
    table = documented_permissions()
    rows = [table[event] for event in events] + ([table["merge"]] if merges else [])
    most: dict[str, str] = {}
    for row in rows:
        for name, level in row.items():
            if LEVELS[level] > LEVELS.get(most.get(name, "none"), 0):
                most[name] = level
    return most


def excess(asked: dict[str, str], may: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in asked.items() if LEVELS[v] > LEVELS.get(may.get(k, "none"), 0)}


def test_the_permission_table_covers_every_event_the_action_handles() -> None:
    assert set(documented_permissions()) == {
        "pull_request",
        "push",
        "issue_comment",
        "merge_group",
        "merge",
    }
    assert excess({"contents": "write"}, allowed({"pull_request"}, merges=False)) == {
        "contents": "write"
    }
    assert excess({"contents": "write"}, allowed({"pull_request"}, merges=True)) == {}


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_each_job_asks_only_for_the_permissions_its_events_need(path: Path) -> None:
    workflow = load(path)
    assert workflow["permissions"] == {}, "nothing for the workflow: each job asks for its own"
    for name, job in jobs(workflow).items():
        asked = job["permissions"]
        assert isinstance(asked, dict), f"{name}: a mapping, never read-all or write-all"
        merges = any(step.get("with", {}).get("merge") for step in job["steps"])
        assert excess(asked, allowed(events_of_job(workflow, job), merges)) == {}, name
        assert asked.get("checks") == "write" and asked.get("contents") in ("read", "write"), name
    granted = [
        line
        for line in path.read_text(encoding="utf-8").splitlines()
        if re.match(r"\s+[a-z-]+: (read|write)\b", line)
    ]
    assert granted and all(" # " in line for line in granted), "each permission says why"


def test_the_comment_workflow_is_filtered_and_says_why_it_is_safe() -> None:
    commented = [path for path in WORKFLOWS if "issue_comment" in triggers(load(path))]
    assert commented == [COMMENTS]
    workflow = load(COMMENTS)
    assert on_of(workflow)["issue_comment"] == {"types": ["created"]}
    for job in jobs(workflow).values():
        condition = str(job["if"])
        assert "github.event.issue.pull_request" in condition and "'/judge'" in condition
    lines = COMMENTS.read_text(encoding="utf-8").splitlines()
    (at,) = [n for n, line in enumerate(lines) if "zizmor: ignore[dangerous-triggers]" in line]
    reason = " ".join(
        line.strip("# ").strip() for line in lines[:at] if line.strip().startswith("#")
    )
    assert "never checks out or runs pull-request code" in reason
    assert "authorises each command through the API" in reason


@pytest.mark.parametrize("path", [ACTION, *WORKFLOWS], ids=lambda p: p.name)
def test_every_lint_exception_stands_beside_its_reason(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    for n, line in enumerate(lines):
        if "zizmor: ignore" in line:
            assert n > 0 and lines[n - 1].strip().startswith("#"), f"{path.name}:{n + 1}"


# -- the action's scripts, run -----------------------------------------------------------------


def bash(script: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A step's script as GitHub runs `shell: bash`, with only the given environment."""
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=_TEST_TIMEOUT,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result


def judge_env_inputs() -> dict[str, str]:
    """The judge step's `INPUT_JUDGE_X: ${{ inputs.y }}` lines: setting -> input."""
    env = action_step("Judge")["env"]
    found = {}
    for name, value in env.items():
        if name.startswith("INPUT_"):
            match = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", str(value))
            assert match, name
            found[name.removeprefix("INPUT_")] = match[1]
    return found


def test_every_output_is_one_judge_bot_writes() -> None:
    written = {
        line.split("=", 1)[0]
        for line in output_lines(RunOutcome(), Path("verdicts.jsonl"), Path("cache")).splitlines()
    }
    outputs = load(ACTION)["outputs"]
    assert set(outputs) <= written, set(outputs) - written
    for name, output in outputs.items():
        assert output["value"] == f"${{{{ steps.judge.outputs.{name} }}}}", name


def test_every_judge_input_names_a_setting_judge_bot_reads() -> None:
    settings = {
        f"JUDGE_{name.upper()}"
        for model in (JudgeSettings, ActionSettings)
        for name in model.model_fields
    }
    mapped = judge_env_inputs()
    assert mapped and set(mapped) <= settings, set(mapped) - settings
    inputs = load(ACTION)["inputs"]
    assert set(mapped.values()) <= set(inputs)
    unmapped = set(inputs) - set(mapped.values())
    assert unmapped == {"token", "cache", "python-version", "retention-days"}


STAND_IN = """import json, os, sys
print(json.dumps({"argv": sys.argv[1:], "env": dict(os.environ)}))
"""


def run_judge_step(tmp_path: Path, env: dict[str, str]) -> dict[str, Any]:
    """The judge step's script under bash, with a stand-in `judge-bot` that prints what it
    was given."""
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    fake = venv / "bin" / "judge-bot"
    fake.write_text(f"#!{sys.executable}\n{STAND_IN}")
    fake.chmod(0o755)
    script = tmp_path / "judge.sh"
    script.write_text(action_step("Judge")["run"], encoding="utf-8")
    result = bash(script, {"VENV": str(venv), **env})
    answer = json.loads(result.stdout)
    assert isinstance(answer, dict)
    return answer


def test_inputs_map_to_settings_and_an_empty_input_sets_nothing(tmp_path: Path) -> None:
    """GitHub passes every input, set or not: an empty one must leave the step's own `env:`
    (or judge-bot's default) in force, a set one wins, and no INPUT_ variable is left."""
    given = {f"INPUT_{setting}": "" for setting in judge_env_inputs()}
    given |= {
        "INPUT_JUDGE_MODE": "blocking",
        "INPUT_JUDGE_LLM_API_KEY": "sk-from-secret",
        "INPUT_JUDGE_ACTION_MERGE": "merge-queue",
        "INPUT_JUDGE_QUICK_MODEL": "",
        "JUDGE_QUICK_MODEL": "from-step-env",
        "JUDGE_DEEP_MODEL": "overridden",
        "INPUT_JUDGE_DEEP_MODEL": "claude-sonnet-4-5",
    }
    answer = run_judge_step(tmp_path, given)
    env = answer["env"]
    assert answer["argv"] == ["action"]
    assert env["JUDGE_MODE"] == "blocking"
    assert env["JUDGE_LLM_API_KEY"] == "sk-from-secret"
    assert env["JUDGE_ACTION_MERGE"] == "merge-queue"
    assert env["JUDGE_QUICK_MODEL"] == "from-step-env"
    assert env["JUDGE_DEEP_MODEL"] == "claude-sonnet-4-5"
    assert "JUDGE_LLM_PROVIDER" not in env and "JUDGE_TIEBREAKER_MODEL" not in env
    assert not [name for name in env if name.startswith("INPUT_")]


def run_cache_key_step(tmp_path: Path, cache: Path) -> str:
    output = tmp_path / "github_output"
    output.write_text("")
    step = action_step("Name the verdict cache by its content")
    script = tmp_path / "key.sh"
    script.write_text(step["run"], encoding="utf-8")
    bash(script, {"PYTHON": sys.executable, "CACHE_FILE": str(cache), "GITHUB_OUTPUT": str(output)})
    return output.read_text()


def test_the_cache_is_saved_under_its_contents_digest(tmp_path: Path) -> None:
    """Each run restores the newest entry and saves under the file's digest: a run that
    changed nothing names an existing entry; no file, nothing saved."""
    cache = tmp_path / "verdict-cache.sqlite3"
    assert run_cache_key_step(tmp_path, cache) == ""
    cache.write_bytes(b"verdicts")
    first = run_cache_key_step(tmp_path, cache)
    assert re.fullmatch(r"key=judge-bot-verdicts-[0-9a-f]{64}\n", first)
    assert run_cache_key_step(tmp_path, cache) == first
    cache.write_bytes(b"more verdicts")
    assert run_cache_key_step(tmp_path, cache) != first
    restore = action_step("Restore the verdict cache")["with"]
    assert restore["restore-keys"] == "judge-bot-verdicts-"
    assert not str(restore["key"]).startswith("judge-bot-verdicts-${{ hashFiles")
    save = action_step("Save the verdict cache")["with"]
    assert save["path"] == restore["path"] and save["key"] == "${{ steps.cache-key.outputs.key }}"


def test_the_records_are_kept_whatever_the_verdict() -> None:
    upload = action_step("Keep the verdict records")
    assert str(upload["if"]).startswith("always()")
    judge_dir = action_step("Judge")["env"]["JUDGE_ACTION_DIR"]
    assert upload["with"]["path"] == f"{judge_dir}/verdicts.jsonl"
    assert (
        action_step("Restore the verdict cache")["with"]["path"]
        == f"{judge_dir}/verdict-cache.sqlite3"
    )


# -- the page ----------------------------------------------------------------------------------


def yaml_blocks() -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def test_the_page_shows_the_minimal_workflow_as_the_file_has_it() -> None:
    minimal = (ROOT / "docs" / "workflows" / "minimal.yml").read_text(encoding="utf-8")
    assert yaml_blocks()[0] == minimal
    assert len(minimal.splitlines()) < 20, "copy-paste size"
    assert triggers(load(ROOT / "docs" / "workflows" / "minimal.yml")) == {"pull_request"}


def test_every_workflow_on_the_page_is_a_checked_file() -> None:
    files = {path.read_text(encoding="utf-8") for path in WORKFLOWS}
    assert all(block in files for block in yaml_blocks())


def test_the_page_lists_every_example_workflow() -> None:
    listed = set(re.findall(r"\]\(workflows/([\w.-]+\.yml)\)", PAGE.read_text(encoding="utf-8")))
    assert listed == {path.name for path in WORKFLOWS}


def first_column_names() -> set[str]:
    """The names in the first column of the page's tables."""
    rows = [row for row in PAGE.read_text(encoding="utf-8").splitlines() if row.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([a-z-]+)`", row.split(" | ")[0])}


def test_the_page_documents_every_input_and_output() -> None:
    action = load(ACTION)
    documented = first_column_names()
    assert set(action["inputs"]) <= documented, set(action["inputs"]) - documented
    assert set(action["outputs"]) <= documented, set(action["outputs"]) - documented


def test_the_security_table_names_tests_that_exist() -> None:
    """Each default's test is this file's or `path::name` in another; each one is there."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## Security defaults", 1)[1].split("\n### ", 1)[0]
    rows = [row for row in section.splitlines() if row.startswith("| ") and "---" not in row]
    for row in rows[1:]:
        named = re.findall(r"`((?:tests/[\w/]+\.py::)?test_\w+)`", row.rsplit(" | ", 1)[1])
        assert named or "the App's tests" in row, row
        for test in named:
            path, _, name = test.rpartition("::")
            source = (
                (ROOT / path).read_text(encoding="utf-8") if path else Path(__file__).read_text()
            )
            assert re.search(rf"^(async )?def {name}\(", source, re.MULTILINE), test


def test_the_pages_links_resolve() -> None:
    text = re.sub(r"```.*?```", "", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)
    for target in _LINK.findall(text):
        if "://" in target:
            continue
        file, _, anchor = target.partition("#")
        resolved = (PAGE.parent / file).resolve() if file else PAGE
        assert resolved.exists(), target
        if anchor and resolved.suffix == ".md":
            assert anchor in anchors(resolved), target
