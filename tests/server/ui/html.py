"""Reading the dashboard's HTML in tests: a small element tree (the standard library's parser) and
a lookup by tag, id and attributes, enough to find the elements the pages promise."""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)

    def text(self) -> str:
        """The text inside, whitespace collapsed."""
        parts = [c if isinstance(c, str) else c.text() for c in self.children]
        return " ".join(" ".join(parts).split())

    def all(self, tag: str | None = None, **attrs: str | bool) -> list[Element]:
        """Every element below matching ``tag`` and ``attrs`` (``data_job`` is ``data-job``; True:
        present with any value)."""
        wanted = {name.rstrip("_").replace("_", "-"): value for name, value in attrs.items()}
        found = []
        for child in self.children:
            if isinstance(child, str):
                continue
            if (tag is None or child.tag == tag) and all(
                (name in child.attrs) if value is True else child.attrs.get(name) == value
                for name, value in wanted.items()
            ):
                found.append(child)
            found += child.all(tag, **attrs)
        return found

    def one(self, tag: str | None = None, **attrs: str | bool) -> Element:
        found = self.all(tag, **attrs)
        assert len(found) == 1, f"{len(found)} elements match {tag} {attrs}"
        return found[0]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("document", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {name: value or "" for name, value in attrs})
        self.stack[-1].children.append(element)
        if tag not in VOID:
            self.stack.append(element)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        self.stack[-1].children.append(data)


def parse(html: str) -> Element:
    builder = _Builder()
    builder.feed(html)
    builder.close()
    return builder.root
