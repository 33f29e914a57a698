"""Checks that need no model, each finding with its file and line.

| kind              | severity | rule |
|-------------------|----------|------|
| conflict-marker   | hard     | a `<<<<<<<`, `|||||||` or `>>>>>>>` line, or `=======` inside one |
| secret            | hard     | a credential (see bot.credentials); every line, not only added |
| invalid-json      | hard     | `.json` that does not parse (`.jsonl`/`.ndjson`: per line) |
| invalid-toml      | hard     | `.toml` that does not parse |
| invalid-yaml      | soft     | `.yml`/`.yaml` that does not parse |
| empty-file        | soft     | only whitespace (reported once; not also as invalid) |
| todo-marker       | soft     | the three conventional unfinished-work tags, or a stub marker |
| broken-link       | soft     | a relative Markdown link to a path that does not exist |
| broken-anchor     | soft     | `#fragment` missing from the target Markdown file's headings |
| research-*        | both     | research rubric only: claims, sources, domains, counter-evidence, |
|                   |          | confidence, verifiable ratio (checks/research_claims.py)        |

Why these severities: a hard finding rejects without calling a model, so it is
kept for things that are broken whatever a reviewer thinks (merge debris,
unparseable JSON/TOML, leaked credentials, which must also never be sent to a
provider). YAML is soft because templated YAML (Helm, Jinja) is common and
legitimately not YAML until rendered. Markers and links are judgement calls
left to the model and the human.

Line scope: conflict, marker and link checks look at `added_lines` when the
diff is known, else at every line; secrets look at every line. Removed files
are skipped. Files with NUL bytes (binary) get the secret check only: their
text still reaches the judges, so a credential in them must stop the run too.
The task's own texts (description, acceptance, directives) are also sent to the
judges and get the secret check as pseudo-files named `<task description>`,
`<task acceptance>`, `<task directive N>` (`check_task`). JSON-with-comments
files (`tsconfig*.json`, `jsconfig*.json`, `.vscode/`, `devcontainer.json`)
are not parsed as JSON.

Links resolve against the given files plus `known_paths` (the repository's
tree at the head commit, when the caller has it). Without `known_paths` (None or
empty: a repository with a Markdown file is never empty), a link
to a file outside the change cannot be verified and is not reported; a link to a
file this change removes is always reported. Anchors are checked only when the
target Markdown file's content is among the given files. External links
(`scheme:`, `//host`) are not checked.

The research checks run only when the caller passes the research rubric's thresholds
(the files are judged by that rubric), on each Markdown file that is neither removed nor
binary, over the whole file: a report is judged as it stands, not by the lines a change
added.
"""

from __future__ import annotations

import bisect
import json
import posixpath
import re
import tomllib
from collections.abc import Collection, Iterable, Sequence
from urllib.parse import unquote

import yaml

from bot.credentials import redact, scan_lines
from bot.judge.checks import markdown
from bot.judge.checks.research_claims import research_findings
from bot.judge.records import Finding, JudgedFile, Severity, TaskSpec
from bot.judge.rubrics.research_settings import ResearchRules

_CONFLICT_EDGE = re.compile(r"^(?:<{7}|\|{7}|>{7})(?: |$)")
_CONFLICT_MIDDLE = re.compile(r"^={7}$")
# The tags are written with a character class so this file does not itself
# contain the markers a repository-wide grep looks for.
_MARKERS = re.compile(
    r"\b(?:T[O]DO|F[I]XME|X[X]X)\b|\bNot[I]mplementedError\b|\b(?:t[o]do|unimplemented)!\("
)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_TOML_POSITION = re.compile(r"at line (\d+)")
_JSONC_NAMES = re.compile(r"(?:^|/)(?:[tj]sconfig[^/]*\.json|devcontainer\.json)$")
_ANCHOR_LINE = re.compile(r"^L\d+(?:C\d+)?(?:-L\d+(?:C\d+)?)?$")


class _TolerantLoader(yaml.SafeLoader):
    """Safe loading that accepts application tags (`!Ref`, `!!python/...` are
    read as plain data) so only syntax errors count."""


def _any_tag(loader: yaml.SafeLoader, _suffix: str, node: yaml.Node) -> object:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_TolerantLoader.add_multi_constructor("!", _any_tag)
_TolerantLoader.add_multi_constructor("tag:", _any_tag)


def _finding(kind: str, severity: Severity, path: str, line: int | None, message: str) -> Finding:
    return Finding(
        source="mechanical",
        kind=kind,
        severity=severity,
        path=path,
        line=line,
        message=redact(message),
    )


def _scoped(file: JudgedFile, lines: Sequence[str]) -> Iterable[tuple[int, str]]:
    if file.added_lines is None:
        return enumerate(lines, start=1)
    wanted = set(file.added_lines)
    return ((n, line) for n, line in enumerate(lines, start=1) if n in wanted)


def _conflicts(file: JudgedFile, lines: Sequence[str]) -> list[Finding]:
    scope = dict(_scoped(file, lines))
    if markdown.is_markdown(file.path):
        # a Markdown page about git may show conflict markers in a code block
        prose = {n for n, _ in markdown.prose_lines(file.content)}
        scope = {n: line for n, line in scope.items() if n in prose}
    found: list[Finding] = []
    open_block = False
    for number, line in enumerate(lines, start=1):
        edge = _CONFLICT_EDGE.match(line)
        middle = open_block and _CONFLICT_MIDDLE.match(line)
        if line.startswith("<<<<<<<"):
            open_block = True
        elif line.startswith(">>>>>>>"):
            open_block = False
        if (edge or middle) and number in scope:
            found.append(
                _finding("conflict-marker", "hard", file.path, number, "merge conflict marker")
            )
    return found


def _markers(file: JudgedFile, lines: Sequence[str]) -> list[Finding]:
    return [
        _finding("todo-marker", "soft", file.path, n, "unfinished-work or stub marker")
        for n, line in _scoped(file, lines)
        if _MARKERS.search(line)
    ]


def _secrets(file: JudgedFile, lines: Sequence[str]) -> list[Finding]:
    return [
        _finding("secret", "hard", file.path, n, f"possible {label} committed")
        for n, label in scan_lines(lines)
    ]


def _unreadable(language: str, exc: ValueError | RecursionError) -> str:
    """The parsers' other failures: a nesting deeper than Python's recursion limit, or a
    value Python refuses to build (an integer past the 4300-digit conversion limit). The
    file is as unusable for its readers' tools as a syntax error makes it."""
    if isinstance(exc, RecursionError):
        return f"invalid {language}: nested too deeply to parse"
    return f"invalid {language}: {str(exc).split(';', 1)[0]}"


def _json(file: JudgedFile) -> list[Finding]:
    path = file.path.lower()
    if _JSONC_NAMES.search(path) or path.startswith(".vscode/") or "/.vscode/" in path:
        return []
    if path.endswith((".jsonl", ".ndjson")):
        found = []
        for number, line in enumerate(file.content.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                json.loads(line)
            except json.JSONDecodeError as exc:
                found.append(
                    _finding("invalid-json", "hard", file.path, number, f"invalid JSON: {exc.msg}")
                )
            except (ValueError, RecursionError) as exc:
                found.append(
                    _finding("invalid-json", "hard", file.path, number, _unreadable("JSON", exc))
                )
        return found
    if not path.endswith(".json"):
        return []
    try:
        # editors on Windows write a byte-order mark; parsers in the ecosystem accept it
        json.loads(file.content.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        return [_finding("invalid-json", "hard", file.path, exc.lineno, f"invalid JSON: {exc.msg}")]
    except (ValueError, RecursionError) as exc:
        return [_finding("invalid-json", "hard", file.path, None, _unreadable("JSON", exc))]
    return []


def _toml(file: JudgedFile) -> list[Finding]:
    if not file.path.lower().endswith(".toml"):
        return []
    try:
        tomllib.loads(file.content)
    except tomllib.TOMLDecodeError as exc:
        position = _TOML_POSITION.search(str(exc))
        line = int(position.group(1)) if position else None
        return [_finding("invalid-toml", "hard", file.path, line, f"invalid TOML: {exc}")]
    except (ValueError, RecursionError) as exc:
        return [_finding("invalid-toml", "hard", file.path, None, _unreadable("TOML", exc))]
    return []


def _yaml(file: JudgedFile) -> list[Finding]:
    if not file.path.lower().endswith((".yml", ".yaml")):
        return []
    try:
        for _ in yaml.load_all(file.content, Loader=_TolerantLoader):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        line = mark.line + 1 if mark is not None else None
        # problem/context only: str(exc) quotes the offending source text
        what = "; ".join(p for p in (exc.context, exc.problem) if p)
        return [_finding("invalid-yaml", "soft", file.path, line, f"invalid YAML: {what}")]
    except yaml.YAMLError:
        return [_finding("invalid-yaml", "soft", file.path, None, "invalid YAML")]
    except (ValueError, RecursionError) as exc:
        return [_finding("invalid-yaml", "soft", file.path, None, _unreadable("YAML", exc))]
    return []


class _Paths:
    """A set of paths in which a directory is found too: `target in paths` when a path
    is `target` or lies under `target/`. Comparing each link's target with every path
    cost links times paths, both the author's to choose (a 1 MB page of links took
    minutes); here a link costs a hash and a binary search. The paths under `target/`
    are consecutive in sorted order and come first among those sorting at or after
    `target/`, so that first one answers. (A set of every ancestor directory would
    answer too, but one path nested thousands deep would fill it with long prefixes.)"""

    def __init__(self, paths: Iterable[str]) -> None:
        self._exact = frozenset(paths)
        self._sorted = sorted(self._exact)

    def __contains__(self, target: str) -> bool:
        if target in self._exact:
            return True
        prefix = target + "/"
        at = bisect.bisect_left(self._sorted, prefix)
        return at < len(self._sorted) and self._sorted[at].startswith(prefix)


class _Tree:
    """What paths exist after the change, as far as the caller told us."""

    def __init__(self, files: Sequence[JudgedFile], known_paths: Collection[str] | None) -> None:
        present = {f.path.strip("/") for f in files if not f.removed}
        self.present = _Paths(present)
        self.removed = {f.path.strip("/") for f in files if f.removed} - present
        self.known = _Paths(p.strip("/") for p in known_paths) if known_paths else None
        self.contents = {f.path.strip("/"): f.content for f in files if not f.removed}
        self._anchors: dict[str, set[str]] = {}

    def exists(self, target: str) -> bool | None:
        """True, False, or None when it cannot be known."""
        if target in ("", "."):
            return True
        if target in self.present:
            return True
        if target in self.removed:
            return False
        if self.known is None:
            return None
        return target in self.known

    def anchors(self, target: str) -> set[str] | None:
        if target not in self.contents or not markdown.is_markdown(target):
            return None
        if target not in self._anchors:
            self._anchors[target] = markdown.anchors(self.contents[target])
        return self._anchors[target]


def _resolve(source: str, raw: str) -> tuple[str, str] | None:
    """(repository path, fragment) for a relative link, None for external ones."""
    target = raw.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    if not target or _SCHEME.match(target) or target.startswith("//") or "{{" in target:
        return None
    path, _, fragment = target.partition("#")
    path = path.split("?", 1)[0]
    path = unquote(path)
    if path.startswith("/"):
        joined = path.lstrip("/")
    elif path:
        joined = posixpath.join(posixpath.dirname(source), path)
    else:
        joined = source
    normal = posixpath.normpath(joined) if joined else "."
    return normal, unquote(fragment)


def _links(file: JudgedFile, tree: _Tree) -> list[Finding]:
    if not markdown.is_markdown(file.path):
        return []
    scope = None if file.added_lines is None else set(file.added_lines)
    found: list[Finding] = []
    source = file.path.strip("/")
    for link in markdown.links(file.content):
        if scope is not None and link.line not in scope:
            continue
        resolved = _resolve(source, link.target)
        if resolved is None:
            continue
        path, fragment = resolved
        if path == ".." or path.startswith("../"):
            found.append(
                _finding(
                    "broken-link",
                    "soft",
                    file.path,
                    link.line,
                    "link points outside the repository",
                )
            )
            continue
        exists = tree.exists(path)
        if exists is False:
            found.append(
                _finding(
                    "broken-link", "soft", file.path, link.line, f"link target {path} is missing"
                )
            )
            continue
        if not fragment or _ANCHOR_LINE.match(fragment):
            continue
        names = tree.anchors(path)
        wanted = fragment.lower().removeprefix("user-content-")
        if names is not None and wanted not in names:
            where = "this file" if path == source else path
            found.append(
                _finding(
                    "broken-anchor",
                    "soft",
                    file.path,
                    link.line,
                    f"no heading or anchor #{fragment} in {where}",
                )
            )
    return found


def check_file(file: JudgedFile, tree: _Tree) -> list[Finding]:
    if file.removed:
        return []
    lines = file.content.splitlines()
    findings = _secrets(file, lines)
    if "\x00" in file.content:
        return findings
    findings += _conflicts(file, lines)
    if not file.content.strip():
        findings.append(_finding("empty-file", "soft", file.path, None, "file is empty"))
        return findings
    findings += _json(file) + _toml(file) + _yaml(file)
    findings += _markers(file, lines)
    findings += _links(file, tree)
    return findings


def _research(file: JudgedFile, rules: ResearchRules) -> list[Finding]:
    if file.removed or "\x00" in file.content or not markdown.is_markdown(file.path):
        return []
    return research_findings(file.path, file.content, rules)


def run_mechanical_checks(
    files: Sequence[JudgedFile],
    known_paths: Collection[str] | None = None,
    research: ResearchRules | None = None,
) -> list[Finding]:
    """All findings, in file order then line order; `research` (the research rubric's
    thresholds) adds the research checks."""
    tree = _Tree(files, known_paths)
    out: list[Finding] = []
    for file in files:
        found = check_file(file, tree)
        if research is not None:
            found += _research(file, research)
        found.sort(key=lambda f: (f.line or 0, f.kind))
        out.extend(found)
    return out


def check_task(task: TaskSpec) -> list[Finding]:
    """Credentials in the task's texts, which the judges are shown like the files."""
    out: list[Finding] = []
    for label, text in task.labelled_texts():
        out.extend(_secrets(JudgedFile(path=label, content=text), text.splitlines()))
    return out


def has_hard_failure(findings: Iterable[Finding]) -> bool:
    return any(f.severity == "hard" for f in findings)
