"""Which models a repository's `.github/judge.yml` may pick: the operator's
`JUDGE_ALLOWED_MODELS`.

A repository's `models:` section spends the operator's endpoint and key, so the
operator can bound it with a list of globs; a repository override that matches none
of them is refused (the handlers show the neutral check run naming its line). An empty
list allows any model. The installation's own models are the operator's choice and
are never checked.

The globs are `fnmatch`'s, matched case-sensitively against the whole model name, not
`bot.globs`' path rules: a model name is an identifier, not a path, so `/` is an
ordinary character.

* `*` matches any run of characters, `/`, `:` and `.` included: `openai/*` allows
  `openai/gpt-4o` and `openai/o3/high`; `qwen3:*` allows `qwen3:32b`.
* The whole name must match: `claude-*` allows `claude-sonnet-4.5` but not
  `openrouter/anthropic/claude-sonnet-4.5` (write `*/claude-*` or
  `openrouter/anthropic/claude-*` for that), so a prefix never lets a different route
  through by accident.
* `?` matches one character, `[abc]` / `[!abc]` one of / none of a set.
* Case matters, as it does to the providers: `Claude-*` does not allow `claude-x`.

Nothing here performs I/O; `bot.judging.config_file` turns a refusal into a
line-precise `ConfigIssue`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from bot.judging.repo_config import ModelsConfig, RepoConfig

ALLOWED_MODELS_SETTING = "JUDGE_ALLOWED_MODELS"
# The check run names a refused model and the globs; a page of them helps nobody.
_SHOWN_CHARS = 80
_SHOWN_GLOBS = 10


@dataclass(frozen=True)
class RefusedModel:
    """A `models.<tier>` value that no allowed glob matches."""

    tier: str
    model: str

    @property
    def loc(self) -> tuple[str, str]:
        """Where the value sits in the file, as `config_file` locates keys."""
        return ("models", self.tier)


def is_allowed(model: str, allowed: Sequence[str]) -> bool:
    """True when `allowed` is empty or one of its globs matches the whole name."""
    return not allowed or any(fnmatchcase(model, glob) for glob in allowed)


def disallowed_models(config: RepoConfig, allowed: Sequence[str]) -> list[RefusedModel]:
    """Every tier override outside `allowed`, in the order the tiers are declared."""
    refused: list[RefusedModel] = []
    for tier in ModelsConfig.model_fields:
        model = getattr(config.models, tier)
        if model is not None and not is_allowed(model, allowed):
            refused.append(RefusedModel(tier, model))
    return refused


def refusal_message(refused: RefusedModel, allowed: Sequence[str]) -> str:
    """Why the override is refused and what to do, for the repository's owner."""
    shown = ", ".join(_quoted(glob) for glob in allowed[:_SHOWN_GLOBS])
    more = len(allowed) - _SHOWN_GLOBS
    if more > 0:
        shown += f" and {more} more"
    return (
        f"model {_quoted(refused.model)} is not allowed for repository overrides; the "
        f"operator allows only models matching {shown} ({ALLOWED_MODELS_SETTING}): pick "
        "a model they match, or remove this key to use the installation's model"
    )


def _quoted(text: str) -> str:
    if len(text) > _SHOWN_CHARS:
        text = text[: _SHOWN_CHARS - 3] + "..."
    return json.dumps(text)
