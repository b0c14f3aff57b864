"""Model instances from the rows of a hand-written SELECT.

A few statements run on every request of the judging screen, and for them the ORM's
cost of building and compiling a queryset (a few milliseconds of CPU each, several
times what the database spends) is most of the request. Those are written as SQL and
executed with a cursor; this turns their rows back into model instances exactly as the
ORM would: every concrete field, in `_meta.concrete_fields` order, through the same
converters the ORM applies (SQLite's timestamps become aware datetimes, for one).
"""

from collections.abc import Sequence

from django.db import connection
from django.db.models import Model

# (model, vendor) -> [(position, converters, column expression)]
_CONVERTERS: dict[tuple[type[Model], str], list] = {}
# (model, alias, vendor) -> columns(): the hand-written statements run on every request.
_COLUMNS: dict[tuple[type[Model], str, str], str] = {}


def columns(model: type[Model], alias: str) -> str:
    """The SELECT list of every concrete field of `model`, table `alias`, in the order
    model_from_row reads them."""
    key = (model, alias, connection.vendor)
    if key not in _COLUMNS:
        quote = connection.ops.quote_name
        _COLUMNS[key] = ", ".join(f"{alias}.{quote(field.column)}" for field in model._meta.concrete_fields)
    return _COLUMNS[key]


def width(model: type[Model]) -> int:
    """How many columns `columns(model, ...)` selects."""
    return len(model._meta.concrete_fields)


def _converters(model: type[Model]) -> list:
    key = (model, connection.vendor)
    if key not in _CONVERTERS:
        found = []
        for position, field in enumerate(model._meta.concrete_fields):
            column = field.get_col(model._meta.db_table)
            converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
            if converters:
                found.append((position, converters, column))
        _CONVERTERS[key] = found
    return _CONVERTERS[key]


def model_from_row(model: type[Model], row: Sequence, start: int = 0) -> Model:
    """The instance of `model` whose fields are row[start : start + width(model)], as
    selected by `columns(model, ...)`."""
    values = list(row[start : start + width(model)])
    for position, converters, column in _converters(model):
        value = values[position]
        for converter in converters:
            value = converter(value, column, connection)
        values[position] = value
    return model.from_db(connection.alias, None, values)


def converted(model: type[Model], name: str, values: Sequence) -> list:
    """`values` of the field `name` of `model`, selected by hand, as the ORM reads them."""
    field = model._meta.get_field(name)
    column = field.get_col(model._meta.db_table)
    converters = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
    out = list(values)
    if converters:
        for i, value in enumerate(out):
            for converter in converters:
                value = converter(value, column, connection)
            out[i] = value
    return out
