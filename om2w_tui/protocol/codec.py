"""The one codec for what crosses a process: dataclasses to JSON-ready values and back, following each field's
declared type (nested dataclasses, lists, dicts, Literals, enums by their value, optionals), so that both sides
hold typed values and only this module ever sees the dicts. A `Union` of tagged messages is read by its tag (`Tagged`).

Decoding checks what it builds: a missing or unknown field, a value of the wrong type (a bool is not an int, a
string outside its Literal) raises `CodecError`, never a half-built value."""

from __future__ import annotations

import dataclasses
import enum
import json
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any, Generic, Literal, TypeVar

T = TypeVar("T")


class CodecError(ValueError):
    """A value that is not what its type says (a message from another version, or not from us at all)."""


def to_json(obj: Any) -> Any:
    """A dataclass (or a value inside one) as plain JSON values, fields in their declared order."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if _own_codec(type(obj)):
            return obj.to_json()   # type: ignore[attr-defined]
        return {f.name: to_json(_as_declared(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, list | tuple):
        return [to_json(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_json(v) for k, v in obj.items()}
    if isinstance(obj, enum.Enum):
        return obj.value
    return obj


def _as_declared(obj: Any, name: str) -> Any:
    """A field's value, refused when it is a subclass of the dataclass its field declares (a whole `RunConfig` where
    a `ModelSettings` is declared): the other side would build the declared type and refuse the fields it lacks."""
    value = getattr(obj, name)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hint = _hints(typing.cast(type, type(obj)))[name]
        declared = [a for a in typing.get_args(hint) or (hint,) if isinstance(a, type) and dataclasses.is_dataclass(a)]
        if type(value) not in declared and any(isinstance(value, a) for a in declared):
            raise CodecError(f"{type(obj).__name__}.{name}: a {type(value).__name__} where its field declares "
                             f"{' | '.join(a.__name__ for a in declared)}: send that alone")
    return value


def _own_codec(cls: type) -> bool:
    """A dataclass with its own `to_json` and `from_json` (a results record: its line's layout is its own)."""
    return callable(getattr(cls, "to_json", None)) and callable(getattr(cls, "from_json", None))


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any, where: str = "") -> T:
    """The `cls` dataclass built from `data` (what `to_json` made); raises CodecError."""
    where = where or cls.__name__
    if not isinstance(data, dict):
        raise CodecError(f"{where}: expected an object, got {type(data).__name__}")
    if _own_codec(cls):
        return typing.cast(T, cls.from_json(data))   # type: ignore[attr-defined]
    hints = _hints(typing.cast(type, cls))
    fields = {f.name: f for f in dataclasses.fields(cls)}   # type: ignore[arg-type]
    unknown = set(data) - set(fields)
    if unknown:
        raise CodecError(f"{where}: unknown fields {sorted(unknown)}")
    values = {name: decode(hints[name], value, f"{where}.{name}") for name, value in data.items()}
    missing = [n for n, f in fields.items() if n not in values and f.init
               and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    if missing:
        raise CodecError(f"{where}: missing fields {missing}")
    return cls(**values)


def decode(hint: Any, value: Any, where: str) -> Any:
    """`value` as the declared type `hint` wants it."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return decode(arg, value, where)
            except CodecError as e:
                errors.append(str(e))
        raise CodecError(errors[0] if len(errors) == 1 else f"{where}: {value!r:.60} is none of {hint}")
    if origin is Literal:
        if value not in typing.get_args(hint):
            raise CodecError(f"{where}: {value!r:.60} is not one of {list(typing.get_args(hint))}")
        return value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return from_json(hint, value, where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        try:
            return hint(value)
        except ValueError:
            raise CodecError(f"{where}: {value!r:.60} is not one of {[m.value for m in hint]}") from None
    if origin in (list, tuple):
        if not isinstance(value, list):
            raise CodecError(f"{where}: expected a list, got {type(value).__name__}")
        args = typing.get_args(hint)
        item = args[0] if args else Any
        items = [decode(item, x, f"{where}[{i}]") for i, x in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise CodecError(f"{where}: expected an object, got {type(value).__name__}")
        _, item = typing.get_args(hint) or (str, Any)
        return {str(k): decode(item, v, f"{where}.{k}") for k, v in value.items()}
    return _primitive(hint, value, where)


def _primitive(hint: Any, value: Any, where: str) -> Any:
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if hint in (str, bool) and isinstance(value, hint):
        return value
    if hint is type(None) and value is None:
        return None
    if hint in (int, float, str, bool, type(None)):
        raise CodecError(f"{where}: expected {getattr(hint, '__name__', hint)}, got {type(value).__name__}")
    return value


class Tagged(Generic[T]):
    """A union of message types told apart by a tag field: `{"<key>": "<tag>", ...fields}` on the wire."""

    def __init__(self, key: str, types_by_tag: dict[str, type[Any]]):
        self.key = key
        self.types = dict(types_by_tag)
        self.tags = {cls: tag for tag, cls in self.types.items()}

    def encode(self, msg: T) -> dict[str, Any]:
        tag = self.tags.get(type(msg))
        if tag is None:
            raise CodecError(f"{type(msg).__name__} is not a message of this protocol")
        body = to_json(msg)
        return {self.key: tag, **body}

    def decode(self, data: Any) -> T:
        if not isinstance(data, dict):
            raise CodecError(f"expected an object, got {type(data).__name__}")
        tag = data.get(self.key)
        cls = self.types.get(tag) if isinstance(tag, str) else None
        if cls is None:
            raise CodecError(f"unknown {self.key} {tag!r:.40}")
        return typing.cast(T, from_json(cls, {k: v for k, v in data.items() if k != self.key}))

    def line(self, msg: T) -> bytes:
        """One JSON line. Text is arbitrary (model output): a lone surrogate goes out as its JSON escape."""
        text = json.dumps(self.encode(msg), ensure_ascii=False, default=str)
        return (text + "\n").encode("utf-8", "backslashreplace")

    def read(self, line: bytes | str, loads: Callable[[bytes | str], Any] = json.loads) -> T:
        """A message from one line; raises CodecError on anything else."""
        try:
            data = loads(line)
        except (ValueError, RecursionError) as e:
            raise CodecError(f"not a JSON line ({type(e).__name__})") from None
        return self.decode(data)
