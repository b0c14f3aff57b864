"""The merge key of a query's text: what makes two texts the same query.

Unicode NFKC, case-folded, whitespace collapsed and stripped. A draw (traffic.sampling)
compares a golden set's query texts with a log's LoggedQuery.normalized through it, so the
importer (traffic.logs) must merge by this same key: one rule, one place.
"""

import re
import unicodedata

_SPACES = re.compile(r"\s+")


def query_merge_key(text: str) -> str:
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()
