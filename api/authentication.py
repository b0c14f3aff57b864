"""`Authorization: Bearer <token>` for eval jobs; the session serves the browsable API."""

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.throttling import BaseThrottle, SimpleRateThrottle

from api.selectors import api_token_by_secret
from api.services import api_token_touch

KEYWORD = "Bearer"


class BearerTokenAuthentication(BaseAuthentication):
    """Authenticates a request that carries a Bearer token; leaves any other to the
    next authentication class (the session).

    A token that is unknown, revoked or expired, or whose owner is inactive, is refused
    with 401 and a message saying which, rather than passed on as anonymous: a job that
    sent a token wants to know why it does not work.
    """

    def authenticate(self, request):
        header = get_authorization_header(request).split()
        if not header or header[0].lower() != KEYWORD.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("the Authorization header must be 'Bearer <token>', with one token")
        guesses = UnknownTokenLimit(request)
        guesses.check()
        try:
            secret = header[1].decode("ascii")
        except UnicodeDecodeError:
            guesses.count()
            raise exceptions.AuthenticationFailed("unknown API token") from None
        token = api_token_by_secret(secret)
        if token is None:
            guesses.count()
            raise exceptions.AuthenticationFailed("unknown API token")
        now = timezone.now()
        if token.revoked_at is not None:
            raise exceptions.AuthenticationFailed(f"API token {token.prefix}… was revoked")
        if token.is_expired(now):
            raise exceptions.AuthenticationFailed(f"API token {token.prefix}… expired at {token.expires_at.isoformat()}")
        if not token.owner.is_active:
            raise exceptions.AuthenticationFailed(f"the owner of API token {token.prefix}… is inactive")
        api_token_touch(token=token)
        return token.owner, token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer a request without credentials with 401, not 403.
        return f'{KEYWORD} realm="goldset"'


class UnknownTokenLimit:
    """How many unknown tokens one address may present (API_TOKEN_GUESS_RATE, "20/minute"):
    past it, every Bearer request from that address is answered 429 with Retry-After until
    the window ends, a correct token included, so that guessing costs a minute per handful.
    DRF's throttles cannot do it: they run after authentication, which a guess fails first.
    Counted in the cache, per address as DRF's throttles tell it (X-Forwarded-For with
    NUM_PROXIES)."""

    def __init__(self, request):
        self.limit, self.window = SimpleRateThrottle.parse_rate(None, settings.API_TOKEN_GUESS_RATE)
        self.key = f"api-token-guesses:{BaseThrottle().get_ident(request)}"

    def check(self) -> None:
        if (cache.get(self.key) or 0) >= self.limit:
            raise exceptions.Throttled(wait=self.window, detail=f"too many unknown API tokens from this address; wait {self.window} s")

    def count(self) -> None:
        cache.add(self.key, 0, self.window)
        try:
            cache.incr(self.key)
        except ValueError:  # expired between add and incr: this guess opens a new window
            cache.set(self.key, 1, self.window)


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """How drf-spectacular describes BearerTokenAuthentication in the schema."""

    target_class = "api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "an API token, gs_..., made by a manager"}
