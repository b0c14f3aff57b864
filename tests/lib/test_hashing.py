"""StreamHash's lines fed in blocks give the digest of the same lines fed one at a time:
version hashes stay what they were when publishing feeds its labels in blocks."""

import pytest

from lib.hashing import StreamHash


@pytest.mark.parametrize("count", [0, 1, 2, 3, 4, 7])
def test_lines_added_in_blocks_give_the_digest_of_lines_added_one_by_one(count):
    lines = [f"L\tq{n}\tdöc/{n}#ü\t{n % 4}" for n in range(count)] + ([""] if count == 4 else [])
    one_by_one, in_blocks = StreamHash(), StreamHash()
    for line in lines:
        one_by_one.add(line)
    in_blocks.add_lines(iter(lines), block=3)
    assert in_blocks.hexdigest() == one_by_one.hexdigest()
