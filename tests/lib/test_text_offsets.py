"""lib.text_offsets: the page's text as safe HTML in runs that say where they stand in the
text as stored, so the judging screen maps a selection back to offsets exactly."""

import html
from html.parser import HTMLParser

import pytest

from lib.text_offsets import offset_html

PLAIN = "Café naïve 🎉 — 3<4, a < b & c > d &amp; \"quoted\" 'x'.\r\n\r\nSecond paragraph: 42 €.\nLine two ends here.  \n"
HTML = '<p>Caf&eacute; &amp; <b>bar</b> &#233;t&eacute; 🎉 &lt;tag&gt;</p>\n<script>x = "<b>no</b>"</script><ul><li>one &amp two</li></ul>\r\n<p>crlf\r\nline</p>'


class _Runs(HTMLParser):
    """(offset, stored length or None, shown text, classes) of every run, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.runs, self.open = [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "span" and "data-o" in attrs:
            self.open = [int(attrs["data-o"]), int(attrs["data-r"]) if "data-r" in attrs else None, "", attrs.get("class") or ""]

    def handle_endtag(self, tag):
        if tag == "span" and self.open is not None:
            self.runs.append(tuple(self.open))
            self.open = None

    def handle_data(self, data):
        if self.open is not None:
            self.open[2] += data


def runs_of(rendered: str):
    parser = _Runs()
    parser.feed(rendered)
    parser.close()
    return parser.runs


@pytest.mark.parametrize("text", [PLAIN, HTML, "", "one", "a\n\n\nb", "<br/>x &amp;", "<title>T &amp; U</title><pre>\ncode</pre>"])
def test_every_run_shows_exactly_the_stored_characters_at_its_offset(text):
    for offset, stored, shown, _ in runs_of(offset_html(text)):
        if stored is None:
            assert text[offset : offset + len(shown)] == shown
        else:  # a character reference: one character on screen
            assert html.unescape(text[offset : offset + stored]) == shown


def test_plain_text_keeps_every_character_but_line_breaks_in_a_run():
    covered = set()
    for offset, _, shown, _ in runs_of(offset_html(PLAIN)):
        covered.update(range(offset, offset + len(shown)))
    left_out = "".join(PLAIN[i] for i in range(len(PLAIN)) if i not in covered)
    assert left_out.strip() == ""


def test_html_hides_scripts_and_keeps_its_tags():
    rendered = offset_html(HTML)
    assert "<script" not in rendered and "no</b>" not in rendered
    assert "<b>" in rendered and "<li>" in rendered
    shown = "".join(run[2] for run in runs_of(rendered))
    assert "Café & bar été 🎉 <tag>" in shown and "one & two" in shown


def test_a_page_cannot_bring_offsets_of_its_own():
    rendered = offset_html('<p>a <span data-o="999" data-r="3" class="chunk">b</span></p>')
    assert "999" not in rendered and 'class="chunk"' not in rendered
    assert [run[:3] for run in runs_of(rendered)] == [(3, None, "a "), (49, None, "b")]


def test_runs_are_cut_at_ranges_and_marked_inside_them():
    runs = runs_of(offset_html("text of d5, and more", [(5, 10)]))
    assert [(offset, shown, classes) for offset, _, shown, classes in runs] == [
        (0, "text ", ""),
        (5, "of d5", "chunk"),
        (10, ", and more", ""),
    ]


def test_a_range_over_a_character_reference_marks_it_whole():
    text = "<p>x &amp; y</p>"
    runs = runs_of(offset_html(text, [(5, 12)]))
    assert (5, 5, "&", "chunk") in runs


def test_a_title_or_textarea_shows_its_text_without_runs_inside():
    rendered = offset_html("<title>A &amp; B</title><p>body</p><textarea>x <b>y</b></textarea>")
    assert "&lt;span" not in rendered and "data-o" not in rendered.split("<p>")[0]
    assert [run[:3] for run in runs_of(rendered)] == [(27, None, "body")]
