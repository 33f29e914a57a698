"""`python -m bot` serves the App, like `judge-bot serve`; other arguments go to the CLI."""

import sys

from bot.cli import main

raise SystemExit(main(sys.argv[1:] or ["serve"]))
