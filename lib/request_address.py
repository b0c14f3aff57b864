"""The address of the request being served, for the audit trail (goldenset.audit): the
project's request middleware (goldset.logs) sets it, so services need no request argument.
None outside a request (a command, a task)."""

import contextvars

request_ip: contextvars.ContextVar[str | None] = contextvars.ContextVar("goldset_request_ip", default=None)  # noqa: B039
