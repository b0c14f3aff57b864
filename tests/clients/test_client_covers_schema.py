"""The client covers the API: every operation of the server's OpenAPI schema has a client
method (goldset_client.operations.OPERATIONS, checked both ways), and each method's TypedDict
answer has the fields the schema gives that response: every required one, none it lacks,
nested TypedDicts checked against their own components. A field added to or dropped from the
API fails here until the client's types follow."""

import types
import typing

import pytest

from goldset_client import GoldsetClient
from goldset_client.operations import OPERATIONS

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def schema(django_db_blocker) -> dict:
    from django.test import Client

    with django_db_blocker.unblock():
        response = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def operations(schema: dict) -> dict[str, dict]:
    return {
        operation["operationId"]: operation
        for path_item in schema["paths"].values()
        for method, operation in path_item.items()
        if method != "parameters"
    }


def test_every_operation_of_the_schema_has_a_client_method(schema):
    missing = sorted(set(operations(schema)) - set(OPERATIONS))
    assert not missing, f"operations with no client method (add one and a row to goldset_client.operations): {missing}"


def test_every_row_of_the_table_is_an_operation_and_a_method(schema):
    gone = sorted(set(OPERATIONS) - set(operations(schema)))
    assert not gone, f"rows for operations the API no longer has: {gone}"
    not_methods = sorted(name for name in OPERATIONS.values() if not callable(getattr(GoldsetClient, name, None)))
    assert not not_methods, not_methods
    assert len(set(OPERATIONS.values())) == len(OPERATIONS), "one method per operation"


def resolve(schema: dict, node: dict) -> dict:
    """A schema node with $ref, a single allOf and a nullable oneOf [X, null] taken away."""
    while True:
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].split("/")[-1]]
        elif len(node.get("allOf", [])) == 1:
            node = node["allOf"][0]
        elif "oneOf" in node:
            kept = [n for n in node["oneOf"] if not n.get("$ref", "").endswith("/NullEnum") and n.get("type") != "null"]
            if len(kept) != 1:
                return node
            node = kept[0]
        else:
            return node


def unwrap(hint: typing.Any) -> typing.Any:
    """X from list[X], X | None, NotRequired[X], dict[str, X]: the TypedDict a field holds, if any."""
    while True:
        origin = typing.get_origin(hint)
        if origin in (typing.Union, types.UnionType):
            kept = [a for a in typing.get_args(hint) if a is not type(None)]
            if len(kept) != 1:
                return hint
            hint = kept[0]
        elif origin in (list, typing.NotRequired, typing.Required):
            hint = typing.get_args(hint)[0]
        elif origin is dict:
            hint = typing.get_args(hint)[1]
        else:
            return hint


def items(schema: dict, node: dict) -> dict:
    """The schema of one item of a list answer: a paged list's results, or an array's items."""
    node = resolve(schema, node)
    if node.get("type") == "array":
        return resolve(schema, node["items"])
    if "results" in node.get("properties", {}):
        return resolve(schema, node["properties"]["results"]["items"])
    return node


def mismatches(schema: dict, typed: type, node: dict, where: str, seen: set) -> list[str]:
    """Where TypedDict `typed` and the object schema `node` disagree, recursively."""
    if (typed, id(node)) in seen or "properties" not in node:
        return []
    seen.add((typed, id(node)))
    fields = set(node["properties"])
    keys = set(typed.__annotations__) | set(getattr(typed, "__required_keys__", ())) | set(getattr(typed, "__optional_keys__", ()))
    found = [f"{where}: {typed.__name__} has {key!r}, the schema has not" for key in sorted(keys - fields)]
    found += [f"{where}: {typed.__name__} lacks the schema's required {key!r}" for key in sorted(set(node.get("required", [])) - keys)]
    hints = typing.get_type_hints(typed, include_extras=True)
    for key in sorted(keys & fields):
        inner = unwrap(hints[key])
        if typing.is_typeddict(inner):
            child = resolve(schema, node["properties"][key])
            if child.get("type") == "array":
                child = resolve(schema, child["items"])
            elif isinstance(child.get("additionalProperties"), dict):
                child = resolve(schema, child["additionalProperties"])
            found += mismatches(schema, inner, child, f"{where}.{key}", seen)
    return found


def answer_schema(operation: dict) -> dict | None:
    for status in ("200", "201", "202"):
        content = operation["responses"].get(status, {}).get("content", {})
        if "application/json" in content:
            return content["application/json"]["schema"]
    return None


def test_each_methods_typed_answer_has_the_schemas_fields(schema):
    found, checked = [], []
    for operation_id, operation in operations(schema).items():
        method = getattr(GoldsetClient, OPERATIONS.get(operation_id, ""), None)
        answer = answer_schema(operation)
        if method is None or answer is None:
            continue
        returns = typing.get_type_hints(method)["return"]
        typed = unwrap(returns)
        if not typing.is_typeddict(typed):
            continue  # an answer the client leaves as dict[str, Any] or turns into its own object (Qrels)
        node = items(schema, answer) if typing.get_origin(returns) is list else resolve(schema, answer)
        found += mismatches(schema, typed, node, operation_id, set())
        checked.append(operation_id)
    assert not found, "\n".join(found)
    # Most answers are typed; the few left as dicts are named in the client's README.
    assert len(checked) >= 48, sorted(set(operations(schema)) - set(checked))
