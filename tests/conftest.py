"""Shared fixtures live in small plugin modules, one per fake or backend."""

pytest_plugins = [
    "tests.fakes.github_fixtures",
    "tests.fakes.llm_fixtures",
    "tests.storage_fixtures",
    "tests.flow_fixtures",
]
