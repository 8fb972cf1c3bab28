"""The engine's events and snapshots as plain JSON values, for the control socket (`engine/control_socket.py`):
`to_wire(obj)` gives a dict tagged with its type's name, `from_wire(d)` the same typed value back. Nested values
follow their fields' declared types (a snapshot's slot rows, its summary); an `EpisodeRecord` travels as the line it
writes to results.jsonl (`to_json`/`from_json`)."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any

from om2w_tui.engine import events
from om2w_tui.engine.results import EpisodeRecord

# every type that crosses the wire at the top level, by its tag
WIRE_TYPES: dict[str, type] = {cls.__name__: cls for cls in (
    events.RunStarted, events.SlotChanged, events.EpisodeStarted, events.EpisodeStep, events.EpisodeModelCall,
    events.EpisodeFinished, events.EpisodePutBack, events.DispatchChanged, events.Log, events.RunFinished,
    events.RunSnapshot, events.RunSummary, events.SlotRow, events.SiteRow, events.Pacing, events.ModelStats,
    EpisodeRecord)}


class WireError(ValueError):
    """A message that is not a value of a known type (unknown tag, missing or unknown fields)."""


def to_wire(obj: Any) -> dict[str, Any]:
    """`obj` (an event, a snapshot, or one of their parts) as a JSON-ready dict with a "type" tag."""
    name = type(obj).__name__
    if WIRE_TYPES.get(name) is not type(obj):
        raise WireError(f"{name} does not travel on the wire")
    return {"type": name, **_fields(obj)}


def from_wire(data: Any) -> Any:
    """The typed value of a dict `to_wire` made; raises WireError on anything else."""
    if not isinstance(data, dict):
        raise WireError(f"expected an object, got {type(data).__name__}")
    name = data.get("type")
    cls = WIRE_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise WireError(f"unknown type {name!r}")
    return _build(cls, {k: v for k, v in data.items() if k != "type"})


def _fields(obj: Any) -> dict[str, Any]:
    if isinstance(obj, EpisodeRecord):
        return obj.to_json()
    return {f.name: _value(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def _value(v: Any) -> Any:
    if isinstance(v, EpisodeRecord):
        return v.to_json()
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return _fields(v)
    if isinstance(v, list | tuple):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _value(x) for k, x in v.items()}
    return v


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(cls: type, data: dict[str, Any]) -> Any:
    if cls is EpisodeRecord:
        return EpisodeRecord.from_json(data)
    hints = _hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names
    if unknown:
        raise WireError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
    try:
        return cls(**{k: _decode(hints[k], v) for k, v in data.items()})
    except TypeError as e:   # a required field missing
        raise WireError(f"{cls.__name__}: {e}") from None


def _decode(hint: Any, v: Any) -> Any:
    """`v` as the declared type `hint` wants it: dataclasses (and lists of them) are rebuilt, the rest is JSON."""
    if v is None:
        return None
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(v, dict):
            raise WireError(f"{hint.__name__}: expected an object, got {type(v).__name__}")
        return _build(hint, v)
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(hint) if a is not type(None)]
        return _decode(inner[0], v) if len(inner) == 1 else v
    if origin is list and isinstance(v, list):
        (item,) = typing.get_args(hint)
        return [_decode(item, x) for x in v]
    return v
