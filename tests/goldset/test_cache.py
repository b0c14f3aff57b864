"""The cache the web servers share: Redis when CACHE_URL is set, so that what one process
caches (a version found intact, the API's rate-limit counts) another reads; the process's
own memory otherwise. Each process here is a separate `manage.py shell`."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def in_fresh_process(script: str, **env: str) -> str:
    clean = {name: value for name, value in os.environ.items() if name not in ("CACHE_URL", "DJANGO_SETTINGS_MODULE")}
    result = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, "DJANGO_SETTINGS_MODULE": "goldset.settings", **env},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip().splitlines()[-1]


BACKEND = "from django.conf import settings; print(settings.CACHES['default']['BACKEND'])"


def test_without_cache_url_each_process_caches_in_its_own_memory():
    assert in_fresh_process(BACKEND) == "django.core.cache.backends.locmem.LocMemCache"


@pytest.fixture
def redis_url() -> str:
    if not settings.REDIS_AVAILABLE:
        pytest.skip("needs Redis (TEST_REDIS_URL)")
    return settings.TEST_REDIS_URL


def test_with_cache_url_the_settings_pick_redis(redis_url):
    assert in_fresh_process(BACKEND, CACHE_URL=redis_url) == "goldset.cache.FailoverRedisCache"


def test_what_one_process_caches_another_reads(redis_url):
    key, value = f"test-shared-{uuid.uuid4().hex}", uuid.uuid4().hex
    write = f"from django.core.cache import cache; cache.set({key!r}, {value!r}, 60); print('written')"
    read = f"from django.core.cache import cache; import json; print(json.dumps(cache.get({key!r})))"
    try:
        assert in_fresh_process(write, CACHE_URL=redis_url) == "written"
        assert json.loads(in_fresh_process(read, CACHE_URL=redis_url)) == value
        # Without the shared cache, another process knows nothing of it.
        assert json.loads(in_fresh_process(read)) is None
    finally:
        in_fresh_process(f"from django.core.cache import cache; cache.delete({key!r}); print('gone')", CACHE_URL=redis_url)


def test_two_processes_share_the_api_rate_limit(redis_url):
    """DRF's throttle counts in the cache: with Redis, a client's requests to two web
    servers count against one limit, not one limit per server."""
    address = f"203.0.113.{uuid.uuid4().int % 250 + 1}"
    script = (
        "from rest_framework.test import APIRequestFactory; from rest_framework.throttling import AnonRateThrottle; "
        "AnonRateThrottle.THROTTLE_RATES = {'anon': '2/minute'}; "
        f"request = APIRequestFactory().get('/api/v1/', REMOTE_ADDR={address!r}); "
        "from rest_framework.request import Request; t = AnonRateThrottle(); "
        "print(t.allow_request(Request(request), None))"
    )
    try:
        answers = [in_fresh_process(script, CACHE_URL=redis_url) for _ in range(3)]
        assert answers == ["True", "True", "False"]
    finally:
        in_fresh_process(
            f"from django.core.cache import cache; cache.delete('throttle_anon_{address}'); print('gone')",
            CACHE_URL=redis_url,
        )


def test_the_embedded_default_shows_the_sites_404_and_serves_static_files_without_debug():
    """Issue 30 item 4: `make run` served Django's technical 404 (every URL pattern, 608 px
    wide on a phone) for a page a role may not open."""
    script = (
        "from django.conf import settings; from django.test import Client; c = Client(); "
        "missing = c.get('/no-such-page/'); css = c.get('/static/goldset/goldset.css'); "
        "print(settings.DEBUG, missing.status_code, b'URLconf' in missing.content, css.status_code)"
    )
    assert in_fresh_process(script, ALLOWED_HOSTS="testserver") == "False 404 False 200"
