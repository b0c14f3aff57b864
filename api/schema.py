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
    "400": "the request does not fit this schema: the message and problems name the field at fault",
    "401": "no credentials, or an unknown, expired or revoked token",
    "403": "the token's scope or the user's role does not allow this",
    "404": "no such golden set, version, run or path (or one the token may not see)",
    "405": "method not allowed",
    "406": "no representation matches the Accept header",
    "409": "a clash with what is stored (conflict: a name taken, nothing new to publish, a night of the endpoint already pending or running), or a version that no longer matches its content hash (version_damaged)",
    "415": "unsupported Content-Type",
    "422": "the request fits the schema but its content is refused: the problems name each line, item or id at fault",
    "429": "too many requests from this client (throttled): Retry-After says how many seconds to wait",
}
# Statuses any operation may answer with; 415 only where a request has a body.
EVERY_OPERATION = ("400", "401", "403", "404", "405", "406", "422", "429")
# Operations that can clash with what is stored: publishing (nothing new), uploading a run
# (its name taken), and reading a version's labels (its content hash re-checked first).
# The run lifecycle actions answer 409 for a change already made (archived twice); run now
# answers 409 while the endpoint's night is under way.
CONFLICT_OPERATIONS = {
    "versions_qrels",
    "versions_publish",
    "runs_upload",
    "runs_archive",
    "runs_unarchive",
    "runs_mark_complete",
    "runs_mark_partial",
    "endpoint_runs_create",
}


def add_error_responses(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    result.setdefault("components", {}).setdefault("schemas", {})[ERROR_COMPONENT] = ERROR_SCHEMA
    reference = {"$ref": f"#/components/schemas/{ERROR_COMPONENT}"}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            statuses = EVERY_OPERATION + (("415",) if "requestBody" in operation else ())
            statuses += ("409",) if operation.get("operationId") in CONFLICT_OPERATIONS else ()
            responses = operation.setdefault("responses", {})
            for status in statuses:
                responses.setdefault(
                    status, {"description": ERROR_DESCRIPTIONS[status], "content": {"application/json": {"schema": reference}}}
                )
    return result


# DRF's CharField refuses NUL characters (ProhibitNullCharactersValidator): the schema says so.
NO_NUL_PATTERN = "^[^\\x00]*$"


def forbid_nul_in_strings(result: dict, generator, request, public) -> dict:
    """drf-spectacular postprocessing hook: a string that a request sends through a
    serializer (query parameters, request bodies' properties) may not hold NUL."""

    def mark(schema: dict) -> None:
        if not isinstance(schema, dict):
            return
        if schema.get("type") == "string" and "format" not in schema and "pattern" not in schema and "enum" not in schema:
            schema["pattern"] = NO_NUL_PATTERN
        for key in ("items", "additionalProperties"):
            mark(schema.get(key))
        for child in schema.get("properties", {}).values():
            mark(child)

    for name, schema in result.get("components", {}).get("schemas", {}).items():
        if name.endswith("Request"):
            mark(schema)
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if isinstance(operation, dict):
                for parameter in operation.get("parameters", []):
                    if parameter.get("in") == "query":
                        mark(parameter.get("schema"))
    return result
