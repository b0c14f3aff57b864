"""Content hashes: stable across databases, Python versions and row order."""

import hashlib
import json


def text_hash(*parts: str) -> str:
    """sha256 hex digest of the parts, separated so ("ab", "c") != ("a", "bc")."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8"))
        digest.update(b"\x1f")
    return digest.hexdigest()


def canonical_json(value: object) -> str:
    """JSON with sorted keys and no spaces: the same data always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


class StreamHash:
    """Feeds lines into sha256 one at a time, so a million labels need no big string."""

    def __init__(self) -> None:
        self._digest = hashlib.sha256()

    def add(self, line: str) -> None:
        self._digest.update(line.encode("utf-8"))
        self._digest.update(b"\n")

    def hexdigest(self) -> str:
        return self._digest.hexdigest()
