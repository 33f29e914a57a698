"""What `pyproject.toml` promises exists: package data it names, the licence it declares."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def pyproject() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as handle:
        return tomllib.load(handle)


def test_every_package_data_pattern_matches_a_file() -> None:
    package_data: dict[str, list[str]] = pyproject()["tool"]["setuptools"]["package-data"]
    empty = [
        f"{package}: {pattern}"
        for package, patterns in package_data.items()
        for pattern in patterns
        if not any(path.is_file() for path in (ROOT / package.replace(".", "/")).glob(pattern))
    ]
    assert empty == []


def test_the_declared_licence_is_shipped() -> None:
    """An SPDX expression and the file (PEP 639): no deprecated TOML-table licence."""
    project = pyproject()["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.split("\n")[1:3] == [
        " " * 33 + "Apache License",
        " " * 27 + "Version 2.0, January 2004",
    ]
    for part in ("TERMS AND CONDITIONS FOR USE", "9. Accepting Warranty", "END OF TERMS"):
        assert part in text
    assert "APPENDIX: How to apply the Apache License to your work." in text
