"""Qrels kept on disk by ETag, so that a job pulling the same pinned version every night
downloads it once and is answered 304 after.

Each entry is two files named by a digest of (server, set, version, format, slice): the
body as the server sent it (`.body`) and what is known of it (`.json`: the ETag and the
sha256 and size of the body). An entry is used only when the body still has the recorded
sha256: a file edited, truncated or swapped since the download is found out, dropped and
downloaded again. Files are written under a temporary name and renamed, so a job killed
mid-download never leaves half a body under the real name.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

CHUNK = 1 << 20


def default_cache_dir() -> Path:
    """GOLDSET_CACHE_DIR, else $XDG_CACHE_HOME/goldset-client, else ~/.cache/goldset-client."""
    if os.environ.get("GOLDSET_CACHE_DIR"):
        return Path(os.environ["GOLDSET_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "goldset-client"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class CacheEntry:
    """A body held on disk: `etag` as the server sent it, `sha256` and `size` of the body."""

    body_path: Path
    etag: str
    sha256: str
    size: int


class QrelsCache:
    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _paths(self, key: str) -> tuple[Path, Path]:
        name = hashlib.sha256(key.encode("utf-8")).hexdigest()[:40]
        return self.directory / f"{name}.body", self.directory / f"{name}.json"

    def get(self, key: str) -> CacheEntry | None:
        """The entry for `key` as recorded, None when there is none (or its record is unreadable).
        Does not check the body: `intact` does."""
        body_path, meta_path = self._paths(key)
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            entry = CacheEntry(body_path, str(meta["etag"]), str(meta["sha256"]), int(meta["size"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if meta.get("key") != key or not body_path.exists():
            return None
        return entry

    @staticmethod
    def intact(entry: CacheEntry) -> bool:
        """Whether the body on disk is still the one downloaded (size, then sha256)."""
        try:
            if entry.body_path.stat().st_size != entry.size:
                return False
        except OSError:
            return False
        return file_sha256(entry.body_path) == entry.sha256

    def drop(self, key: str) -> None:
        for path in self._paths(key):
            path.unlink(missing_ok=True)

    def put(self, key: str, etag: str, chunks: Iterable[bytes]) -> CacheEntry:
        """Write the body from `chunks` and its record; returns the new entry."""
        self.directory.mkdir(parents=True, exist_ok=True)
        body_path, meta_path = self._paths(key)
        digest, size = hashlib.sha256(), 0
        fd, tmp_body = tempfile.mkstemp(dir=self.directory, suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in chunks:
                    digest.update(chunk)
                    size += len(chunk)
                    out.write(chunk)
            entry = CacheEntry(body_path, etag, digest.hexdigest(), size)
            # The record is removed before the body changes and written after, so no
            # moment pairs a new body with an old record.
            meta_path.unlink(missing_ok=True)
            os.replace(tmp_body, body_path)
        except BaseException:
            Path(tmp_body).unlink(missing_ok=True)
            raise
        meta = {"key": key, "etag": etag, "sha256": entry.sha256, "size": size}
        fd, tmp_meta = tempfile.mkstemp(dir=self.directory, suffix=".part")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(meta, out)
        os.replace(tmp_meta, meta_path)
        return entry
