"""`{% set_nav %}`: the golden-set menu that base.html shows on every page of a set.

It shows only the pages the user's role can open (goldset.navigation) and marks the one
the request is on. The user's roles in the set are those the view's access check read
(goldenset.selectors.user_roles remembers them), so the menu costs no query.
"""

from django import template
from django.urls import reverse

from goldenset.selectors import user_roles
from goldset.navigation import pages_for

register = template.Library()


@register.inclusion_tag("goldset/_set_nav.html", takes_context=True)
def set_nav(context) -> dict:
    request, golden_set = context["request"], context["golden_set"]
    user = request.user
    here = request.resolver_match.url_name if request.resolver_match else None
    roles = set() if user.is_staff else user_roles(user, golden_set)  # read by the view's access check already
    entries = [
        {"label": page.label, "href": reverse(page.url_name, args=[golden_set.slug]), "current": here in (page.url_name, *page.also)}
        for page in pages_for(roles, staff=user.is_staff)
    ]
    return {"golden_set": golden_set, "entries": entries}
