"""The fake GitHub: the App's webhook deliveries log and redelivery attempts."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tests.support.fakes.github_http import Handler

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub
    from tests.support.fakes.github_shapes import Shapes


class HookDeliveryHandlers:
    def __init__(self, fake: FakeGitHub, shapes: Shapes) -> None:
        self.fake = fake
        self.shapes = shapes

    def table(self) -> dict[str, Handler]:
        return {}
