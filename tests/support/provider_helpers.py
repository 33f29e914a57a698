"""What the provider tests send (a response schema and a judge's messages), and the handler
type of the raw loopback servers they start with the `raw_server` fixture."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

SCHEMA = {
    "type": "object",
    "properties": {"semantic": {"type": "integer"}},
    "required": ["semantic"],
}
MESSAGES = [
    {"role": "system", "content": "You are a judge. Answer in JSON."},
    {"role": "user", "content": "Judge this: hello"},
]

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
