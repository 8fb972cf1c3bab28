"""What a run sends on its control socket (`engine/control_socket.py`), as one tagged union through the one codec
(`protocol/codec.py`): the protocol's answers (`protocol/control.py`: `Done`, `Refused`, `Subscribed`), a status
answer with the run's snapshot (`StatusReply`), and, after `subscribe`, the engine's events and snapshots
themselves. The `Event` union of `engine/events.py` is the vocabulary: each type travels under its class name,
`{"type": "EpisodeStep", ...its fields}`, so an event declared there is on the wire with nothing to add here.

Nested values follow their fields' declared types (a snapshot's slot rows, its summary); an `EpisodeRecord`
travels as the line it writes to results.jsonl. A line is read through the one JSON decoder (`json_input`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import get_args

from om2w_tui.engine.events import Event, RunSnapshot
from om2w_tui.json_input import InputError, decode
from om2w_tui.protocol.codec import CodecError, Tagged
from om2w_tui.protocol.control import Done, Refused, RunInfo, Subscribed


@dataclass(frozen=True)
class StatusReply:
    """The answer to `status`: the run's facts and its snapshot now."""
    run: RunInfo
    snapshot: RunSnapshot
    id: int | None = None


Answer = Done | Refused | StatusReply    # what `request` returns
Message = Answer | Subscribed | RunSnapshot | Event
MESSAGES: Tagged[Message] = Tagged("type", {cls.__name__: cls for cls in get_args(Message)})


def line(msg: Message) -> bytes:
    """One message as its JSON line."""
    return MESSAGES.line(msg)


def read(data: bytes | str, where: str = "the run's line") -> Message:
    """The message one line holds; raises CodecError (a line the decoder refused says why, naming `where`)."""
    try:
        value = decode(data, where)
    except InputError as e:
        raise CodecError(f"not a JSON line ({e})") from None
    return MESSAGES.decode(value)
