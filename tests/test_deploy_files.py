"""The container files do what docs/deploy.md says they do.

Docker is usually not at hand, so the files are read as Docker would read them: the
Dockerfile's instructions (continuation lines joined, comments dropped), `.dockerignore`'s
patterns (Docker's matching: anchored at the root, `**` for any depth, the last match wins)
and compose.yaml as YAML, with Compose's `${VAR}` interpolation where a value matters. The
health check and the command are then run for real against `judge-bot serve` on this machine,
and the proxy's configuration is validated by Caddy or the image built by Docker when they
are installed (skipped, with the reason, when not).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from bot.dashboard.access import cookie_name
from bot.settings import Settings
from bot.storage import storage_from_url
from bot.storage.base import MAX_BODY_BYTES
from bot.storage.sqlite import SqliteStorage
from tests.support.app_helpers import make_settings, running_app
from tests.support.setting_names import all_setting_names

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
COMPOSE = ROOT / "compose.yaml"
DEPLOY_DOC = ROOT / "docs" / "deploy.md"
DATA_URL = "sqlite:////data/judge-bot.sqlite3"

# -- reading the Dockerfile ----------------------------------------------------------------


@dataclass(frozen=True)
class Instruction:
    keyword: str
    arguments: str
    line: int


def parse_dockerfile(text: str) -> list[Instruction]:
    """Instructions with continuation lines joined; comment lines dropped, as Docker does
    (also inside a continued instruction)."""
    instructions: list[Instruction] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not parts:
            start = number
        if stripped.endswith("\\"):
            parts.append(stripped[:-1].strip())
            continue
        parts.append(stripped)
        keyword, _, arguments = " ".join(parts).partition(" ")
        instructions.append(Instruction(keyword.upper(), arguments.strip(), start))
        parts = []
    assert not parts, "the Dockerfile ends inside a continued instruction"
    return instructions


@cache
def dockerfile() -> tuple[Instruction, ...]:
    return tuple(parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8")))


def instructions(keyword: str) -> list[Instruction]:
    return [i for i in dockerfile() if i.keyword == keyword]


def only(keyword: str) -> Instruction:
    found = instructions(keyword)
    assert len(found) == 1, f"expected one {keyword}, found {len(found)}"
    return found[0]


def exec_form(arguments: str) -> list[str]:
    """A JSON-array argument list (exec form: no shell between Docker and the program)."""
    assert arguments.startswith("["), f"not exec form (a shell would run it): {arguments}"
    value = json.loads(arguments)
    assert isinstance(value, list) and all(isinstance(part, str) for part in value)
    return [str(part) for part in value]


def split_options(arguments: str) -> tuple[dict[str, str], str]:
    """`--name=value` options before the rest of an instruction's arguments."""
    options: dict[str, str] = {}
    rest = arguments
    while rest.startswith("--"):
        option, _, rest = rest.partition(" ")
        name, _, value = option[2:].partition("=")
        options[name] = value
        rest = rest.lstrip()
    return options, rest


def image_env() -> dict[str, str]:
    """What the image's ENV instructions set (`KEY=value` pairs)."""
    env: dict[str, str] = {}
    for instruction in instructions("ENV"):
        for pair in shlex.split(instruction.arguments):
            name, sep, value = pair.partition("=")
            assert sep, f"line {instruction.line}: write ENV as KEY=value"
            env[name] = value
    return env


def healthcheck_command() -> list[str]:
    _, rest = split_options(only("HEALTHCHECK").arguments)
    keyword, _, command = rest.partition(" ")
    assert keyword.upper() == "CMD"
    return exec_form(command.strip())


def container_command() -> list[str]:
    """ENTRYPOINT followed by CMD: what the container runs."""
    entrypoint = instructions("ENTRYPOINT")
    command = instructions("CMD")
    argv = exec_form(entrypoint[-1].arguments) if entrypoint else []
    return argv + (exec_form(command[-1].arguments) if command else [])


# -- the Dockerfile ------------------------------------------------------------------------


def test_base_image_is_a_slim_official_python_pinned_by_tag() -> None:
    (base,) = instructions("FROM")
    image = base.arguments.split()[0]
    match = re.fullmatch(
        r"python:(?P<major>3)\.(?P<minor>\d+)(?:\.\d+)?-slim(?:-[a-z]+)?(?:@sha256:[0-9a-f]{64})?",
        image,
    )
    assert match, f"{image}: expected python:3.N[.P]-slim[-distro]"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    floor = re.fullmatch(r">=\s*3\.(\d+)", project["requires-python"])
    assert floor is not None
    assert int(match["minor"]) >= int(floor[1]), "older than requires-python"


def test_runs_as_a_user_that_is_not_root() -> None:
    users = instructions("USER")
    assert users, "no USER: the server would run as root"
    user = users[-1].arguments.split(":")[0]
    assert user not in {"root", "0", ""}
    last_user = users[-1].line
    assert all(i.line < last_user for i in instructions("RUN")), "a RUN after USER runs as it"
    assert all(i.line > last_user for i in instructions("CMD") + instructions("HEALTHCHECK"))


def test_installs_the_project_with_pip() -> None:
    assert any(re.search(r"\bpip install \.(\s|$)", i.arguments) for i in instructions("RUN"))


def test_command_is_judge_bot_serve() -> None:
    assert container_command() == ["judge-bot", "serve"]


def test_healthcheck_asks_healthz_with_python_on_the_configured_port() -> None:
    options, _ = split_options(only("HEALTHCHECK").arguments)
    assert {"interval", "timeout", "start-period", "retries"} <= set(options)
    command = healthcheck_command()
    assert command[:2] == ["python", "-c"], "the slim image has Python, not curl"
    script = command[2]
    assert "/healthz" in script
    assert "os.environ.get('PORT'" in script, "the check follows PORT"
    assert not {"curl", "wget"} & set(re.findall(r"\w+", " ".join(command)))


def test_database_is_sqlite_on_the_data_volume() -> None:
    env = image_env()
    assert env["DATABASE_URL"] == DATA_URL
    assert env["PORT"] == "3000"
    assert env["HOST"] == "0.0.0.0"
    volumes = [v for i in instructions("VOLUME") for v in exec_form(i.arguments)]
    assert volumes == ["/data"]
    assert [i.arguments for i in instructions("EXPOSE")] == [env["PORT"]]
    assert isinstance(storage_from_url(env["DATABASE_URL"]), SqliteStorage)
    assert Path(DATA_URL.removeprefix("sqlite:///")).parent == Path("/data")


def copied_sources() -> list[str]:
    sources: list[str] = []
    for instruction in instructions("COPY") + instructions("ADD"):
        options, rest = split_options(instruction.arguments)
        assert "from" not in options, "single-stage build: nothing is copied between stages"
        parts = exec_form(rest) if rest.startswith("[") else shlex.split(rest)
        sources += parts[:-1]
    return sources


def files_pip_needs() -> set[str]:
    """The files pyproject.toml names, which `pip install .` reads: the readme and the
    license files."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    readme = project.get("readme")
    named = {readme if isinstance(readme, str) else readme["file"]} if readme else set()
    license_ = project.get("license")
    if isinstance(license_, dict) and "file" in license_:
        named.add(license_["file"])
    named.update(project.get("license-files", []))
    return {str(name) for name in named}


def test_every_copied_path_exists_and_is_in_the_build_context() -> None:
    sources = copied_sources()
    assert set(sources) == {"pyproject.toml", *files_pip_needs(), "bot"}
    patterns = dockerignore_patterns()
    for source in sources:
        assert (ROOT / source).exists(), f"COPY {source}: not in the repository"
        assert not ignored(source, patterns), f"COPY {source}: .dockerignore leaves it out"
    package = ROOT / "bot"
    for path in package.rglob("*"):
        relative = path.relative_to(ROOT).as_posix()
        if path.is_file() and "__pycache__" not in relative:
            assert not ignored(relative, patterns), f"{relative} would be missing from the image"


# -- .dockerignore -------------------------------------------------------------------------


@dataclass(frozen=True)
class IgnorePattern:
    regex: re.Pattern[str]
    exception: bool


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Docker's pattern syntax (Go's filepath.Match plus `**`) as a regular expression."""
    out = ""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out += "(?:.*/)?"
            index += 3
            continue
        if pattern.startswith("**", index):
            out += ".*"
            index += 2
            continue
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[":
            end = pattern.index("]", index)
            body = pattern[index + 1 : end]
            out += "[" + ("^" + body[1:] if body.startswith("!") else body) + "]"
            index = end
        else:
            out += re.escape(char)
        index += 1
    return re.compile(out)


def parse_dockerignore(text: str) -> list[IgnorePattern]:
    patterns: list[IgnorePattern] = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        exception = line.startswith("!")
        cleaned = os.path.normpath(line.lstrip("!").strip()).lstrip("/")
        patterns.append(IgnorePattern(_glob_regex(cleaned), exception))
    return patterns


@cache
def dockerignore_patterns() -> tuple[IgnorePattern, ...]:
    return tuple(parse_dockerignore(DOCKERIGNORE.read_text(encoding="utf-8")))


def ignored(path: str, patterns: Sequence[IgnorePattern]) -> bool:
    """Whether Docker leaves `path` out of the build context: the last pattern matching the
    path or one of its parent directories decides."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    verdict = False
    for pattern in patterns:
        if any(pattern.regex.fullmatch(prefix) for prefix in prefixes):
            verdict = not pattern.exception
    return verdict


@pytest.mark.parametrize(
    "path",
    [
        ".env",
        ".env.production",
        ".venv/bin/python",
        ".git/HEAD",
        "tests/fixtures/github/webhooks/push.json",
        "tests/test_app.py",
        "benchmarks/intake.py",
        "bot/__pycache__/app.cpython-311.pyc",
        "bot/judge/__pycache__/engine.cpython-311.pyc",
        ".mypy_cache/3.11/bot/app.meta.json",
        ".ruff_cache/CACHEDIR.TAG",
        ".pytest_cache/README.md",
        ".coverage",
        "judge-bot.sqlite3",
        "judge-bot.sqlite3-wal",
        "judge-bot.private-key.pem",
        "secrets/app.2026-01-01.private-key.pem",
        "judge_bot.egg-info/PKG-INFO",
    ],
)
def test_dockerignore_keeps_secrets_caches_and_test_data_out(path: str) -> None:
    assert ignored(path, dockerignore_patterns())


@pytest.mark.parametrize(
    "path", ["pyproject.toml", "README.md", "bot/app.py", "bot/templates/setup.html"]
)
def test_dockerignore_keeps_what_the_image_needs(path: str) -> None:
    assert not ignored(path, dockerignore_patterns())


def test_ignore_matching_follows_docker() -> None:
    patterns = parse_dockerignore("/build\n**/*.pyc\ndocs\n!docs/keep.md\n*.md\n")
    assert ignored("build/lib/x.py", patterns), "a directory's contents go with it"
    assert not ignored("src/build", patterns), "a pattern without ** is anchored at the root"
    assert ignored("x.pyc", patterns) and ignored("a/b/x.pyc", patterns)
    assert ignored("docs/a.txt", patterns)
    assert not ignored("docs/keep.md", patterns), "! takes a file back, the last match wins"
    assert ignored("README.md", patterns)
    assert not ignored("a/README.md", patterns), "* does not cross /"


# -- compose.yaml --------------------------------------------------------------------------


def _mapping(value: object, where: str) -> dict[str, Any]:
    assert isinstance(value, dict), f"{where}: expected a mapping"
    return {str(key): item for key, item in value.items()}


@cache
def compose() -> dict[str, Any]:
    return _mapping(yaml.safe_load(COMPOSE.read_text(encoding="utf-8")), "compose.yaml")


def service(name: str) -> dict[str, Any]:
    return _mapping(_mapping(compose()["services"], "services")[name], name)


def environment(name: str) -> dict[str, str]:
    env = service(name).get("environment", {})
    if isinstance(env, list):
        pairs = [str(item).partition("=") for item in env]
        env = {key: value for key, _, value in pairs}
    return {key: str(value) for key, value in _mapping(env, f"{name}.environment").items()}


_VARIABLE = re.compile(r"\$\{(?P<name>\w+)(?:(?P<op>:?[-?+])(?P<arg>[^}]*))?\}")
_EXPRESSION = re.compile(r"(?P<name>\w+)(?P<op>:?[-?+])?")


def interpolate(text: str, values: Mapping[str, str]) -> str:
    """Compose's `${NAME}`, `${NAME:-default}`, `${NAME:?error}` and `${NAME:+replacement}`
    (and their forms without `:`, for unset only), nested as Compose nests them, with `values`
    as .env; `$$` is a dollar sign."""
    return _interpolate(text.replace("$$", "\x00"), values).replace("\x00", "$")


def _interpolate(text: str, values: Mapping[str, str]) -> str:
    out: list[str] = []
    at = 0
    while (start := text.find("${", at)) != -1:
        out.append(text[at:start])
        value, at = _expression(text, start + 2, values)
        out.append(value)
    out.append(text[at:])
    return "".join(out)


def _expression(text: str, at: int, values: Mapping[str, str]) -> tuple[str, int]:
    """The value of the `${...}` whose name starts at `at`, and where it ends. The argument
    is read only when its operator needs it, as Compose does."""
    match = _EXPRESSION.match(text, at)
    assert match is not None, f"not a Compose variable: {text[at - 2 :]}"
    name, op = match["name"], match["op"] or ""
    end = _closing_brace(text, match.end())
    argument = text[match.end() : end]
    present = bool(values.get(name)) if op.startswith(":") or not op else name in values
    kind = op[-1:]
    if kind == "-":
        value = values[name] if present else _interpolate(argument, values)
    elif kind == "?":
        assert present, f"compose would stop: {_interpolate(argument, values)}"
        value = values[name]
    elif kind == "+":
        value = _interpolate(argument, values) if present else ""
    else:
        value = values.get(name, "")
    return value, end + 1


def _closing_brace(text: str, at: int) -> int:
    depth = 0
    for index in range(at, len(text)):
        if text.startswith("${", index):
            depth += 1
        elif text[index] == "}":
            if depth == 0:
                return index
            depth -= 1
    raise AssertionError(f"an unclosed ${{ in {text!r}")


def test_interpolation_follows_compose() -> None:
    values = {"SET": "v", "EMPTY": ""}
    assert interpolate("${SET}/${UNSET}/$${SET}", values) == "v//${SET}"
    assert interpolate("${UNSET:-d} ${EMPTY:-d} ${EMPTY-d} ${SET:-d}", values) == "d d  v"
    assert interpolate("${SET:+r} ${EMPTY:+r} ${EMPTY+r} ${UNSET+r}", values) == "r  r "
    assert interpolate("${UNSET:-${SET:+https://${SET}}}", values) == "https://v"
    assert interpolate("${SET:-${UNSET:?never read}}", values) == "v"
    with pytest.raises(AssertionError, match="compose would stop: set it"):
        interpolate("${EMPTY:?set it}", values)


def test_compose_has_the_database_the_app_and_the_proxy() -> None:
    assert set(_mapping(compose()["services"], "services")) == {"postgres", "app", "proxy"}
    assert str(service("postgres")["image"]).startswith("postgres:")
    assert re.fullmatch(r"postgres:\d+(\.\d+)?(-[a-z]+)?", str(service("postgres")["image"]))
    assert service("app")["build"] == "."


def test_app_runs_several_replicas_on_postgresql() -> None:
    app = service("app")
    assert int(_mapping(app["deploy"], "deploy")["replicas"]) >= 2
    assert "ports" not in app, "replicas cannot share a published host port: the proxy is in front"
    assert [str(port) for port in app["expose"]] == [environment("app")["PORT"]]
    depends = _mapping(app["depends_on"], "app.depends_on")
    assert _mapping(depends["postgres"], "postgres")["condition"] == "service_healthy"


def test_database_url_points_the_app_at_the_postgres_service() -> None:
    db = environment("postgres")
    url = environment("app")["DATABASE_URL"]
    password_reference = db["POSTGRES_PASSWORD"]
    assert _VARIABLE.fullmatch(password_reference), "the password comes from .env"
    assert password_reference in url, "the app uses the password the database was given"
    parsed = urlsplit(interpolate(url, {"POSTGRES_PASSWORD": "s3cretpassword"}))
    assert parsed.scheme == "postgresql"
    assert parsed.hostname == "postgres"
    assert parsed.port == 5432
    assert parsed.username == db["POSTGRES_USER"]
    assert parsed.password == "s3cretpassword"
    assert parsed.path == "/" + db["POSTGRES_DB"]
    with pytest.raises(AssertionError, match="POSTGRES_PASSWORD"):
        interpolate(url, {})


def test_secrets_come_from_the_env_file_never_from_compose_yaml() -> None:
    assert service("app")["env_file"] in (".env", [".env"])
    for name in ("postgres", "app", "proxy"):
        for key, value in environment(name).items():
            if re.search(r"SECRET|PASSWORD|TOKEN|KEY", key):
                assert _VARIABLE.fullmatch(value), f"{name}.{key}: a secret in compose.yaml"
            credentials = re.match(r"\w+://([^@/]*)@", value)
            if credentials is not None:
                assert "${" in credentials[1], f"{name}.{key}: a password in compose.yaml"
    for key in ("APP_ID", "PRIVATE_KEY", "WEBHOOK_SECRET"):
        assert key not in environment("app"), f"{key} belongs in .env"


def compose_healthcheck(name: str) -> dict[str, Any]:
    return _mapping(service(name)["healthcheck"], f"{name}.healthcheck")


def test_healthchecks() -> None:
    app = compose_healthcheck("app")
    assert app["test"] == ["CMD", *healthcheck_command()], "the same check as the image's"
    postgres = compose_healthcheck("postgres")
    assert postgres["test"][0] == "CMD-SHELL" and "pg_isready" in postgres["test"][1]
    proxy_depends = _mapping(service("proxy")["depends_on"], "proxy.depends_on")
    assert _mapping(proxy_depends["app"], "app")["condition"] == "service_healthy"


def test_app_is_given_time_to_finish_running_deliveries() -> None:
    grace = str(service("app")["stop_grace_period"])
    assert grace.endswith("s") and int(grace[:-1]) > 10, "the server waits 10 s for deliveries"


def caddyfile(site: str) -> str:
    configs = _mapping(compose()["configs"], "configs")
    content = str(_mapping(configs["caddyfile"], "caddyfile")["content"])
    return interpolate(content, {"PUBLIC_HOST": site})


_SIZES = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def test_proxy_terminates_tls_allows_githubs_bodies_and_hides_metrics() -> None:
    proxy = service("proxy")
    assert {"80:80", "443:443"} <= {str(port) for port in proxy["ports"]}
    mounts = [_mapping(item, "proxy.configs") for item in proxy["configs"]]
    assert mounts == [{"source": "caddyfile", "target": "/etc/caddy/Caddyfile"}]
    text = caddyfile("judge.example.com")
    assert text.startswith("judge.example.com {"), "a host name: Caddy gets it a certificate"
    assert caddyfile("").startswith(":80 {"), "unset: plain HTTP for a trial"
    size = re.search(r"max_size (\d+)([KMG]i?B|B)", text)
    assert size is not None
    assert int(size[1]) * _SIZES[size[2].upper()] >= MAX_BODY_BYTES, "below GitHub's 25 MB"
    assert re.search(r"@metrics path /metrics /metrics/\*\n\s*respond @metrics 404", text)
    port = re.search(r"name app\n\s*port (\d+)", text)
    assert port is not None and port[1] == environment("app")["PORT"]


def test_caddy_accepts_the_proxy_configuration(tmp_path: Path) -> None:
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy is not installed: the Caddyfile is checked by the rules above only")
    config = tmp_path / "Caddyfile"
    config.write_text(caddyfile(":8080"), encoding="utf-8")
    result = subprocess.run(
        [caddy, "validate", "--adapter", "caddyfile", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def compose_app_environment(env_file: Mapping[str, str]) -> dict[str, str]:
    """The app container's environment as Compose makes it: `.env` (`env_file`), then
    `environment`, which wins, interpolated with `.env`."""
    return {**env_file, **{k: interpolate(v, env_file) for k, v in environment("app").items()}}


@pytest.mark.parametrize(
    ("env_file", "base_url"),
    [
        ({"PUBLIC_HOST": "judge.example.com"}, "https://judge.example.com"),
        ({}, ""),
        ({"PUBLIC_HOST": "", "BASE_URL": ""}, ""),
        (
            {"PUBLIC_HOST": "judge.example.com", "BASE_URL": "https://judge.example.com:8443"},
            "https://judge.example.com:8443",
        ),
    ],
)
def test_the_app_is_told_its_public_address(env_file: dict[str, str], base_url: str) -> None:
    """Caddy ends TLS: the app must learn its https address from BASE_URL, set from
    PUBLIC_HOST unless .env sets it; empty for the plain-HTTP trial (empty is unset)."""
    env = compose_app_environment({"POSTGRES_PASSWORD": "pw", **env_file})
    assert env["BASE_URL"] == base_url
    assert Settings(_env_file=None, BASE_URL=env["BASE_URL"]).base_url == (base_url or None)


TOKEN = "dashboard-token-0123456789abcdef"


@pytest.mark.parametrize(
    ("public_host", "origin"),
    [("judge.example.com", "https://judge.example.com"), ("", "http://judge.example.com")],
)
async def test_dashboard_sign_in_through_the_bundled_proxy(
    tmp_path: Path, github_keypair: Any, public_host: str, origin: str
) -> None:
    """A browser at https://PUBLIC_HOST signs in through Caddy, which keeps the Host header,
    adds X-Forwarded-*, and speaks plain http to the replica: the real app with the settings
    compose.yaml gives it (BASE_URL; the database stays a local SQLite file here). With
    PUBLIC_HOST unset, the trial on plain http."""
    env = compose_app_environment(
        {"POSTGRES_PASSWORD": "pw", "PUBLIC_HOST": public_host, "DASHBOARD_TOKEN": TOKEN}
    )
    settings = make_settings(
        github_keypair.private_pem,
        tmp_path,
        BASE_URL=env["BASE_URL"],
        DASHBOARD_TOKEN=env["DASHBOARD_TOKEN"],
    )
    forwarded = {
        "Host": urlsplit(origin).netloc,
        "X-Forwarded-For": "203.0.113.9",
        "X-Forwarded-Host": urlsplit(origin).netloc,
        "X-Forwarded-Proto": urlsplit(origin).scheme,
    }
    async with running_app(settings, start_workers=False) as (client, _):
        signed = await client.post(
            "/dashboard/sign-in",
            data={"token": TOKEN},
            headers={**forwarded, "Origin": origin},
            allow_redirects=False,
        )
        assert signed.status == 303, await signed.text()
        cookie = signed.cookies[cookie_name(origin.startswith("https:"))]
        page = await client.get(
            "/dashboard", headers={**forwarded, "Cookie": f"{cookie.key}={cookie.value}"}
        )
        assert page.status == 200, await page.text()
    assert bool(cookie["secure"]) is origin.startswith("https:"), "Secure over https"


# -- docs/deploy.md ------------------------------------------------------------------------

# Variables the page names that are not judge-bot's: Compose's, PostgreSQL's driver's, OpenSSL's.
NOT_OURS = {
    "POSTGRES_PASSWORD": "compose.yaml",
    "PUBLIC_HOST": "compose.yaml",
    "PGSSLMODE": "the PostgreSQL driver",
    "PGSSLROOTCERT": "the PostgreSQL driver",
    "SSL_CERT_FILE": "OpenSSL",
    "HTTP_PROXY": "the standard proxy variables",
    "HTTPS_PROXY": "the standard proxy variables",
    "ALL_PROXY": "the standard proxy variables",
    "NO_PROXY": "the standard proxy variables",
}


def judge_bot_settings() -> set[str]:
    return all_setting_names()


def test_deploy_doc_names_only_settings_that_exist() -> None:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b", text))
    named |= {name for name in ("PGSSLMODE", "PGSSLROOTCERT", "PORT", "HOST") if name in text}
    known = judge_bot_settings()
    assert named - known - set(NOT_OURS) == set()
    assert {"DATABASE_URL", "PORT", "JUDGE_WORKERS", "GITHUB_API_URL"} <= named & known
    for name in NOT_OURS:
        assert name not in known, f"{name} is a judge-bot setting now: document it as one"
    for name in ("POSTGRES_PASSWORD", "PUBLIC_HOST"):
        assert "${" + name in COMPOSE.read_text(encoding="utf-8")


def test_deploy_doc_links_resolve() -> None:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", heading.lower()).replace(" ", "-")
        for heading in re.findall(r"^#+ (.+)$", text, flags=re.MULTILINE)
    }
    for target in re.findall(r"\]\(([^)]+)\)", text):
        if target.startswith("#"):
            assert target[1:] in anchors, target
        elif "://" not in target:
            assert (DEPLOY_DOC.parent / target.split("#")[0]).exists(), target


def deploy_section(heading: str) -> str:
    text = DEPLOY_DOC.read_text(encoding="utf-8")
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match is not None, f"docs/deploy.md has no section {heading!r}"
    return match[1]


def test_deploy_doc_says_a_tls_proxy_needs_base_url() -> None:
    section = deploy_section("Behind a reverse proxy")
    assert "BASE_URL" in section
    assert "reads none of them" not in section, "the Host header and BASE_URL matter"
    compose_walk_through = deploy_section("Compose: PostgreSQL and several replicas")
    assert "BASE_URL" in compose_walk_through


def test_deploy_doc_explains_the_outbound_proxy() -> None:
    section = deploy_section("Behind an outbound proxy")
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "SSL_CERT_FILE"):
        assert f"`{name}`" in section, name
    assert "--env-file" in section and "compose" in section.lower()


# -- the command and the health check, run ------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_check(command: Sequence[str], env: Mapping[str, str]) -> int:
    argv = [sys.executable if part == "python" else part for part in command]
    result = subprocess.run(argv, env=dict(env), capture_output=True, timeout=30, check=False)
    return result.returncode


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], dict[str, str]]]:
    """The image's command, `judge-bot serve`, with the image's settings but a local database
    and a free port; setup mode (no APP_ID), which serves /healthz all the same."""
    program = Path(sys.executable).with_name(container_command()[0])
    if not program.exists():
        pytest.skip(f"{program.name} is not installed next to {sys.executable} (pip install -e .)")
    names = ("APP_ID", "PRIVATE_KEY", "PRIVATE_KEY_PATH", "WEBHOOK_SECRET", "WEBHOOK_PATH")
    env = {k: v for k, v in os.environ.items() if k not in names and not k.startswith("JUDGE_")}
    env.update(image_env())
    env.update(
        HOST="127.0.0.1",
        PORT=str(free_port()),
        DATABASE_URL=f"sqlite:///{tmp_path / 'judge-bot.sqlite3'}",
        LOG_LEVEL="WARNING",
    )
    process = subprocess.Popen(
        [str(program), *container_command()[1:]],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait_until_up(process, int(env["PORT"]))
        yield process, env
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
        if process.stderr is not None:
            process.stderr.close()


def _wait_until_up(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode(errors="replace") if process.stderr else ""
            pytest.fail(f"judge-bot serve exited at start-up:\n{error[-2000:]}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.1)
    pytest.fail("judge-bot serve did not answer /healthz within 30 s")


def test_health_checks_pass_on_the_running_server_and_fail_once_it_stops(
    server: tuple[subprocess.Popen[bytes], dict[str, str]],
) -> None:
    process, env = server
    compose_check = compose_healthcheck("app")["test"][1:]
    assert _run_check(healthcheck_command(), env) == 0
    assert _run_check(compose_check, env) == 0
    elsewhere = {**env, "PORT": str(free_port())}
    assert _run_check(healthcheck_command(), elsewhere) == 1, "the check follows PORT"

    # An outbound proxy in the settings (HTTP_PROXY) is not asked about 127.0.0.1.
    dead_proxy = f"http://127.0.0.1:{free_port()}"
    proxied = {**env, "HTTP_PROXY": dead_proxy, "http_proxy": dead_proxy}
    assert _run_check(healthcheck_command(), proxied) == 0
    assert _run_check(compose_check, proxied) == 0

    process.send_signal(signal.SIGTERM)  # docker stop
    assert process.wait(20) == 0, "SIGTERM is a clean shutdown"
    assert _run_check(healthcheck_command(), env) == 1


# -- the image, when Docker can build it ---------------------------------------------------


def test_docker_builds_the_image() -> None:
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("docker is not installed: the Dockerfile is checked by the rules above only")
    info = subprocess.run(
        [docker, "info", "--format", "{{.ServerVersion}}"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if info.returncode != 0:
        reason = (info.stderr.strip().splitlines() or ["no answer"])[-1]
        pytest.skip(f"the docker client cannot reach a daemon ({reason}); the image is not built")
    build = subprocess.run(
        [docker, "build", "--quiet", "--tag", "judge-bot:test", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-4000:]
