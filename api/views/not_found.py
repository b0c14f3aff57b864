"""The answer to every /api/ path that no endpoint matches."""

from rest_framework import exceptions
from rest_framework.views import APIView


class ApiNotFound(APIView):
    """Every /api/ path that no endpoint matches, whatever the method, so that it too
    answers in the error shape (Django's own 404 page is HTML)."""

    authentication_classes: list = []
    permission_classes: list = []
    schema = None  # not an operation of the API

    def initial(self, request, *args, **kwargs):
        self.check_throttles(request)  # a scanner walking paths is throttled like any caller
        raise exceptions.NotFound(f"no API endpoint at {request.path}")
