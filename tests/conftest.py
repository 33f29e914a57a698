"""Shared fixtures live in small plugin modules, one per fake or backend."""

pytest_plugins = [
    "tests.support.fakes.github_fixtures",
    "tests.support.fakes.llm_fixtures",
    "tests.support.storage_fixtures",
    "tests.support.flow_fixtures",
]
