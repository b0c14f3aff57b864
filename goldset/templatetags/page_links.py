"""`link_url`: a page's URL as an href only when it is http(s) (lib.sanitize.link_url); every
template that links to a page's source goes through it."""

from django import template

from lib.sanitize import link_url as _link_url

register = template.Library()


@register.filter
def link_url(url: str | None) -> str:
    return _link_url(url)
