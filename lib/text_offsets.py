"""A page's text as safe HTML whose every piece of text says where it stands in the text as
stored (Page.text), so that a selection on screen maps back to character offsets exactly:
the judging screen's evidence spans (SEMANTICS.md, "Documents, chunkings and levels").

Each run of text becomes `<span data-o="N">...</span>`, N its offset in `text` (in code
points, as Python counts). The run's characters on screen are the stored ones, one for
one, except for what the browser would change: line breaks (plain text) become
<br> or paragraphs and, like carriage returns, belong to no run; a character reference of an HTML page
(`&amp;`, `&#233;`) is a run of its own with `data-r`, the reference's length in the
stored text, since it shows as one character. A selection boundary outside every run
snaps to the nearest run (static/labeling/spans.js does the mapping).

`cuts` are offsets where a run must end (a chunk's start and end, say), so that a run lies
wholly inside or outside each of `ranges`; the runs inside one carry `class="chunk"`.

Sanitised as lib.sanitize.page_html sanitises (the same tags, links and schemes): plain
text is escaped, HTML goes through nh3 after its text is wrapped, its tags rebuilt from
their parsed attributes so a page cannot bring offsets of its own.
"""

import html
import re
from bisect import bisect_right
from collections.abc import Sequence
from copy import deepcopy
from html.parser import HTMLParser

import nh3

from lib.sanitize import ALLOWED_TAGS, LINK_REL, is_html

# Plain text: a line break, with the blanks around it (they are not worth selecting).
# Two or more breaks make a new paragraph, as page_html does.
_BREAKS = re.compile(r"[ \t]*(?:\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n))*[ \t]*")
_OFFSET_ATTRIBUTES = frozenset({"data-o", "data-r"})
_ATTRIBUTES = deepcopy(nh3.ALLOWED_ATTRIBUTES)
_ATTRIBUTES["span"] = set(_ATTRIBUTES.get("span", set())) | set(_OFFSET_ATTRIBUTES) | {"class"}
_RAW_TEXT_TAGS = frozenset({"script", "style"})
# Elements whose content an HTML parser reads as text, never as tags: a run's <span> inside
# one would show as literal markup, so their text is shown without runs (not selectable).
_TEXT_ONLY_TAGS = frozenset({"title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext"})


class _Runs:
    """Writes runs of `text`, cut at `cuts`, marked "chunk" inside `ranges`."""

    def __init__(self, cuts: Sequence[int], ranges: Sequence[tuple[int, int]]):
        self.cuts = sorted(set(cuts))
        self.ranges = list(ranges)

    def inside(self, offset: int) -> bool:
        return any(start <= offset < end for start, end in self.ranges)

    def run(self, offset: int, shown: str, raw_length: int | None = None) -> str:
        klass = ' class="chunk"' if self.inside(offset) else ""
        extra = f' data-r="{raw_length}"' if raw_length is not None else ""
        return f'<span data-o="{offset}"{extra}{klass}>{html.escape(shown)}</span>'

    def runs(self, offset: int, text: str) -> str:
        """`text`, standing at `offset`, as runs cut at the cuts that fall inside it."""
        if not text:
            return ""
        pieces, start = [], 0
        at = bisect_right(self.cuts, offset)
        while at < len(self.cuts) and self.cuts[at] < offset + len(text):
            cut = self.cuts[at] - offset
            pieces.append(self.run(offset + start, text[start:cut]))
            start, at = cut, at + 1
        pieces.append(self.run(offset + start, text[start:]))
        return "".join(pieces)


def _plain(text: str, runs: _Runs) -> str:
    paragraphs, current, at = [], [], 0
    for breaks in _BREAKS.finditer(text):
        current.append(runs.runs(at, text[at : breaks.start()]))
        at = breaks.end()
        newlines = len(re.findall(r"\r\n|\r|\n", breaks.group(0)))
        if newlines > 1:
            paragraphs.append(current)
            current = []
        elif breaks.start() > 0 and breaks.end() < len(text):
            current.append("<br>")
    current.append(runs.runs(at, text[at:]))
    paragraphs.append(current)
    return "".join(f"<p>{''.join(parts)}</p>" for parts in paragraphs if any(part and part != "<br>" for part in parts))


class _Wrapper(HTMLParser):
    """Rebuilds an HTML page with its text wrapped in runs; offsets from the parser's position."""

    def __init__(self, text: str, runs: _Runs):
        super().__init__(convert_charrefs=False)
        self.text, self.runs = text, runs
        self.line_starts = [0] + [match.end() for match in re.finditer(r"\n", text)]
        self.out: list[str] = []
        self.raw_text_depth = 0
        self.text_only_depth = 0
        self.pending_reference: tuple[int, str] | None = None

    def _offset(self) -> int:
        line, column = self.getpos()
        return self.line_starts[line - 1] + column

    def _close_reference(self) -> None:
        """A reference's stored length is known when the next thing starts."""
        if self.pending_reference is not None:
            start, shown = self.pending_reference
            self.pending_reference = None
            self.out.append(self.runs.run(start, shown, self._offset() - start))

    @staticmethod
    def _tag(tag: str, attrs: list[tuple[str, str | None]], close: str = "") -> str:
        # Offsets and the chunk mark are this module's alone.
        dropped = _OFFSET_ATTRIBUTES | {"class"} if tag == "span" else _OFFSET_ATTRIBUTES
        kept = "".join(f' {name}="{html.escape(value or "", quote=True)}"' for name, value in attrs if name.lower() not in dropped)
        return f"<{tag}{kept}{close}>"

    def handle_starttag(self, tag, attrs):
        self._close_reference()
        self.raw_text_depth += tag in _RAW_TEXT_TAGS
        self.text_only_depth += tag in _TEXT_ONLY_TAGS
        self.out.append(self._tag(tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self._close_reference()
        self.out.append(self._tag(tag, attrs, " /"))

    def handle_endtag(self, tag):
        self._close_reference()
        if tag in _RAW_TEXT_TAGS:
            self.raw_text_depth = max(self.raw_text_depth - 1, 0)
        if tag in _TEXT_ONLY_TAGS:
            self.text_only_depth = max(self.text_only_depth - 1, 0)
        self.out.append(f"</{tag}>")

    def handle_data(self, data):
        self._close_reference()
        if self.raw_text_depth:
            return  # a script's or style's content: never shown
        if self.text_only_depth:
            self.out.append(html.escape(data))
            return
        # A carriage return is dropped or made a line feed by every HTML parser: it
        # belongs to no run, so each run's characters stay the stored ones.
        offset = self._offset()
        for piece in re.finditer(r"[^\r]+", data):
            self.out.append(self.runs.runs(offset + piece.start(), piece.group(0)))

    def _reference(self, shown: str) -> None:
        self._close_reference()
        if self.text_only_depth:
            self.out.append(html.escape(shown))
        elif not self.raw_text_depth:
            self.pending_reference = (self._offset(), shown)

    def handle_entityref(self, name):
        self._reference(html.unescape(f"&{name};"))

    def handle_charref(self, name):
        self._reference(html.unescape(f"&#{name};"))

    def handle_comment(self, data):
        self._close_reference()

    def handle_decl(self, decl):
        self._close_reference()

    def handle_pi(self, data):
        self._close_reference()

    def unknown_decl(self, data):
        self._close_reference()

    def finish(self) -> str:
        self.close()
        if self.pending_reference is not None:
            start, shown = self.pending_reference
            self.out.append(self.runs.run(start, shown, len(self.text) - start))
        return "".join(self.out)


def offset_html(text: str, ranges: Sequence[tuple[int, int]] = ()) -> str:
    """`text` (HTML or plain) as safe HTML of runs that carry their offsets (see the module
    docstring), the runs inside `ranges` ([start, end) offsets, e.g. chunks) marked
    class="chunk". Returns a str; the caller marks it safe."""
    text = text or ""
    cuts = [offset for start, end in ranges for offset in (start, end)]
    runs = _Runs(cuts, ranges)
    if not is_html(text):
        return _plain(text, runs)
    wrapper = _Wrapper(text, runs)
    wrapper.feed(text)
    return nh3.clean(wrapper.finish(), tags=ALLOWED_TAGS | {"span"}, attributes=_ATTRIBUTES, link_rel=LINK_REL)
