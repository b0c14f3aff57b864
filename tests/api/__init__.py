"""Helpers of the API tests: the data they share, a client with a token, the error shape."""

from rest_framework.test import APIClient

from tests.support import factories

SLUG = "tiny"
# Ids as the field has them: '#', '/', ':' and non-ASCII letters must survive every format.
QRELS = {
    ("q1", "d1"): 2,
    ("q1", "d2"): 0,
    ("q1", "CR93E-3103#37"): 3,
    ("q/2:ü", "d3"): 1,
    ("q/2:ü", "d:ü/4"): 2,
    ("q3", "d5"): 0,
}
RUN = "q1 Q0 d1 1 3.0 sys\nq1 Q0 d2 2 2.0 sys\nq/2:ü Q0 d3 1 5.0 sys\nq/2:ü Q0 d5 2 1.0 sys\nq3 Q0 d5 1 1.0 sys\n"


def make_set(slug: str, manager):
    pages = factories.pages("d1", "d2", "d3", "d5", kind="doc") + factories.pages("CR93E-3103#37", "d:ü/4", kind="faq")
    queries = factories.queries("q1", "q3", lang="en") + factories.queries("q/2:ü", lang="de")
    return factories.golden_set(
        slug,
        manager=manager,
        qrels=QRELS,
        pages=pages,
        queries=queries,
        query_slice_fields=["lang"],
        page_slice_fields=["kind"],
        k_first=10,
        k_final=2,
    )


def client_for(secret: str | None = None) -> APIClient:
    client = APIClient()
    if secret is not None:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


def assert_error(response, status: int, code: str | None = None) -> dict:
    """The response has `status` and the API's one error shape; returns its error object."""
    assert response.status_code == status, (response.status_code, getattr(response, "content", b"")[:500])
    body = response.json()
    assert set(body) == {"error"}
    error = body["error"]
    assert set(error) == {"code", "message", "problems", "field"}
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["problems"], list)
    if code is not None:
        assert error["code"] == code, error
    return error
