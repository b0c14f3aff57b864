"""One pagination for every list of the API: ?limit=&offset=, with the total count."""

from rest_framework import pagination


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    """Lists answer {"count", "next", "previous", "results"}. A malformed limit or offset
    falls back to the default rather than failing, and an offset past the end gives an
    empty page (DRF's behaviour)."""

    default_limit = 100
    max_limit = 1000


class PaginatedMixin:
    """For an APIView that lists: `self.paginated(rows, serialize)` answers one page.
    `pagination_class` on the view is also what tells drf-spectacular the list is paged."""

    pagination_class = LimitOffsetPagination

    def paginated(self, rows, serialize):
        """`rows` is a queryset or a list; `serialize(page)` turns the page's rows into data."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, self.request, view=self)
        return paginator.get_paginated_response(serialize(page))
