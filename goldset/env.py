"""Strict readers of environment variables: a malformed value stops the process at start.

Every variable read here is listed, with its default, in .env.example; a test checks
that list against this module and docker-compose.yml.
"""

import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_networks(name: str, default: list[str] | None = None) -> list[str]:
    """A comma-separated list of IP networks (CIDR); a malformed one stops the start."""
    networks = env_list(name, default or [])
    for network in networks:
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            raise ImproperlyConfigured(f"{name}: {network!r} is not an IP network such as 10.20.0.0/16") from None
    return networks


def numba_cache_dir() -> str:
    """Where numba keeps ranx's compiled kernels: outside the clone, so they survive it.

    Compiling them costs about 80 s; with the cache a worker or a test run pays that once
    per machine, not once per process.
    """
    default = Path.home() / ".cache" / "goldset" / "numba"
    path = env_str("NUMBA_CACHE_DIR", str(default))
    Path(path).mkdir(parents=True, exist_ok=True)
    return path
