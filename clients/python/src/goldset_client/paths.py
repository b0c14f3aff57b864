"""The API paths the client's calls share."""

from __future__ import annotations

from urllib.parse import quote


def set_path(slug: str) -> str:
    return f"/api/v1/golden-sets/{quote(slug, safe='')}/"
