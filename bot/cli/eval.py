"""`judge-bot eval`: how the configured judges do on changes whose right answer is known.

    judge-bot eval DATASET [--json] [--limit N] [--no-swap] [--sensitive]
                           [--concurrency N] [--width N]
    judge-bot eval --from-history --out FILE [--repo OWNER/NAME] [--clone DIR]
                   [--database-url URL]

The first judges every change of a JSONL dataset (docs/eval.md) with the judges the
environment and `.env` configure, as `judge-bot judge` would, and prints the figures;
nothing is stored. The second writes a dataset from the App's records of one repository
(--repo, default the clone's origin): changes a person overrode and accepts a later
commit on the default branch reverted, their files read from the git clone in DIR
(default: here).

Exit status: 0 with a report or a dataset written; 1 when the history held no change
that could be labelled; 2 with one line per problem on stderr (usage, settings, a bad
dataset line, a database or clone that cannot be read, an output file that exists).
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any

import httpx

from bot.cli.arguments import owner_name, whole_number
from bot.cli.database import DATABASE_HELP, CommandRefused, run_on_database
from bot.cli.terminal import err, out, table_width
from bot.evaluation.dataset import DatasetError, LabelledExample, example_line, read_dataset
from bot.evaluation.history import BuiltExamples, GitClone, build, candidates
from bot.evaluation.metrics import Failed, JudgedExample, evaluate
from bot.evaluation.runner import Runner
from bot.evaluation.view import evaluation_json, render_evaluation
from bot.judge.engine import JudgeEngine
from bot.judge.rubrics.research_settings import ResearchRules, ResearchSettings
from bot.judge.settings import JudgeSettings
from bot.reports.thresholds import CalibrationThresholds
from bot.settings import SettingsError, load_judge_section, load_judge_settings
from bot.storage.base import Storage

MAX_CONCURRENCY = 32


async def judge_all(
    settings: JudgeSettings,
    examples: list[LabelledExample],
    *,
    swap: bool,
    sensitive: bool,
    concurrency: int,
    research: ResearchRules,
) -> list[JudgedExample | Failed]:
    """Every example through one engine without storage (bot.evaluation.runner)."""
    limits = httpx.Limits(max_connections=max(concurrency * 2, 10))
    async with httpx.AsyncClient(limits=limits) as client:
        engine = JudgeEngine.from_settings(settings, client, None)
        runner = Runner(
            engine.judge,
            swap=swap,
            sensitive=sensitive,
            concurrency=concurrency,
            research=research,
        )
        return await runner.run(examples)


def _evaluate(args: argparse.Namespace) -> int:
    try:
        settings = load_judge_settings()
        research = load_judge_section(ResearchSettings).rules()
        limits = load_judge_section(CalibrationThresholds)
    except SettingsError as exc:
        err(f"judge-bot: configuration error: {exc}")
        return 2
    if not settings.llm_configured:
        err("judge-bot: no LLM judge is configured (JUDGE_LLM_BASE_URL or a tier's own "
            "endpoint, docs/configuration.md): there is no panel to measure")  # fmt: skip
        return 2
    try:
        examples = read_dataset(Path(args.dataset))
    except DatasetError as exc:
        for line in exc.lines():
            err(f"judge-bot: {line}")
        return 2
    if args.limit is not None:
        examples = examples[: args.limit]
    return asyncio.run(_judge_and_report(args, settings, examples, research, limits))


async def _judge_and_report(
    args: argparse.Namespace,
    settings: JudgeSettings,
    examples: list[LabelledExample],
    research: ResearchRules,
    limits: CalibrationThresholds,
) -> int:
    judged = await judge_all(
        settings,
        examples,
        swap=not args.no_swap,
        sensitive=args.sensitive,
        concurrency=args.concurrency,
        research=research,
    )
    # A call of its own: coverage loses the frames a judgment ran under (an HTTP call
    # resets the trace function), not the ones it starts after.
    return _report(args, judged, limits)


def _report(
    args: argparse.Namespace, judged: list[JudgedExample | Failed], limits: CalibrationThresholds
) -> int:
    report = evaluate(judged, limits.calibration_price_per_1k_tokens)
    if args.json:
        out(evaluation_json(report, limits, args.dataset))
    else:
        out(render_evaluation(report, limits, args.dataset, table_width(args.width)))
    return 0


# -- --from-history ----------------------------------------------------------------------


async def _history(storage: Storage, args: argparse.Namespace) -> BuiltExamples:
    clone = GitClone(Path(args.clone))
    if not await clone.check():
        raise CommandRefused(
            f"{args.clone} is not in a git repository (--clone): the files of the judged "
            "changes are read from a clone"
        )
    # Records of another repository would be matched against this clone's commits.
    repository = args.repo or await clone.origin_repository()
    if repository is None:
        raise CommandRefused(
            f"the clone in {args.clone} has no origin remote naming its repository: "
            "pass --repo OWNER/NAME"
        )
    return await build(clone, await candidates(storage, repository))


def _left_out(built: BuiltExamples) -> str:
    return "; ".join(f"{why}: {count}" for why, count in sorted(built.skipped.items()))


def _from_history(args: argparse.Namespace) -> int:
    target = Path(args.out)
    if target.exists():
        err(f"judge-bot: {args.out} exists; choose another --out or remove it first")
        return 2
    built = run_on_database(args, lambda storage: _history(storage, args))
    if isinstance(built, int):
        return built
    left_out = f"; left out: {_left_out(built)}" if built.skipped else ""
    if not built.examples:
        err(f"judge-bot: no overridden or reverted change to label{left_out}")
        return 1
    try:
        with target.open("x", encoding="utf-8") as file:
            file.writelines(example_line(e) + "\n" for e in built.examples)
    except OSError as exc:
        err(f"judge-bot: cannot write {args.out}: {exc.strerror or exc}")
        return 2
    kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(built.kinds.items()))
    out(f"wrote {len(built.examples)} examples to {args.out} ({kinds}){left_out}")
    return 0


def _cmd_eval(args: argparse.Namespace) -> int:
    if args.from_history:
        if args.dataset is not None or args.out is None:
            err("judge-bot: eval --from-history takes no DATASET and needs --out FILE")
            return 2
        return _from_history(args)
    if args.dataset is None:
        err("judge-bot: eval needs a DATASET (or --from-history --out FILE)")
        return 2
    return _evaluate(args)


# -- argparse ------------------------------------------------------------------------------


EPILOG = """\
exit status:
  0  the report was printed, or the dataset written
  1  --from-history found no change to label
  2  usage, settings, a bad dataset line, an unreadable database or clone
Dataset format and how to read the figures: docs/eval.md.
"""


def register(subparsers: Any) -> None:
    """Add `eval` to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "eval",
        help="measure the configured judges on labelled changes before blocking",
        description="Judge every change of a labelled JSONL dataset with the configured "
        "judges and report agreement with the labels, kappa between tiers, swap "
        "consistency, undetermined rate, latency and cost; or build such a dataset "
        "from the App's records (--from-history). Nothing is stored.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dataset", nargs="?", metavar="DATASET", help="the JSONL dataset")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--limit", type=whole_number(1, 10**9), metavar="N", help="judge only the first N changes"
    )
    parser.add_argument(
        "--no-swap", action="store_true", help="do not judge changes again in another file order"
    )
    parser.add_argument(
        "--sensitive",
        action="store_true",
        help="treat every change as sensitive, so the deep tier judges each one (more "
        "changes for the kappa between tiers)",
    )
    parser.add_argument(
        "--concurrency",
        type=whole_number(1, MAX_CONCURRENCY),
        default=1,
        metavar="N",
        help="changes judged at once (default 1: latency figures without queueing)",
    )
    parser.add_argument(
        "--width", type=whole_number(40, 10_000), help="table width (default: the terminal's)"
    )
    history = parser.add_argument_group("building a dataset from the App's records")
    history.add_argument(
        "--from-history",
        action="store_true",
        help="write the overridden and reverted changes of the records to --out",
    )
    history.add_argument("--out", metavar="FILE", help="the dataset to write (must not exist)")
    history.add_argument(
        "--repo",
        type=owner_name,
        metavar="OWNER/NAME",
        help="the repository whose records to read (default: the one the clone's origin names)",
    )
    history.add_argument(
        "--clone", default=".", metavar="DIR", help="the git clone to read files from (default .)"
    )
    history.add_argument("--database-url", help=DATABASE_HELP)
    parser.set_defaults(handler=_cmd_eval)
