"""Shared fixtures live in small plugin modules, one per fake or backend."""

import logging
from collections.abc import Iterator

import pytest

pytest_plugins = [
    "tests.support.fakes.github_fixtures",
    "tests.support.fakes.llm_fixtures",
    "tests.support.storage_fixtures",
    "tests.support.flow_fixtures",
]


@pytest.fixture(autouse=True)
def _root_logging_as_it_was() -> Iterator[None]:
    """A command run in this process installs its own root handler (with a filter that
    rewrites records to scrub secrets); left behind, it would change what later tests'
    `caplog` sees."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
