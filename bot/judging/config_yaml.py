"""Reading `.github/judge.yml` as YAML within fixed limits of size, nesting and values.

The file comes from a repository, so it may be hostile: a 430-byte alias bomb expands to
millions of nodes, a recursive alias or 5,000 nested `[` exhausts the recursion limit.
The loader refuses each before it costs anything: the size before reading, the nesting
while composing (PyYAML's composer recurses once per level), and the values with every
alias use counted in full on the composed graph, before any data is built from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import yaml

# Generous for any real file (the full example is under 1 KiB, a few dozen values,
# 4 levels) and small enough that parsing at the caps takes well under a second.
MAX_CONFIG_BYTES = 64 * 1024
MAX_NESTING = 32  # lists and mappings inside each other; the top-level mapping is 1
MAX_VALUES = 10_000  # nodes (keys, values, items) with every alias use expanded


class LimitExceeded(Exception):
    """The text is over a limit: which, and where (1-based line and column)."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


class _Position(Protocol):
    """A mark of PyYAML's pure-Python or C reader: 0-based line and column."""

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...


def _refused(mark: _Position | None, message: str) -> LimitExceeded:
    if mark is None:
        return LimitExceeded(1, 1, message)
    return LimitExceeded(mark.line + 1, mark.column + 1, message)


def _too_deep(mark: _Position | None) -> LimitExceeded:
    return _refused(
        mark,
        f"nested more than {MAX_NESTING} levels deep (lists and mappings inside each "
        f"other, aliases included); the limit is {MAX_NESTING}",
    )


def _too_many(mark: _Position | None) -> LimitExceeded:
    return _refused(
        mark,
        f"this holds more than {MAX_VALUES:,} values counting each use of an alias (*name) "
        f"in full; the limit is {MAX_VALUES:,}, so write fewer values or reuse anchors less",
    )


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing to compose collections nested deeper than
    MAX_NESTING (its composer recurses once per level) or more than MAX_VALUES nodes,
    and remembering each anchor's name so a recursive alias can be named."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.level = 0
        self.composed = 0
        self.anchor_names: dict[int, str] = {}

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # types-PyYAML leaves peek_event untyped; here it is always the node's first event.
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        opens = isinstance(event, yaml.SequenceStartEvent | yaml.MappingStartEvent)
        if opens and self.level >= MAX_NESTING:
            raise _too_deep(event.start_mark)
        if not isinstance(event, yaml.AliasEvent):
            # Counted here too so a long file stops composing early; aliases are
            # counted expanded once the graph is complete (`_measure`).
            self.composed += 1
            if self.composed > MAX_VALUES:
                raise _too_many(event.start_mark)
        self.level += opens
        try:
            node = super().compose_node(parent, index)
        finally:
            self.level -= opens
        anchor = getattr(event, "anchor", None)
        if anchor is not None and node is not None and not isinstance(event, yaml.AliasEvent):
            self.anchor_names[id(node)] = str(anchor)
        return node


def load_within_limits(text: str) -> tuple[yaml.Node | None, Any]:
    """The composed root node and the data built from it, once the text is known to be
    within the limits of size, nesting and values (aliases expanded)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_CONFIG_BYTES:
        message = (
            f"the file is {size:,} bytes, over the limit of {MAX_CONFIG_BYTES // 1024} KiB "
            f"({MAX_CONFIG_BYTES:,} bytes); the settings need far less"
        )
        raise LimitExceeded(1, 1, message)
    loader = _BoundedLoader(text)
    try:
        root = loader.get_single_node()
        if root is None:
            return None, None
        walk = _Walk(loader.anchor_names)
        _measure(root, 0, root.start_mark, walk)
        if not walk.rewritten_keys:
            return root, loader.construct_document(root)
    finally:
        loader.dispose()
    # Construction rewrites merge (`<<`) and value (`=`) keys in place, and the error
    # locations want the tree as written: build the data from a second composition.
    again = _BoundedLoader(text)
    try:
        return root, again.get_single_data()
    finally:
        again.dispose()


# Keys PyYAML's constructor rewrites in the node tree (see SafeConstructor.flatten_mapping).
_REWRITTEN_KEY_TAGS = frozenset({"tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"})


@dataclass
class _Walk:
    """What `_measure` has learnt: (values, levels) of each node measured so far, the
    nodes still being measured (one of them met again is a recursive alias), and
    whether any mapping has a key that construction rewrites."""

    anchor_names: Mapping[int, str]
    measured: dict[int, tuple[int, int]] = field(default_factory=dict)
    open: set[int] = field(default_factory=set)
    rewritten_keys: bool = False


def _measure(node: yaml.Node, outer: int, used_at: _Position, walk: _Walk) -> tuple[int, int]:
    """(values, levels) of `node` with its aliases expanded, where `outer` collections
    enclose it and `used_at` is where its parent uses it. Each node of the composed
    graph is measured once, so this costs the size of the text, not of the expansion;
    the recursion goes no deeper than MAX_NESTING."""
    key = id(node)
    if key in walk.open:
        name = walk.anchor_names.get(key, "")
        raise _refused(
            node.start_mark,
            f"the alias *{name} is used inside the value it names (&{name}), so that value "
            "would never end; write the value out instead",
        )
    known = walk.measured.get(key)
    if known is None:
        walk.open.add(key)
        known = _measure_children(node, outer, walk)
        walk.open.discard(key)
        walk.measured[key] = known
    if outer + known[1] > MAX_NESTING:
        raise _too_deep(used_at)
    return known


def _measure_children(node: yaml.Node, outer: int, walk: _Walk) -> tuple[int, int]:
    if isinstance(node, yaml.MappingNode):
        children: list[yaml.Node] = [part for pair in node.value for part in pair]
        walk.rewritten_keys |= any(k.tag in _REWRITTEN_KEY_TAGS for k, _ in node.value)
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        return 1, 0
    level = outer + 1
    # An anchor comes before its aliases, so a node is first met where it is written,
    # a depth the composer already checked; this keeps the recursion bound obvious.
    if level > MAX_NESTING:
        raise _too_deep(node.start_mark)
    values, levels = 1, 0
    for child in children:
        child_values, child_levels = _measure(child, level, node.start_mark, walk)
        values += child_values
        levels = max(levels, child_levels)
        if values > MAX_VALUES:
            raise _too_many(node.start_mark)
    return values, levels + 1
