"""The credentials merged into .env: mode 0600, read back exactly, never a value replaced."""

from __future__ import annotations

import io
import stat
import subprocess
from pathlib import Path

import pytest
from dotenv import dotenv_values

from bot.registration.env_file import (
    EnvTarget,
    Saved,
    SaveError,
    Where,
    choose_target,
    format_assignment,
    overridden_by_environment,
    plan_update,
    save_credentials,
)
from bot.settings import Settings
from tests.support.fakes.github_fixtures import KeyPair

HEADER = "registered"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow+/=\nAQAB\n-----END RSA PRIVATE KEY-----\n"
VALUES = {
    "APP_ID": "123",
    "PRIVATE_KEY": PEM,
    "WEBHOOK_SECRET": "e340154128314309",
    "GITHUB_CLIENT_ID": "Iv1.8a61f9b3a7aba766",
    "GITHUB_CLIENT_SECRET": "1726be1638095a19",
}


def read_back(text: str) -> dict[str, str | None]:
    """As the settings loader reads a .env (python-dotenv, with interpolation), and the
    private key as the settings read it (`\\n` a line break)."""
    values = dict(dotenv_values(stream=io.StringIO(text)))
    if values.get("PRIVATE_KEY") is not None:
        values["PRIVATE_KEY"] = str(values["PRIVATE_KEY"]).replace("\\n", "\n")
    return values


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(
    "value",
    [
        "123",
        "Iv1.8a61f9b3a7aba766",
        PEM,
        'quote " and back\\slash',
        "tab\tand\rreturn",
        "it's $HOME, not ${ a variable",
        "spaces and # hash",
        "",
    ],
)
def test_values_read_back_exactly(value: str) -> None:
    if "${" in value:
        with pytest.raises(SaveError, match="NAME: the value cannot be written"):
            format_assignment("NAME", value)
        return
    assert read_back(format_assignment("NAME", value) + "\n") == {"NAME": value}
    assert read_back(format_assignment("PRIVATE_KEY", value) + "\n") == {"PRIVATE_KEY": value}


def test_the_private_key_is_one_unquoted_line_as_probot_writes_it() -> None:
    """No quotes, so `docker run --env-file` (which keeps quotes) passes the same value."""
    line = format_assignment("PRIVATE_KEY", PEM)
    assert line == "PRIVATE_KEY=" + PEM.replace("\n", "\\n")
    assert '"' not in line and "\n" not in line


@pytest.mark.parametrize(
    ("existing", "added", "unchanged", "conflicts"),
    [
        ("", list(VALUES), [], []),
        ("PORT=3000\n# APP_ID=123456\n", list(VALUES), [], []),
        ("APP_ID=\nWEBHOOK_SECRET=  \n", list(VALUES), [], []),
        ("APP_ID=123\n", [n for n in VALUES if n != "APP_ID"], ["APP_ID"], []),
        ("app_id=999\n", [], [], ["APP_ID"]),
        ("APP_ID=999\nGITHUB_CLIENT_SECRET=old\n", [], [], ["APP_ID", "GITHUB_CLIENT_SECRET"]),
        ("APP_ID=999\nAPP_ID=\n", list(VALUES), [], []),
        ("APP_ID=\nAPP_ID=999\n", [], [], ["APP_ID"]),
        ("PRIVATE_KEY_PATH=old.pem\n", [], [], ["PRIVATE_KEY_PATH"]),
        ("PRIVATE_KEY_PATH=\n", list(VALUES), [], []),
        (
            format_assignment("PRIVATE_KEY", PEM) + "\n",
            [n for n in VALUES if n != "PRIVATE_KEY"],
            ["PRIVATE_KEY"],
            [],
        ),
        ("PRIVATE_KEY=another\n", [], [], ["PRIVATE_KEY"]),
    ],
)
def test_plan_update(
    existing: str, added: list[str], unchanged: list[str], conflicts: list[str]
) -> None:
    plan = plan_update(existing, VALUES, HEADER)
    assert list(plan.conflicts) == conflicts
    if conflicts:
        assert plan.text is None and plan.added == ()
        return
    assert plan.text is not None
    assert sorted(plan.added) == sorted(added)
    assert list(plan.unchanged) == unchanged
    merged = read_back(plan.text)
    for name, value in VALUES.items():
        assert merged[name] == value
    assert plan.text.startswith(existing.split("APP_ID")[0])


def test_blank_names_are_filled_where_they_stand_and_the_rest_kept() -> None:
    existing = "# mine\nPORT=3000\nAPP_ID=\nLOG_LEVEL=info"
    plan = plan_update(existing, {"APP_ID": "7", "WEBHOOK_SECRET": "s"}, HEADER)
    assert (
        plan.text == "# mine\nPORT=3000\nAPP_ID=7\nLOG_LEVEL=info\n# registered\nWEBHOOK_SECRET=s\n"
    )
    last = plan_update("APP_ID=", {"APP_ID": "7"}, HEADER)
    assert last.text == "APP_ID=7"


def test_an_unparsable_line_is_kept_as_it_was() -> None:
    plan = plan_update("this is not an assignment\n", {"APP_ID": "7"}, HEADER)
    assert plan.text == "this is not an assignment\n# registered\nAPP_ID=7\n"


def test_the_environment_wins_over_the_file() -> None:
    environ = {"webhook_secret": "old", "APP_ID": " ", "HOME": "/root"}
    assert overridden_by_environment(tuple(VALUES), environ) == ["WEBHOOK_SECRET"]


def test_a_new_env_is_created_0600_and_the_loader_starts_from_it(
    tmp_path: Path, github_keypair: KeyPair
) -> None:
    pem = github_keypair.private_pem
    values = {**VALUES, "PRIVATE_KEY": pem}
    target = choose_target(tmp_path, {})
    assert target == EnvTarget(tmp_path.resolve() / ".env")
    saved = save_credentials(values, target, tmp_path, "side.env", HEADER)
    assert saved == Saved(tmp_path.resolve() / ".env", Where.ENV, tuple(values))
    assert mode(saved.path) == 0o600
    settings = Settings(_env_file=saved.path)
    assert settings.configured and settings.app_id == "123"
    assert settings.private_key_pem() == pem
    assert settings.github_client_secret is not None
    assert not (tmp_path / "side.env").exists()


def test_an_existing_env_is_merged_and_tightened_to_0600(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("PORT=3000\nAPP_ID=\n", encoding="utf-8")
    env.chmod(0o644)
    saved = save_credentials(VALUES, choose_target(tmp_path, {}), tmp_path, "side", HEADER)
    assert saved.where is Where.ENV
    assert mode(env) == 0o600
    assert read_back(env.read_text(encoding="utf-8"))["PORT"] == "3000"
    assert list(tmp_path.iterdir()) == [env], "no temporary file is left behind"


def test_a_conflict_leaves_env_alone_and_saves_a_file_of_its_own(tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text("APP_ID=999\n", encoding="utf-8")
    saved = save_credentials(VALUES, choose_target(tmp_path, {}), tmp_path, ".env.app-1", HEADER)
    assert saved.where is Where.SEPARATE
    assert saved.conflicts == ("APP_ID",)
    assert env.read_text(encoding="utf-8") == "APP_ID=999\n"
    separate = tmp_path.resolve() / ".env.app-1"
    assert saved.path == separate and mode(separate) == 0o600
    assert read_back(separate.read_text(encoding="utf-8")) == VALUES
    with pytest.raises(SaveError, match="already exists"):
        save_credentials(VALUES, choose_target(tmp_path, {}), tmp_path, ".env.app-1", HEADER)


def test_a_named_env_file_is_the_one_written(tmp_path: Path) -> None:
    named = tmp_path / "conf" / "judge.env"
    named.parent.mkdir()
    named.write_text("PORT=1\n", encoding="utf-8")
    target = choose_target(tmp_path, {"JUDGE_ENV_FILE": "conf/judge.env"})
    assert target.path == named.resolve()


def test_where_the_loader_reads_no_file_a_file_of_its_own_is_written(tmp_path: Path) -> None:
    target = choose_target(tmp_path, {"JUDGE_ENV_FILE": ""})
    assert target.path is None and "reads no .env" in str(target.reason)
    saved = save_credentials(VALUES, target, tmp_path, ".env.app-1", HEADER)
    assert saved.where is Where.SEPARATE and saved.conflicts == ()
    assert saved.reason == target.reason
    assert saved.path == tmp_path / ".env.app-1"
    missing = choose_target(tmp_path, {"JUDGE_ENV_FILE": "nowhere.env"})
    assert missing.path is None and "no such file" in str(missing.reason)


def test_a_file_git_tracks_is_never_written(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in (".env", "judge.env"):
        (tmp_path / name).write_text("PORT=1\n", encoding="utf-8")
        subprocess.run(["git", "-C", str(tmp_path), "add", name], check=True)
    default = choose_target(tmp_path, {})
    assert default.path is None and "git tracks this file" in str(default.reason)
    named = choose_target(tmp_path, {"JUDGE_ENV_FILE": "judge.env"})
    assert named.path is None and "git tracks judge.env" in str(named.reason)


def test_failures_name_the_file_never_a_value(tmp_path: Path) -> None:
    gone = EnvTarget(tmp_path / "no-such-dir" / ".env")
    with pytest.raises(SaveError, match="cannot be written") as caught:
        save_credentials(VALUES, gone, tmp_path, "side", HEADER)
    assert all(value not in str(caught.value) for value in VALUES.values())
    with pytest.raises(SaveError, match="cannot be written"):
        save_credentials(VALUES, EnvTarget(None, "why"), tmp_path / "no-such-dir", "side", HEADER)
    folder = tmp_path / "a-directory"
    folder.mkdir()
    with pytest.raises(SaveError, match="cannot be read"):
        save_credentials(VALUES, EnvTarget(folder), tmp_path, "side", HEADER)
    binary = tmp_path / "binary.env"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(SaveError, match="not UTF-8"):
        save_credentials(VALUES, EnvTarget(binary), tmp_path, "side", HEADER)
