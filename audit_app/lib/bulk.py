"""Inserting many rows fast: COPY on PostgreSQL, `bulk_create` elsewhere.

Landing an ingest writes thousands of rollups in one transaction, and it is the one step of a
fanned-out ingest that no second worker can share. Django's `bulk_create` on PostgreSQL sends
each column as an array parameter, which psycopg quotes on the client and PostgreSQL parses back
(about 1.5 s for the 2,470 hourly rollups of a 3M-row log); `COPY ... (FORMAT BINARY)` sends the
same rows in PostgreSQL's own binary form (bytea as raw bytes, numbers as numbers) in about a
tenth of that.

Rows are dicts of field values by attribute name (`upload_id`, not `upload`), as `Model(**row)`
takes them, so no model instance is built per row; a missing field takes its default (auto_now
fields are not stamped: pass their value). Values
of plain fields (text, numbers, booleans, dates, foreign keys) go to the database as they are,
so they must already have the field's type; the other fields (JSON, bytes, date-times) go
through the field's own `get_db_prep_save`, as a save would. Like `bulk_create`: no `save()`,
no signals, no primary keys returned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

from django.db import connections, models
from django.db.backends.base.base import BaseDatabaseWrapper

# Fields whose `get_db_prep_save` returns a value of the right Python type unchanged (a
# DateTimeField is a DateField but checks time zones, so it is prepared like JSON and bytes).
_AS_IS = (
    models.CharField,
    models.IntegerField,
    models.BooleanField,
    models.DecimalField,
    models.ForeignKey,
)


def insert_all(
    model: type[models.Model],
    rows: Iterable[Mapping[str, Any]],
    *,
    using: str = "default",
    batch_size: int = 2000,
) -> int:
    """Insert every row in as few round trips as the database allows and return how many
    were written. Call inside the caller's transaction: COPY takes part in it."""
    connection = connections[using]
    rows = list(rows)
    if not rows:
        return 0
    if connection.vendor != "postgresql":
        model._default_manager.using(using).bulk_create(
            [model(**row) for row in rows], batch_size=batch_size
        )
        return len(rows)
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    unknown = set().union(*rows) - {f.attname for f in fields}
    if unknown:
        raise TypeError(f"{model.__name__} has no field {sorted(unknown)[0]!r}")
    # A concrete field always has a column; the stubs allow None for the others.
    columns = ", ".join(connection.ops.quote_name(cast(str, f.column)) for f in fields)
    # psycopg names types without their modifiers: varchar(200) -> varchar, numeric(24, 9) ->
    # numeric; the server checks lengths and precision as it does for INSERT.
    types = [str(f.db_type(connection)).split("(")[0].strip() for f in fields]
    getters = [_getter(f, connection) for f in fields]
    table = connection.ops.quote_name(model._meta.db_table)
    # Django's error wrapper: psycopg's errors surface as django.db's (OperationalError makes
    # the ingest task retry, DataError names the bad value), as they do for bulk_create.
    with connection.cursor() as cursor, connection.wrap_database_errors:
        raw = cursor.cursor  # the psycopg cursor under Django's wrapper
        with raw.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row([get(row) for get in getters])
    return len(rows)


def _getter(
    field: models.Field, connection: BaseDatabaseWrapper
) -> Callable[[Mapping[str, Any]], Any]:
    name = field.attname
    default = field.get_default()  # what `Model(**row)` would hold for a missing field
    if isinstance(field, _AS_IS) and not isinstance(field, models.DateTimeField):
        return lambda row: row.get(name, default)
    return lambda row: field.get_db_prep_save(row.get(name, default), connection)
