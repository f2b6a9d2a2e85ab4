"""What a browser would submit from a page's form: the fields as the page shows them (checked boxes and radios,
selected options, text), so a Django-client test can press "Next" without knowing the step's fields."""

from __future__ import annotations

from html.parser import HTMLParser


class _FormReader(HTMLParser):
    def __init__(self, form_id: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = form_id is None
        self.depth = 0
        self.pairs: list[tuple[str, str]] = []
        self._select: str | None = None
        self._select_multiple = False
        self._options: list[tuple[str, bool]] = []
        self._option: dict | None = None
        self._textarea: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: (v if v is not None else "") for k, v in attrs}
        if tag == "form" and self.form_id is not None:
            if a.get("id") == self.form_id:
                self.inside, self.depth = True, 1
            elif self.inside:
                self.depth += 1
            return
        if not self.inside:
            return
        name = a.get("name")
        if tag == "input" and name and "disabled" not in a:
            kind = a.get("type", "text").lower()
            if kind in ("submit", "button", "image", "reset", "file"):
                return
            if kind in ("checkbox", "radio") and "checked" not in a:
                return
            self.pairs.append((name, a.get("value", "on" if kind in ("checkbox", "radio") else "")))
        elif tag == "select" and name and "disabled" not in a:
            self._select, self._select_multiple, self._options = name, "multiple" in a, []
        elif tag == "option" and self._select is not None:
            self._option = {"value": a.get("value"), "selected": "selected" in a}
            self._text = ""
        elif tag == "textarea" and name:
            self._textarea, self._text = name, ""

    def handle_data(self, data: str) -> None:
        if self._option is not None or self._textarea is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "form" and self.form_id is not None and self.inside:
            self.depth -= 1
            if self.depth == 0:
                self.inside = False
            return
        if tag == "option" and self._option is not None:
            value = self._option["value"] if self._option["value"] is not None else self._text.strip()
            self._options.append((value, self._option["selected"]))
            self._option = None
        elif tag == "select" and self._select is not None:
            chosen = [v for v, selected in self._options if selected]
            if not chosen and not self._select_multiple and self._options:
                chosen = [self._options[0][0]]  # a single select submits its first option when none is selected
            self.pairs += [(self._select, v) for v in chosen]
            self._select = None
        elif tag == "textarea" and self._textarea is not None:
            self.pairs.append((self._textarea, self._text.removeprefix("\n")))
            self._textarea = None


def form_pairs(html: str, form_id: str | None = "step-form") -> list[tuple[str, str]]:
    """The (name, value) pairs the form `form_id` (or, with None, every field of the fragment) submits."""
    reader = _FormReader(form_id)
    reader.feed(html)
    reader.close()
    return reader.pairs


def form_data(html: str, form_id: str | None = "step-form") -> dict[str, list[str]]:
    """`form_pairs` grouped by name, ready for `client.post(url, data)` (lists post every value)."""
    data: dict[str, list[str]] = {}
    for name, value in form_pairs(html, form_id):
        data.setdefault(name, []).append(value)
    return data
