"""A client for Goldset's API, for eval jobs: pinned qrels (cached by ETag, checked against
the version's content hash), publishing a version (waiting on its job), run uploads and their scores, completeness and monitoring series.

    from goldset_client import GoldsetClient
    client = GoldsetClient()  # GOLDSET_URL, GOLDSET_TOKEN
"""

import importlib.metadata

from goldset_client.client import GoldsetClient, Qrels
from goldset_client.errors import (
    EvaluationFailed,
    GoldsetAPIError,
    GoldsetClientError,
    GoldsetConnectionError,
    GoldsetTimeout,
    GoldsetTLSError,
    PublishFailed,
    QrelsIntegrityError,
    WaitTimeout,
)
from goldset_client.http import RetryPolicy

__all__ = [
    "EvaluationFailed",
    "GoldsetAPIError",
    "GoldsetClient",
    "GoldsetClientError",
    "GoldsetConnectionError",
    "GoldsetTimeout",
    "GoldsetTLSError",
    "PublishFailed",
    "Qrels",
    "QrelsIntegrityError",
    "RetryPolicy",
    "WaitTimeout",
]

try:
    # Single-sourced: pyproject.toml's version, as the installed package's metadata says it.
    __version__ = importlib.metadata.version("goldset-client")
except importlib.metadata.PackageNotFoundError:  # the source tree on sys.path, never installed
    __version__ = "0+unknown"
