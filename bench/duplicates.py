"""Is grouping duplicates as fast as the library it is built on? A million documents.

    .venv/bin/python bench/duplicates.py [--docs 1000000] [--words 40] [--threshold 0.9]

Generates `--docs` documents of `--words` words (a vocabulary of 50,000 words, Zipf-like),
a tenth of them exact copies (another case and spacing) and a tenth near copies (the last
word changed: a Jaccard of about 0.95) of an earlier document, and times over the same documents, in the same process:

- the library's own batch: datasketch's MinHash.generator over every document's word
  shingles and a MinHashLSH insertion session of the MinHashes, with the permutations and
  threshold goldenset.duplicates uses (the shingles are made inside the timing, as the
  library needs them);
- goldenset.duplicates.group_firsts: normalising, the exact groups, the same batch over the
  first of each exact group, the candidates read from the index's buckets and checked, the
  groups closed.

It prints both times, their ratio (the issue's bar: the grouping within 2x of the
library's batch) and what the grouping found against what was planted. Nothing touches a
database: Page.duplicate_of is then one bulk update of the members' rows.
"""

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import django  # noqa: E402
from datasketch import MinHash, MinHashLSH  # noqa: E402

# goldenset.duplicates imports the models (for its write); nothing here opens a database.
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "goldset.settings")
django.setup()

from goldenset.duplicates import NUM_PERM, SEED, group_firsts, normalised, shingles  # noqa: E402


def documents(count: int, words: int, seed: int = 7) -> tuple[list[str], int, int]:
    """`count` texts, and how many exact and near copies were planted."""
    rng = np.random.default_rng(seed)
    vocabulary = np.array([f"w{n}" for n in range(50_000)])
    picks = np.minimum(rng.zipf(1.3, size=(count, words)) - 1 + rng.integers(0, 2_000, size=(count, words)), 49_999)
    texts = [" ".join(row) for row in vocabulary[picks].tolist()]
    kinds = rng.random(count)
    exact = near = 0
    for index in range(1, count):
        source = int(rng.integers(0, index))
        if kinds[index] < 0.1:
            texts[index] = "  " + texts[source].upper().replace(" ", "\t ")
            exact += 1
        elif kinds[index] < 0.2:
            changed = texts[source].split(" ")
            changed[-1] = "changed"  # one shingle of the last three words: Jaccard about 0.95
            texts[index] = " ".join(changed)
            near += 1
    return texts, exact, near


def library_batch(texts: list[str], threshold: float) -> float:
    started = time.perf_counter()
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    minhashes = MinHash.generator((shingles(normalised(text)) for text in texts), num_perm=NUM_PERM, seed=SEED)
    with lsh.insertion_session() as session:
        for index, minhash in enumerate(minhashes):
            session.insert(index, minhash, check_duplication=False)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--words", type=int, default=40)
    parser.add_argument("--threshold", type=float, default=0.9)
    args = parser.parse_args()

    texts, exact, near = documents(args.docs, args.words)
    print(
        f"{args.docs:,} documents of {args.words} words: {exact:,} exact and {near:,} near copies planted; threshold {args.threshold}, {NUM_PERM} permutations"
    )
    library = library_batch(texts, args.threshold)
    print(f"library batch (MinHash.generator + MinHashLSH insertion session): {library:.1f} s")
    started = time.perf_counter()
    firsts = group_firsts(texts, args.threshold)
    grouping = time.perf_counter() - started
    members = int(np.count_nonzero(firsts != np.arange(len(firsts))))
    print(f"goldenset.duplicates.group_firsts: {grouping:.1f} s, {members:,} documents grouped under another")
    print(f"ratio grouping / library batch: {grouping / library:.2f} (the bar: 2.00 or under)")


if __name__ == "__main__":
    main()
