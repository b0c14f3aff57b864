"""One pagination for every list of the API: ?limit=&offset=, with the total count."""

from rest_framework import pagination
from rest_framework.exceptions import ValidationError


class LimitOffsetPagination(pagination.LimitOffsetPagination):
    """Lists answer {"count", "next", "previous", "results"}. A limit or offset that is
    not a whole number in range is refused (400, naming it), as the schema says, rather
    than silently replaced by the default; an offset past the end gives an empty page."""

    default_limit = 100
    max_limit = 1000

    def get_limit(self, request):
        return self._parameter(request, self.limit_query_param, self.default_limit, minimum=1, maximum=self.max_limit)

    def get_offset(self, request):
        return self._parameter(request, self.offset_query_param, 0, minimum=0, maximum=None)

    def get_schema_operation_parameters(self, view):
        parameters = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            bounds = {"minimum": 1, "maximum": self.max_limit} if parameter["name"] == self.limit_query_param else {"minimum": 0}
            parameter["schema"] = {**parameter["schema"], **bounds}
        return parameters

    @staticmethod
    def _parameter(request, name: str, default: int, *, minimum: int, maximum: int | None) -> int:
        values = request.query_params.getlist(name)
        if not values:
            return default
        if len(values) > 1:
            raise ValidationError({name: [f"give {name} once, not {len(values)} times"]})
        raw = values[0]
        if not raw.isascii() or not raw.isdigit():
            raise ValidationError({name: [f"{raw[:40]!r} is not a whole number"]})
        value = int(raw)
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f"at least {minimum}"
            raise ValidationError({name: [f"{value} is out of range: {name} is {bounds}"]})
        return value


class PaginatedMixin:
    """For an APIView that lists: `self.paginated(rows, serialize)` answers one page.
    `pagination_class` on the view is also what tells drf-spectacular the list is paged."""

    pagination_class = LimitOffsetPagination

    def paginated(self, rows, serialize):
        """`rows` is a queryset or a list; `serialize(page)` turns the page's rows into data."""
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(rows, self.request, view=self)
        return paginator.get_paginated_response(serialize(page))
