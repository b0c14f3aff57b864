"""The cache backend when CACHE_URL is set: Django's Redis cache, which falls back to this
process's memory while Redis does not answer.

Everything Goldset caches is an optimisation whose truth lives in the database (a version
found intact, the judging counts, a publish's progress, whose job row holds it too) or a
limit that may be counted per process for a while (the API's rate limits). So a cache that
is away must never answer 500: with Django's own backend, a Redis outage made the API, the
uploads and the judging screen fail on every request (DRF's throttle reads the cache first).

While Redis fails, each call goes to a LocMemCache of the process, and Redis is not asked
again for RETRY_SECONDS, so that requests do not each wait for a connection that fails.
The first failure of an outage and the return are logged once each. Connections time out
after CONNECT_TIMEOUT_SECONDS and reads after READ_TIMEOUT_SECONDS (settings' OPTIONS), so
a Redis that hangs costs one slow request per retry, not a stuck worker.
"""

import logging
import threading
import time

from django.core.cache.backends.locmem import LocMemCache
from django.core.cache.backends.redis import RedisCache
from redis.exceptions import RedisError

logger = logging.getLogger(__name__)

RETRY_SECONDS = 5.0
CONNECT_TIMEOUT_SECONDS = 0.5
READ_TIMEOUT_SECONDS = 2.0


def _falls_back(name: str):
    def method(self, *args, **kwargs):
        if self._down_until > time.monotonic():
            return getattr(self._local, name)(*args, **kwargs)
        try:
            result = getattr(super(FailoverRedisCache, self), name)(*args, **kwargs)
        except RedisError as exc:
            self._went_down(exc)
            return getattr(self._local, name)(*args, **kwargs)
        if self._down:
            self._came_back()
        return result

    method.__name__ = name
    return method


class FailoverRedisCache(RedisCache):
    def __init__(self, server, params):
        params = {
            **params,
            "OPTIONS": {
                "socket_connect_timeout": CONNECT_TIMEOUT_SECONDS,
                "socket_timeout": READ_TIMEOUT_SECONDS,
                **params.get("OPTIONS", {}),
            },
        }
        super().__init__(server, params)
        self._local = LocMemCache(f"goldset-failover-{id(self)}", {"TIMEOUT": params.get("TIMEOUT", 300)})
        self._lock = threading.Lock()
        self._down = False
        self._down_until = 0.0

    def _went_down(self, exc: Exception) -> None:
        with self._lock:
            self._down_until = time.monotonic() + RETRY_SECONDS
            if not self._down:
                self._down = True
                logger.error("cache unreachable (%s): this process caches in its own memory until it answers", exc)

    def _came_back(self) -> None:
        with self._lock:
            if self._down:
                self._down = False
                logger.warning("cache reachable again: back to the shared cache")

    add = _falls_back("add")
    get = _falls_back("get")
    set = _falls_back("set")
    touch = _falls_back("touch")
    delete = _falls_back("delete")
    get_many = _falls_back("get_many")
    has_key = _falls_back("has_key")
    incr = _falls_back("incr")
    set_many = _falls_back("set_many")
    delete_many = _falls_back("delete_many")
    clear = _falls_back("clear")
