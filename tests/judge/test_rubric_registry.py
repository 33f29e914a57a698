"""bot/judge/rubrics/__init__.py: each rubric brings what other rooms ask of it, so a new
rubric is its module, its row in the registry and its name in `records.RubricName`; tagging
gathers the dimension phrases from the rubrics rather than keeping a list of its own."""

from __future__ import annotations

import pytest

from bot.judge.records import RubricName
from bot.judge.rubrics import get_rubric
from bot.judge.tagging.thesaurus import DIMENSION_PHRASES


@pytest.mark.parametrize("name", list(RubricName))
def test_every_rubric_is_registered_under_its_name(name: RubricName) -> None:
    assert get_rubric(name).name is name


@pytest.mark.parametrize("name", list(RubricName))
def test_every_rubric_declares_phrases_for_each_of_its_dimensions(name: RubricName) -> None:
    rubric = get_rubric(name)
    assert list(rubric.dimension_phrases) == list(rubric.dimensions)
    for dimension, phrases in rubric.dimension_phrases.items():
        assert phrases, f"{name} declares no phrase for {dimension}"
        assert len(set(phrases)) == len(phrases), f"{name} repeats a phrase of {dimension}"


@pytest.mark.parametrize("name", list(RubricName))
def test_the_thesaurus_reads_the_phrases_from_the_rubrics(name: RubricName) -> None:
    for dimension, phrases in get_rubric(name).dimension_phrases.items():
        assert DIMENSION_PHRASES[dimension] is phrases


def test_a_dimension_two_rubrics_share_means_one_thing() -> None:
    """One `dimension:` tag per name: two rubrics naming the same dimension would have
    to agree on its phrases, or tagging would read only the later rubric's."""
    seen: dict[str, tuple[str, ...]] = {}
    for name in RubricName:
        for dimension, phrases in get_rubric(name).dimension_phrases.items():
            assert seen.setdefault(dimension, phrases) == phrases, dimension
