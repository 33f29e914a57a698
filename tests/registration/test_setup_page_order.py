"""The setup page puts what GitHub cannot reach before the Register button."""

from __future__ import annotations

from pathlib import Path

from tests.registration.test_handlers import setup_mode, setup_settings
from tests.support.fakes.github_server import FakeGitHub


async def test_the_warnings_come_before_the_register_button(
    fake_github: FakeGitHub, tmp_path: Path
) -> None:
    settings = setup_settings(fake_github, tmp_path, BASE_URL=None)
    async with setup_mode(settings) as (client, _):
        html = await (await client.get("/")).text()
    warning = html.index("GitHub cannot deliver webhooks to 127.0.0.1")
    assert warning < html.index('<form method="post"'), "read before pressing the button"
