"""What every dataclass of types.py is built from the dashboard's JSON with: ``JsonRecord.from_json``."""
from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, ClassVar, TypeVar, Union

T = TypeVar("T", bound="JsonRecord")


def _value(tp: Any, v: Any) -> Any:
    """``v`` (parsed JSON) as the type ``tp`` says: dataclasses, lists, tuples and optionals of them."""
    if v is None:
        return None
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return _value(next(a for a in args if a is not type(None)), v)
    if origin is list:
        return [_value(args[0], x) for x in v]
    if origin is tuple:
        return tuple(_value(a, x) for a, x in zip(args, v))
    if origin is None and isinstance(tp, type) and issubclass(tp, JsonRecord):
        return tp.from_json(v)
    return v


@functools.cache
def _fields(cls: type) -> dict[str, Any]:
    """A dataclass's fields with their types."""
    hints = typing.get_type_hints(cls)
    return {f.name: hints[f.name] for f in dataclasses.fields(cls)}


class JsonRecord:
    """Built from the JSON by its field names; a field the JSON lacks is None."""

    #: Fields named in the JSON by the run's metric: field -> the JSON key's prefix ("val" <- "val_accuracy").
    _metric: ClassVar[dict[str, str]] = {}

    @classmethod
    def from_json(cls: type[T], d: dict[str, Any]) -> T:
        hints = _fields(cls)
        names = hints.keys()
        values = {name: _value(tp, d.get(name)) for name, tp in hints.items() if name not in cls._metric}
        for name, prefix in cls._metric.items():
            values[name] = next((v for k, v in d.items() if k.startswith(prefix) and k not in names), None)
        return cls(**values)
