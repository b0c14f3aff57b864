""" "Try it" as a job: one query sent to an endpoint by a worker, not by the web request.

A manager's try may meet an endpoint that answers slowly or not at all; asked in the
request, a few clicks held every web worker (issue 31, item 9). `try_start` records what to
ask under a fresh token in the cache and the caller sends `endpoint_try_task` (on the
outbound queue, settings.CELERY_OUTBOUND_QUEUE, beside the probe rounds, so that neither waits
behind a publish nor holds the workers that run one); the worker asks once, never again
(the task is not retried), waiting at most TRY_IT_SECONDS, and stores the answer under the
token. The page polls `try_state` until it is there. A try is the asker's: another user's
token reads as unknown. Nothing goes to the database: a try is kept TRY_KEPT_SECONDS.
"""

import secrets
from dataclasses import dataclass, replace

from django.conf import settings
from django.core.cache import cache

from monitoring.endpoints.selectors import doc_ids_known
from monitoring.endpoints.services import endpoint_spec
from monitoring.models import Endpoint

# A try waits at most this long (seconds) for the answer, whatever the endpoint's own
# timeout (up to 120 s for its nights): the manager is watching the page.
TRY_IT_SECONDS = 10.0
# How long a try's request and answer are kept for its page.
TRY_KEPT_SECONDS = 15 * 60
# The page stops waiting this long after the try was sent: past the task's hard limit
# (monitoring.tasks.TRY_LIMITS), an answer can no longer come.
TRY_GIVE_UP_SECONDS = 60


@dataclass
class TryState:
    """A try as its page shows it. `answer` is None while the worker has not answered."""

    token: str
    endpoint_id: int
    user_id: int
    query_id: str
    query: str
    k: int
    sent_at: float
    timeout_cut: tuple[float, float] | None = None
    answer: object | None = None  # monitoring.endpoints.client.ProbeAnswer
    known: frozenset[str] = frozenset()


def _key(token: str) -> str:
    return f"goldset:endpoint-try:{token}"


def try_start(*, endpoint: Endpoint, user_id: int, query_id: str, query: str, k: int, now: float) -> TryState:
    """Record a try of `endpoint` for `user_id` (`now`: time.time()); the caller sends
    endpoint_try_task(state.token)."""
    state = TryState(secrets.token_urlsafe(16), endpoint.pk, user_id, query_id, query, k, now)
    if endpoint.timeout_seconds > TRY_IT_SECONDS:
        state.timeout_cut = (endpoint.timeout_seconds, TRY_IT_SECONDS)
    cache.set(_key(state.token), state, TRY_KEPT_SECONDS)
    return state


def try_state(token: str, *, user_id: int, endpoint: Endpoint) -> TryState | None:
    """The try under `token`, if it is `user_id`'s try of `endpoint` and still kept."""
    state = cache.get(_key(token))
    if not isinstance(state, TryState) or state.user_id != user_id or state.endpoint_id != endpoint.pk:
        return None
    return state


def try_execute(token: str) -> TryState | None:
    """Ask the endpoint the try's query once and keep the answer with the try (the worker's
    side). None when the try is no longer kept or its endpoint is gone."""
    # Here, not at the top: the client brings aiohttp, which every importer would pay.
    from monitoring.endpoints.client import probe_sync

    state = cache.get(_key(token))
    if not isinstance(state, TryState) or state.answer is not None:
        return None
    endpoint = Endpoint.objects.filter(pk=state.endpoint_id).select_related("golden_set").first()
    if endpoint is None:
        return None
    spec = endpoint_spec(endpoint)
    if spec.timeout_seconds > TRY_IT_SECONDS:
        spec = replace(spec, timeout_seconds=TRY_IT_SECONDS)
    state.answer = probe_sync(spec, state.query_id, state.query, state.k, allowed_networks=settings.RETRIEVAL_ALLOWED_NETWORKS)
    state.known = frozenset(doc_ids_known(endpoint.golden_set, [doc_id for doc_id, _ in state.answer.ranking]))
    cache.set(_key(token), state, TRY_KEPT_SECONDS)
    return state
