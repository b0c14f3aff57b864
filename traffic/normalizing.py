"""The merge key of a query's text: what makes two texts the same query.

Unicode NFKC, case-folded, whitespace collapsed and stripped, punctuation (Unicode category
P*) at either end dropped ("reset password?" is "reset password"; "c++" and "node.js" keep
theirs, where it means something). The importer (traffic.logs) merges a log's lines by it and
a draw (traffic.sampling) compares a golden set's query texts with a log's
LoggedQuery.normalized by it: one rule, one place.
"""

import unicodedata


def query_merge_key(text: str) -> str:
    """The merge key of `text`; "" when nothing is left."""
    key = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    start, end = 0, len(key)
    while start < end and unicodedata.category(key[start])[0] == "P":
        start += 1
    while end > start and unicodedata.category(key[end - 1])[0] == "P":
        end -= 1
    return key[start:end].strip()
