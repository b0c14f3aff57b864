"""Single sign-on with OpenID Connect, through mozilla-django-oidc (settings: the OIDC block of
goldset.settings; for people: docs/sso.md).

mozilla-django-oidc runs the code flow (state, nonce, PKCE), fetches the tokens and the
userinfo, and checks the id token's signature and `exp`. What it leaves to its user, done
here: the id token's issuer and audience, `iat` not in the future, a clock leeway, the
userinfo's subject against the id token's; a person made on their first sign-in with a
readable username and updated at each one; the groups claim turned into team roles
(goldenset.teams.team_roles_sync) and organisation admins; and every refusal carried, as
one of FAILURES, to a page that says it in words (templates/registration/sso_failed.html).
"""

import logging
import re
from functools import wraps

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from goldenset.models import Organisation, OrganisationMembership, Team
from goldenset.teams import organisation_member_set, team_get, team_roles_sync
from lib.errors import GoldsetError

log = logging.getLogger(__name__)

# The session key under which a refused sign-in leaves its reason for the failure page.
FAILURE_KEY = "sso_failure"

# Each reason a sign-in is refused: what the person reads, and what to tell the admin.
FAILURES = {
    "denied": (
        "You cancelled the sign-in",
        "The sign-in was cancelled at the provider, or it did not allow Goldset to know who you are.",
        "Nothing, unless you did not cancel: then say the provider refused the sign-in (access denied).",
    ),
    "provider": (
        "The sign-in provider did not answer as expected",
        "Goldset could not finish the sign-in with the provider: it was unreachable or returned an error.",
        "The provider returned an error or was unreachable when Goldset asked for your tokens or your profile.",
    ),
    "issuer": (
        "The sign-in came from an unexpected provider",
        "The proof of identity Goldset received was issued by a different provider from the one it trusts.",
        "The id token's issuer is not OIDC_OP_ISSUER.",
    ),
    "audience": (
        "The sign-in was meant for another application",
        "The proof of identity Goldset received was issued for a different application.",
        "The id token's audience does not hold OIDC_RP_CLIENT_ID.",
    ),
    "signature": (
        "The sign-in could not be verified",
        "The proof of identity Goldset received is not signed by the provider's published keys, so Goldset cannot trust it.",
        "The id token's signature does not verify against the keys at OIDC_OP_JWKS_ENDPOINT.",
    ),
    "expired": (
        "The sign-in had already expired",
        "The proof of identity Goldset received was out of date by the time it arrived. Trying again usually works;"
        " if it keeps happening, a clock is wrong.",
        "The id token was expired, or issued in the future, beyond OIDC_CLOCK_LEEWAY: compare the clocks of Goldset and the provider.",
    ),
    "token": (
        "The sign-in could not be read",
        "The proof of identity Goldset received is malformed or does not match this sign-in.",
        "The id token is malformed, lacks a required claim, or its nonce or subject does not match.",
    ),
    "email": (
        "Your account has no verified email address",
        "Goldset needs a verified email address from the provider to know which account is yours.",
        "The provider sent no email claim, or email_verified is false (add the email scope to OIDC_RP_SCOPES).",
    ),
    "ambiguous": (
        "More than one Goldset account has your email address",
        "Goldset cannot tell which of them is yours, so it signed nobody in.",
        "Two or more users have the same email address: change or remove all but one.",
    ),
    "inactive": (
        "Your Goldset account is switched off",
        "Your account exists, but an admin has made it inactive.",
        "The user is inactive in Django's admin.",
    ),
    "state": (
        "The sign-in started somewhere else or too long ago",
        "Goldset did not recognise this sign-in: it began in another browser, or your session ended in the meantime.",
        "Nothing, unless it keeps happening: then say the callback's state was not found in the session.",
    ),
    "unknown": (
        "The sign-in did not work",
        "Goldset could not sign you in.",
        "The sign-in failed without a recorded reason: look at Goldset's log at the time below.",
    ),
}


class SignOnRefused(Exception):
    """A sign-in refused for one of FAILURES' reasons; `detail` is for the admin (no secret)."""

    def __init__(self, reason: str, detail: str = ""):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def _remember(request: HttpRequest, reason: str, detail: str = "") -> None:
    log.warning("single sign-on refused (%s): %s", reason, detail or FAILURES[reason][2])
    request.session[FAILURE_KEY] = {"reason": reason, "detail": detail[:300]}


def local_passwords_allowed() -> bool:
    """Passwords are accepted unless single sign-on is on and GOLDSET_LOCAL_PASSWORDS is false."""
    return settings.GOLDSET_LOCAL_PASSWORDS or not settings.SSO_ENABLED


def local_passwords_only(view):
    """A password page (change, reset) answers 404 while passwords are switched off: a
    password set there could not sign anyone in."""

    @wraps(view)
    def guarded(request: HttpRequest, *args, **kwargs):
        if not local_passwords_allowed():
            raise Http404("passwords are switched off: sign in with single sign-on")
        return view(request, *args, **kwargs)

    return guarded


def sign_on(request: HttpRequest) -> dict:
    """Context processor: what the login page offers."""
    return {
        "sign_on": {
            "enabled": settings.SSO_ENABLED,
            "provider": settings.OIDC_PROVIDER_NAME,
            "passwords": local_passwords_allowed(),
        }
    }


def axes_passes_sign_on(request: HttpRequest, credentials: dict | None) -> bool:
    """AXES_WHITELIST_CALLABLE: the sign-on callback's credentials (a nonce, a PKCE verifier,
    no username) are no password guess, so axes neither counts nor locks them."""
    return bool(credentials) and credentials.get("username") is None and ("nonce" in credentials or "code_verifier" in credentials)


class PasswordBackend(ModelBackend):
    """Django's password check, refusing every password while local passwords are off."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if not local_passwords_allowed():
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


# --- users and their roles -----------------------------------------------------------


def _username_base(claims: dict) -> str:
    raw = str(claims.get(settings.OIDC_USERNAME_CLAIM) or "").strip() or str(claims.get("email") or "").partition("@")[0]
    # Django's username characters: letters, digits and @ . + - _
    cleaned = re.sub(r"[^\w.@+-]+", "-", raw).strip("-")[:140]
    return cleaned or "user"


def unique_username(claims: dict) -> str:
    """The username claim (OIDC_USERNAME_CLAIM), else the email's local part, made unique
    with -2, -3, ... after it."""
    base = _username_base(claims)
    taken = set(get_user_model().objects.filter(username__istartswith=base).values_list("username", flat=True))
    taken = {name.lower() for name in taken}
    candidate, number = base, 1
    while candidate.lower() in taken:
        number += 1
        candidate = f"{base}-{number}"
    return candidate


def claimed_groups(claims: dict) -> list[str]:
    """The groups of OIDC_GROUPS_CLAIM: a list, or one string of names separated by spaces or commas."""
    value = claims.get(settings.OIDC_GROUPS_CLAIM)
    if value is None:
        return []
    if isinstance(value, str):
        return [name for name in re.split(r"[\s,]+", value) if name]
    if isinstance(value, list | tuple):
        return [str(name) for name in value]
    return [str(value)]


def roles_sync(*, user: AbstractBaseUser, groups: list[str]) -> None:
    """Give `user` the team roles and organisation admin that OIDC_GROUP_ROLES maps `groups`
    to, and take back those single sign-on gave before that the groups no longer name.

    Team roles and admin roles granted by hand stay (goldenset.teams.team_roles_sync, and
    OrganisationMembership.from_sso): an admin single sign-on made whose groups no longer name
    it is made a member again. A team or organisation the
    mapping names that does not exist is skipped and logged at each sign-in (it may be made
    later, by someone signing in through this very mapping).
    """
    named = set(groups)
    grants: list[tuple[Team, str]] = []
    admin_of: set[str] = set()
    admin_managed: set[str] = set()
    for group, target, role in settings.OIDC_GROUP_ROLES:
        if role == "admin":
            admin_managed.add(target)
            if group in named:
                admin_of.add(target)
            continue
        if group not in named:
            continue
        try:
            grants.append((team_get(target), role))
        except GoldsetError:
            log.warning("OIDC_GROUP_ROLES maps group %r to team %r, which does not exist: skipped", group, target)
    with transaction.atomic():
        team_roles_sync(user=user, grants=grants)
        organisations = {o.slug: o for o in Organisation.objects.filter(slug__in=admin_managed)}
        for slug in sorted(admin_managed - set(organisations)):
            log.warning("OIDC_GROUP_ROLES makes admins of organisation %r, which does not exist: skipped", slug)
        held = {
            slug: (role, from_sso)
            for slug, role, from_sso in OrganisationMembership.objects.filter(
                user=user, organisation__in=organisations.values()
            ).values_list("organisation__slug", "role", "from_sso")
        }
        for slug, organisation in organisations.items():
            role, from_sso = held.get(slug, (None, False))
            if slug in admin_of and role != OrganisationMembership.Role.ADMIN:
                organisation_member_set(organisation=organisation, user=user, role=OrganisationMembership.Role.ADMIN, from_sso=True)
            elif slug not in admin_of and role == OrganisationMembership.Role.ADMIN and from_sso:
                organisation_member_set(organisation=organisation, user=user, role=OrganisationMembership.Role.MEMBER, from_sso=True)


# --- the backend ---------------------------------------------------------------------


class SignOnBackend(OIDCAuthenticationBackend):
    """mozilla-django-oidc's backend with the id token fully verified, people matched by
    email, named by a claim, and placed in teams by their groups."""

    def authenticate(self, request, **kwargs):
        try:
            return super().authenticate(request, **kwargs)
        except SignOnRefused as refused:
            _remember(request, refused.reason, refused.detail)
        except requests.RequestException as error:
            response, asked = error.response, error.request
            if response is not None:
                detail = f"{response.url.split('?')[0]} answered {response.status_code}"
            else:
                where = asked.url.split("?")[0] if asked is not None and asked.url else "the provider"
                detail = f"{where} did not answer ({type(error).__name__})"
            _remember(request, "provider", detail)
        except (SuspiciousOperation, jwt.PyJWTError) as error:
            _remember(request, "token", str(error))
        return None

    def verify_token(self, token, **kwargs):
        """The id token's claims, once its signature (RS256, against the provider's JWKS),
        issuer, audience, exp and iat (within OIDC_CLOCK_LEEWAY seconds) and nonce hold;
        SignOnRefused otherwise."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as error:
            raise SignOnRefused("token", f"the id token is not a JWT ({error})") from None
        if header.get("alg") != self.OIDC_RP_SIGN_ALGO:
            raise SignOnRefused("signature", f"the id token is signed with {header.get('alg')!r}, not {self.OIDC_RP_SIGN_ALGO}")
        try:
            key = self.retrieve_matching_jwk(token)
        except (SuspiciousOperation, KeyError, TypeError, jwt.PyJWTError):
            # No key with the token's kid and alg, or a JWKS (or key) of the wrong shape.
            raise SignOnRefused(
                "signature", f"no usable key of the provider's JWKS has the id token's key id {header.get('kid')!r}"
            ) from None
        try:
            payload = jwt.decode(
                token,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=self.OIDC_RP_CLIENT_ID,
                issuer=settings.OIDC_OP_ISSUER,
                leeway=settings.OIDC_CLOCK_LEEWAY,
                options={"require": ["iss", "aud", "exp", "iat", "sub"]},
            )
        except jwt.InvalidSignatureError:
            raise SignOnRefused("signature", "the id token's signature does not verify against OIDC_OP_JWKS_ENDPOINT's keys") from None
        except jwt.InvalidIssuerError:
            issuer = jwt.decode(token, options={"verify_signature": False}).get("iss")
            raise SignOnRefused("issuer", f"the id token's issuer is {issuer!r}, OIDC_OP_ISSUER is {settings.OIDC_OP_ISSUER!r}") from None
        except jwt.InvalidAudienceError:
            raise SignOnRefused("audience", "the id token's audience does not hold OIDC_RP_CLIENT_ID") from None
        except jwt.ExpiredSignatureError:
            raise SignOnRefused("expired", f"the id token's exp is past, beyond a leeway of {settings.OIDC_CLOCK_LEEWAY} s") from None
        except jwt.ImmatureSignatureError:
            raise SignOnRefused(
                "expired", f"the id token's iat is in the future, beyond a leeway of {settings.OIDC_CLOCK_LEEWAY} s"
            ) from None
        except jwt.PyJWTError as error:
            raise SignOnRefused("token", f"the id token is refused: {error}") from None
        if "nonce" in kwargs and payload.get("nonce") != kwargs["nonce"]:
            raise SignOnRefused("token", "the id token's nonce is not this sign-in's")
        return payload

    def get_userinfo(self, access_token, id_token, payload):
        """The id token's claims with the userinfo endpoint's over them (the groups are
        often only there); both must be about the same subject."""
        userinfo = super().get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload.get("sub"):
            raise SignOnRefused("token", "the userinfo endpoint answered for another subject than the id token's")
        protocol = {"iss", "aud", "exp", "iat", "nbf", "nonce", "azp", "at_hash", "c_hash", "auth_time", "sid", "jti"}
        return {**{k: v for k, v in payload.items() if k not in protocol}, **userinfo}

    def verify_claims(self, claims):
        if not claims.get("email"):
            raise SignOnRefused("email", "the provider sent no email claim")
        if claims.get("email_verified") is False:
            raise SignOnRefused("email", f"the provider says {claims['email']!r} is not verified")
        return True

    def filter_users_by_claims(self, claims):
        users = super().filter_users_by_claims(claims)
        if len(users) > 1:
            raise SignOnRefused("ambiguous", f"{len(users)} users have the email address {claims['email']!r}")
        return users

    def create_user(self, claims):
        with transaction.atomic():
            user = self.UserModel.objects.create_user(
                unique_username(claims),
                email=claims["email"],
                first_name=str(claims.get("given_name") or "")[:150],
                last_name=str(claims.get("family_name") or "")[:150],
            )
            # Signs in through the provider only, until someone sets a password by hand.
            user.set_unusable_password()
            user.save(update_fields=["password"])
            roles_sync(user=user, groups=claimed_groups(claims))
        log.info("single sign-on made user %s (%s)", user.username, claims["email"])
        return user

    def update_user(self, user, claims):
        if not user.is_active:
            raise SignOnRefused("inactive", f"user {user.username!r} is inactive")
        changed = []
        for field, claim in (("email", "email"), ("first_name", "given_name"), ("last_name", "family_name")):
            value = str(claims.get(claim) or "")[:150]
            if claim in claims and getattr(user, field) != value:
                setattr(user, field, value)
                changed.append(field)
        with transaction.atomic():
            if changed:
                user.save(update_fields=changed)
            roles_sync(user=user, groups=claimed_groups(claims))
        return user


# --- the views -----------------------------------------------------------------------


class SignOnStartView(OIDCAuthenticationRequestView):
    """/oidc/authenticate/: off (404) while single sign-on is; forgets an earlier failure."""

    def get(self, request):
        if not settings.SSO_ENABLED:
            raise Http404("single sign-on is off")
        request.session.pop(FAILURE_KEY, None)
        return super().get(request)


class SignOnCallbackView(OIDCAuthenticationCallbackView):
    """/oidc/callback/: the provider's answer; every failure leaves its reason in the session."""

    def get(self, request):
        if not settings.SSO_ENABLED:
            raise Http404("single sign-on is off")
        error = request.GET.get("error")
        if error:
            description = request.GET.get("error_description", "")
            reason = "denied" if error in ("access_denied", "consent_required", "login_required", "interaction_required") else "provider"
            _remember(request, reason, f"the provider answered {error}" + (f": {description}" if description else ""))
        elif "code" in request.GET and "state" in request.GET:
            if request.GET["state"] not in request.session.get("oidc_states", {}):
                _remember(request, "state", "the callback's state is not in this session")
                return self.login_failure()
        return super().get(request)

    def login_failure(self):
        if FAILURE_KEY not in self.request.session:
            _remember(self.request, "unknown")
        return super().login_failure()


def sso_failed(request: HttpRequest) -> HttpResponse:
    """The page a refused sign-in lands on: what went wrong, what to tell the admin."""
    failure = request.session.get(FAILURE_KEY) or {"reason": "unknown", "detail": ""}
    reason = failure["reason"] if failure["reason"] in FAILURES else "unknown"
    headline, explanation, for_admin = FAILURES[reason]
    context = {
        "headline": headline,
        "explanation": explanation,
        "for_admin": for_admin,
        "reason": reason,
        "detail": failure.get("detail", ""),
        "provider": settings.OIDC_PROVIDER_NAME,
    }
    return render(request, "registration/sso_failed.html", context, status=403 if FAILURE_KEY in request.session else 200)
