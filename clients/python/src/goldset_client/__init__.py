"""A client for Goldset's API, for eval jobs: pinned qrels (cached by ETag, checked against
the version's content hash), publishing a version (waiting on its job), run uploads and their scores, completeness and monitoring series.

    from goldset_client import GoldsetClient
    client = GoldsetClient()  # GOLDSET_URL, GOLDSET_TOKEN
"""

from goldset_client.client import GoldsetClient, Qrels
from goldset_client.errors import (
    EvaluationFailed,
    GoldsetAPIError,
    GoldsetClientError,
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
    "PublishFailed",
    "Qrels",
    "QrelsIntegrityError",
    "RetryPolicy",
    "WaitTimeout",
]
__version__ = "0.1.0"
