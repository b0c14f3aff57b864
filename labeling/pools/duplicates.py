"""Annotators see a duplicate group once (SEMANTICS.md, "Duplicate groups").

A pool reads each run's pages through goldenset.duplicates: a member of a group becomes
the group's first member, and a run's later members of a group it has already returned
for the query are dropped, as the later chunks of a document are, so that one task
stands for the group. Its judgment is the group's through publish
(goldenset.version_rows maps every member's judgment onto the first).
"""

import numpy as np

from goldenset.duplicates import to_groups


def fold_duplicates(
    docs: np.ndarray, kept: np.ndarray, members: np.ndarray, groups: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One run's kept entries, best first per query (`kept` of them per query in turn),
    with members replaced by their group's first and repeats of a group within a query
    dropped: (docs, kept per query, the (query index, member page) of every entry that
    named a member other than its group's first, a row each)."""
    mapped = to_groups(docs, members, groups)
    moved = mapped != docs
    if not moved.any():
        return docs, kept, np.zeros((0, 2), dtype=np.int64)
    owner = np.repeat(np.arange(len(kept), dtype=np.int64), kept)
    folded = np.stack([owner[moved], docs[moved]], axis=1)
    # The first entry of each (query, group), in the run's order.
    order = np.lexsort((np.arange(len(docs)), mapped, owner))
    first = np.ones(len(order), dtype=bool)
    first[1:] = (owner[order][1:] != owner[order][:-1]) | (mapped[order][1:] != mapped[order][:-1])
    keep = np.zeros(len(docs), dtype=bool)
    keep[order[first]] = True
    return mapped[keep], np.bincount(owner[keep], minlength=len(kept)).astype(kept.dtype), folded
