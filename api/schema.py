"""What the OpenAPI schema says beyond what drf-spectacular reads from the views: the one
error shape, on every operation, for every status the API answers with."""

ERROR_COMPONENT = "Error"
ERROR_SCHEMA = {
    "type": "object",
    "description": "Every failure of the API has this shape.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "description": "machine-readable: invalid, not_found, permission_denied, ..."},
                "message": {"type": "string", "description": "a sentence for a person"},
                "problems": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "every fault found, each naming its line, item or field (e.g. run.txt:12: ...)",
                },
                "field": {"type": "string", "nullable": True, "description": "the request field at fault, if one is"},
            },
            "required": ["code", "message", "problems", "field"],
        }
    },
    "required": ["error"],
}
ERROR_DESCRIPTIONS = {
    "400": "bad input: the message and problems name the line, item or field at fault",
    "401": "no credentials, or an unknown, expired or revoked token",
    "403": "the token's scope or the user's role does not allow this",
    "404": "no such golden set, version, run or path (or one the token may not see)",
    "405": "method not allowed",
    "406": "no representation matches the Accept header",
    "409": "the version no longer matches its content hash (version_damaged): its qrels are withheld",
    "415": "unsupported Content-Type",
    "429": "too many requests from this client (throttled): Retry-After says how many seconds to wait",
}
# Statuses any operation may answer with; 415 only where a request has a body.
EVERY_OPERATION = ("400", "401", "403", "404", "405", "406", "429")
# Operations that read a version's labels re-check its content hash first.
HASH_CHECKED_OPERATIONS = {"versions_qrels"}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    reference = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            statuses = EVERY_OPERATION + (("415",) if "requestBody" in operation else ())
            statuses += ("409",) if operation.get("operationId") in HASH_CHECKED_OPERATIONS else ()
            responses = operation.setdefault("responses", {})
            for status in statuses:
                responses.setdefault(
                    status, {"description": ERROR_DESCRIPTIONS[status], "content": {"application/json": {"schema": reference}}}
                )
    return result
