"""Reading judge-bot's pages as a browser would: forms, links, text by id, table rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser


@dataclass
class Form:
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)
    button: str = ""


@dataclass
class Page:
    title: str = ""
    headings: list[str] = field(default_factory=list)
    forms: list[Form] = field(default_factory=list)
    links: dict[str, str] = field(default_factory=dict)  # text -> href
    by_id: dict[str, str] = field(default_factory=dict)  # id -> text inside
    tables: dict[str, list[list[str]]] = field(default_factory=dict)  # id -> rows of cells
    text: str = ""


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self._open: list[tuple[str, str | None, list[str]]] = []  # tag, id, text pieces
        self._href: str | None = None
        self._link_text: list[str] = []
        self._table: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self._in_button = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        self._open.append((tag, values.get("id"), []))
        if tag == "form":
            self.page.forms.append(Form(values.get("action", ""), values.get("method", "get")))
        elif tag == "input" and self.page.forms:
            self.page.forms[-1].fields[values.get("name", "")] = values.get("value", "")
            self._open.pop()  # a void element
        elif tag == "button":
            self._in_button = True
        elif tag == "a":
            self._href, self._link_text = values.get("href", ""), []
        elif tag == "table":
            self._table = values.get("id", "")
            self.page.tables[self._table] = []
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "button":
            self._in_button = False
        elif tag == "a" and self._href is not None:
            self.page.links["".join(self._link_text).strip()] = self._href
            self._href = None
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self.page.tables[self._table].append(self._row)
            self._row = None
        while self._open:
            open_tag, element_id, pieces = self._open.pop()
            text = " ".join("".join(pieces).split())
            if element_id:
                self.page.by_id[element_id] = text
            if open_tag in ("h1", "h2"):
                self.page.headings.append(text)
            if open_tag == "title":
                self.page.title = text
            if self._open:
                self._open[-1][2].append("".join(pieces))
            if open_tag == tag:
                break

    def handle_data(self, data: str) -> None:
        self.page.text += data
        if self._open:
            self._open[-1][2].append(data)
        if self._in_button and self.page.forms:
            self.page.forms[-1].button += data.strip()
        if self._href is not None:
            self._link_text.append(data)
        if self._cell is not None:
            self._cell.append(data)


def read_page(html: str) -> Page:
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader.page.text = " ".join(reader.page.text.split())
    return reader.page
