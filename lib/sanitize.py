"""Page text from a corpus, made safe to show: shared by every screen that shows a page
(the judging screen, adjudication), so that all of them sanitise the same way."""

import html
import re

import nh3

# Images are dropped: a page shown to an annotator must not fetch from outside the app
# (a tracking pixel would tell a third party who judges what, and when).
ALLOWED_TAGS = nh3.ALLOWED_TAGS - {"img", "area", "map"}
LINK_REL = "noopener noreferrer nofollow"
# Text without a whole tag (<p>, </p>, <br/>, <a href="...">) is plain text, not HTML,
# even if it holds a "<" ("a<b").
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>")
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def is_html(text: str) -> bool:
    """Whether page text is HTML (it holds a whole tag) rather than plain text."""
    return bool(_TAG.search(text or ""))


def page_html(text: str) -> str:
    """`text` (HTML or plain) as HTML that is safe to insert into a page.

    HTML keeps its formatting tags (paragraphs, lists, code, tables, links, which get
    rel="noopener noreferrer nofollow"); scripts and styles are removed with their content,
    and so are event handlers, javascript: URLs and images. Plain text is escaped, its
    blank lines become paragraphs and its other line breaks <br>.

    Returns a str; the caller marks it safe (django.utils.safestring.mark_safe).
    """
    text = text or ""
    if not is_html(text):
        paragraphs = (part.strip("\n") for part in _BLANK_LINE.split(text.replace("\r\n", "\n")))
        return "".join(f"<p>{html.escape(part).replace(chr(10), '<br>')}</p>" for part in paragraphs if part.strip())
    return nh3.clean(text, tags=ALLOWED_TAGS, link_rel=LINK_REL)


# Schemes a page's link may have: javascript:, data: or vbscript: would run in the app's
# origin when clicked (the probe ran javascript: from the adjudication page).
LINK_SCHEMES = ("http", "https")
# Browsers drop tabs and line breaks anywhere in a URL, and C0 controls and spaces at its
# ends, before they read the scheme: "java\tscript:" is javascript:.
_URL_IGNORED = re.compile(r"[\t\n\r]")
_URL_EDGES = re.compile(r"^[\x00-\x20]+|[\x00-\x20]+$")


def link_url(url: str | None) -> str:
    """`url` if it is an http(s) URL safe to put in an href, else "" (show no link)."""
    cleaned = _URL_EDGES.sub("", _URL_IGNORED.sub("", url or ""))
    scheme, colon, rest = cleaned.partition(":")
    if not colon or scheme.lower() not in LINK_SCHEMES or not rest.startswith("//"):
        return ""
    return cleaned
