"""`judge-bot serve` at start: an address a person can open, a busy port as one line and
exit 2 before any claim to listen, and the server's timeouts handed to aiohttp (issue 24,
items 6 and 16). The timeouts at work on a running server: `test_cli_serve_timeouts.py`."""

from __future__ import annotations

import json
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot import cli
from bot.settings.server import ServerSettings
from tests.test_settings_documented import documented_text


class Started:
    """What `serve` handed to aiohttp, and what it logged, with aiohttp's run_app stubbed."""

    def __init__(self) -> None:
        self.calls: list[tuple[web.Application, dict[str, Any]]] = []
        self.lines: list[dict[str, Any]] = []
        self.port = 0

    def run_app(self, app: web.Application, **kwargs: Any) -> None:
        sockets = kwargs["sock"]
        self.port = sockets[0].getsockname()[1]
        # Listening already: a client's connection is queued until the app serves.
        with socket.create_connection(("127.0.0.1", self.port), timeout=5):
            pass
        self.calls.append((app, kwargs))

    def serve(self, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
        status = cli.main(["serve"])
        err = capsys.readouterr().err
        self.lines.extend(json.loads(line) for line in err.splitlines() if line.startswith("{"))
        return status, err

    def messages(self) -> list[str]:
        return [str(line["message"]) for line in self.lines]


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Started]:
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "APP_", "GHE_")) or name in ("PRIVATE_KEY", "DATABASE_URL"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOG_FORMAT", "json")
    monkeypatch.setenv("LOG_LEVEL", "info")
    monkeypatch.setenv("HOST", "127.0.0.1")
    monkeypatch.setenv("PORT", "0")
    stub = Started()
    monkeypatch.setattr(web, "run_app", stub.run_app)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        yield stub
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("0.0.0.0", "http://localhost:3000/"),
        ("::", "http://localhost:3000/"),
        ("", "http://localhost:3000/"),
        ("127.0.0.1", "http://127.0.0.1:3000/"),
        ("::1", "http://[::1]:3000/"),
        ("bot.example.com", "http://bot.example.com:3000/"),
    ],
)
def test_the_url_to_open_is_one_a_browser_can_reach(host: str, url: str) -> None:
    assert cli.browse_url(host, 3000) == url


def test_bound_to_every_address_the_log_says_to_open_localhost(
    started: Started, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST", "0.0.0.0")
    assert started.serve(capsys)[0] == 0
    port = started.port
    assert port != 0, "PORT=0 is logged as the port the system chose"
    (hint,) = [m for m in started.messages() if m.startswith("APP_ID is not set")]
    assert f"open http://localhost:{port}/ and press" in hint
    (listening,) = [m for m in started.messages() if " listening on " in m]
    assert f"listening on 0.0.0.0:{port}, open http://localhost:{port}/;" in listening
    assert "http://0.0.0.0" not in "\n".join(started.messages())


def test_a_busy_port_is_one_line_and_exit_2_before_any_claim_to_listen(
    started: Started, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        monkeypatch.setenv("PORT", str(port))
        status, err = started.serve(capsys)
    assert status == 2
    assert started.calls == []
    assert not any("listening" in m for m in started.messages())
    (line,) = [line for line in err.splitlines() if not line.startswith("{")]
    assert line == (
        f"judge-bot: cannot listen on 127.0.0.1:{port} (HOST, PORT): Address already in use"
    )
    assert "Traceback" not in err


def test_a_host_that_does_not_resolve_is_one_line_and_exit_2(
    started: Started, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST", "no-such-host.invalid")
    status, err = started.serve(capsys)
    assert status == 2 and started.calls == []
    (line,) = [line for line in err.splitlines() if not line.startswith("{")]
    assert line.startswith("judge-bot: cannot listen on no-such-host.invalid:0 (HOST, PORT): ")


def test_the_server_gets_its_timeouts_and_never_inflates_a_body(
    started: Started, capsys: pytest.CaptureFixture[str]
) -> None:
    assert started.serve(capsys)[0] == 0
    ((app, kwargs),) = started.calls
    defaults = ServerSettings.model_construct()
    assert kwargs["keepalive_timeout"] == defaults.keepalive_timeout_seconds == 75.0
    assert kwargs["auto_decompress"] is False
    assert "host" not in kwargs and "port" not in kwargs
    # Innermost, so the app's own middlewares see its 408 and never its timeout (its work:
    # test_cli_serve_timeouts.py).
    assert getattr(app.middlewares[-1], "__qualname__", "").startswith("body_deadline.")


def test_the_timeouts_are_read_from_their_settings(
    started: Started, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JUDGE_KEEPALIVE_TIMEOUT_SECONDS", "12.5")
    assert started.serve(capsys)[0] == 0
    ((_, kwargs),) = started.calls
    assert kwargs["keepalive_timeout"] == 12.5


@pytest.mark.parametrize(
    ("name", "value"),
    [("JUDGE_BODY_TIMEOUT_SECONDS", "0"), ("JUDGE_KEEPALIVE_TIMEOUT_SECONDS", "soon")],
)
def test_a_bad_timeout_stops_serve_with_one_line_naming_it(
    started: Started,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    value: str,
) -> None:
    monkeypatch.setenv(name, value)
    status, err = started.serve(capsys)
    assert status == 2 and started.calls == []
    (line,) = err.splitlines()
    assert line.startswith(f"judge-bot: configuration error: {name}: ")


def test_every_server_timeout_is_documented() -> None:
    text = documented_text()
    names = [f"JUDGE_{field.upper()}" for field in ServerSettings.model_fields]
    assert names and [name for name in names if f"`{name}`" not in text] == []
