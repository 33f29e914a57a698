"""The flags several commands take refuse a bad value with the same words in each
(`bot.cli.arguments`), and with the bounds each command sets."""

from __future__ import annotations

import pytest

from bot.cli import build_parser, main

REFUSED = [
    (["deliveries", "list", "--limit", "0"], "argument --limit: must be at least 1"),
    (["deliveries", "list", "--limit", "ten"], "argument --limit: 'ten' is not a whole number"),
    (["triage", "--width", "39"], "argument --width: must be at least 40"),
    (["triage", "--days", "0"], "argument --days: must be between 1 and 3650"),
    (["calibrate", "--days", "3651"], "argument --days: must be between 1 and 3650"),
    (["calibrate", "--days", "1.5"], "argument --days: '1.5' is not a whole number"),
    (["triage", "--repo", "octo"], "argument --repo: 'octo' is not OWNER/NAME"),
    (["eval", "x.jsonl", "--width", "10001"], "argument --width: must be between 40 and 10000"),
    (
        ["eval", "x.jsonl", "--concurrency", "33"],
        "argument --concurrency: must be between 1 and 32",
    ),
    (["eval", "x.jsonl", "--repo", "a/b/c"], "argument --repo: 'a/b/c' is not OWNER/NAME"),
]


@pytest.mark.parametrize(("args", "message"), REFUSED)
def test_a_bad_flag_value_is_an_argparse_error(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "args",
    [
        ["deliveries", "list", "--limit", "1"],
        ["triage", "--width", "40", "--days", "3650", "--repo", "octo/docs"],
        ["eval", "x.jsonl", "--width", "10000", "--concurrency", "32", "--repo", "o.k/r_e-po"],
    ],
)
def test_a_value_at_the_bounds_is_taken(args: list[str]) -> None:
    parsed = build_parser().parse_args(args)
    assert parsed.command == args[0]
