"""How a batch job turns each input record into the instance the model gets, as Vertex AI
batch prediction's ``instanceConfig`` does: an instance type, a key field, and fields
included or excluded.

- ``instance_type``: ``object`` sends every record as an object (a JSON line must be one);
  ``array`` sends it as a list of values (a JSON line that is an object needs
  ``included_fields`` to order them); unset, a JSON line goes as it is and a table's row as
  a list of its values in the columns' order.
- ``key_field``: the field that names a record; it is left out of the instance, and the
  output line carries ``"key"`` (its value) in place of ``"instance"``.
- ``included_fields`` (in this order, for an array) or ``excluded_fields`` (never both):
  the fields the model gets. The output line's ``instance`` is the record as read, excluded
  fields included.

A record these rules cannot shape (a JSON line that is not an object, a missing field) gets
an error line of its own; it never stops the job.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import codecs
from ..errors import InvalidInput
from .reading import ARRAY, OBJECT


@dataclass(frozen=True)
class InstanceConfig:
    """Vertex AI's ``instanceConfig`` for a batch job (every field optional)."""

    instance_type: str | None = None
    key_field: str | None = None
    included_fields: tuple[str, ...] = ()
    excluded_fields: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.instance_type not in (None, ARRAY, OBJECT):
            raise ValueError(f"instance type must be {ARRAY!r} or {OBJECT!r}, "
                             f"not {self.instance_type!r}")
        if self.included_fields and self.excluded_fields:
            raise ValueError("included fields and excluded fields cannot both be given")
        if self.key_field is not None and self.key_field in self.included_fields:
            raise ValueError(f"the key field {self.key_field!r} cannot also be an included "
                             "field: the key is never sent to the model")
        if self.key_field == "":
            raise ValueError("the key field needs a name")

    @property
    def shapes_records(self) -> bool:
        """Whether records are reshaped at all (otherwise each goes to the model as read)."""
        return self.instance_type is not None or self.names_fields

    @property
    def names_fields(self) -> bool:
        """Whether a record must be an object: a key or fields are named."""
        return bool(self.key_field is not None or self.included_fields
                    or self.excluded_fields)

    def table_type(self) -> str:
        """How a table's row is read: an object when fields are named, so that they can be
        picked; else the instance type (an array unless an object is asked for)."""
        return OBJECT if self.names_fields else (self.instance_type or ARRAY)

    def label(self, record: Any) -> tuple[str, Any]:
        """What the output line names the record by: ``("key", value)`` with a key field
        the record has, else ``("instance", record)`` (a record without its key is named by
        itself on its error line)."""
        if isinstance(record, dict) and self.key_field in record:
            return "key", record.get(self.key_field)
        return "instance", record

    def instance(self, record: Any, *, table: bool = False) -> Any:
        """The instance sent to the model for *record* (a JSON line's value, or a table's
        row read as :meth:`table_type` says; *table*: an array by default).

        :raises InvalidInput: the record cannot be shaped so.
        """
        if not isinstance(record, dict):
            if self.names_fields or self.instance_type == OBJECT:
                raise InvalidInput(f"the record must be a JSON object to {self._why()}, "
                                   f"not {codecs.json_kind(record)}")
            return record
        if self.key_field is not None and self.key_field not in record:
            raise InvalidInput(f"the record has no key field {self.key_field!r}")
        if self.included_fields:
            missing = [name for name in self.included_fields if name not in record]
            if missing:
                raise InvalidInput(f"the record has no field {missing[0]!r} "
                                   "(an included field)")
            names = list(self.included_fields)
        else:
            left_out = set(self.excluded_fields)
            if self.key_field is not None:
                left_out.add(self.key_field)
            names = [name for name in record if name not in left_out]
        as_array = self.instance_type == ARRAY or (table and self.instance_type is None)
        if as_array and not table and not self.included_fields:
            raise InvalidInput("a JSON object line is sent as an array only with "
                               "--included-fields, which orders its values")
        if as_array:
            return [record[name] for name in names]
        return {name: record[name] for name in names}

    def _why(self) -> str:
        if self.key_field is not None:
            return f"read its key field {self.key_field!r}"
        if self.names_fields:
            return "pick its fields"
        return "be sent as an object"

