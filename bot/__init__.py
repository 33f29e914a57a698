"""judge-bot: a GitHub App that judges agent-written changes with independent LLM judges."""

__version__ = "0.1.0"
