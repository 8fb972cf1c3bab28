"""The control socket's codec, both ways: every event type, the snapshot, every answer and every command come back
equal from a JSON line (what a console attached over the socket reads is what the engine said; what the run applies
is what the client sent), and what is not a message of the protocol is refused, never half-built."""

from __future__ import annotations

import json
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om2w_tui.engine import events
from om2w_tui.engine.results import STATUSES, EpisodeRecord
from om2w_tui.engine.wire import MESSAGES, Message, StatusReply, line, read
from om2w_tui.protocol import control
from om2w_tui.protocol.codec import CodecError
from om2w_tui.protocol.control import COMMANDS, BadRequest, read_request, request_line

text = st.text(max_size=12)
floats = st.floats(allow_nan=False, allow_infinity=False)
records = st.builds(
    EpisodeRecord, task_id=text, arm=text, website=text, level=st.none() | text, status=st.sampled_from(STATUSES),
    error=st.none() | text, steps=st.integers(0, 99), duration_s=floats, answer=text, agent_done=st.booleans(),
    attempt=st.integers(1, 9), slot=st.none() | st.integers(0, 9), correct=st.none() | st.booleans(),
    extra=st.dictionaries(st.sampled_from(["seed_key", "note"]), st.integers() | text, max_size=2))
st.register_type_strategy(EpisodeRecord, records)   # its own to_json/from_json carry it; no test builds it otherwise

EVENT_TYPES = typing.get_args(events.Event)
MESSAGE_TYPES = typing.get_args(Message)
COMMAND_TYPES = typing.get_args(control.Command)


@pytest.mark.parametrize("cls", MESSAGE_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_message_the_run_sends_round_trips(cls, data):
    obj = data.draw(st.from_type(cls))
    sent = line(obj)
    back = MESSAGES.decode(json.loads(sent))   # json's own reader: `read`'s one decoder refuses NaN, none is sent
    assert type(back) is cls and line(back) == sent
    if b"NaN" not in sent:   # NaN is never equal to itself; its JSON is
        assert back == obj
    if isinstance(obj, events.EpisodeFinished):   # extra is not compared by ==; it travels all the same
        assert back.record.extra == obj.record.extra


@pytest.mark.parametrize("cls", COMMAND_TYPES, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data(), ident=st.none() | st.integers(0, 2**40))
def test_every_command_round_trips(cls, data, ident):
    command = data.draw(st.from_type(cls))
    got = read_request(json.loads(request_line(command, ident)))
    assert got.command == command and type(got.command) is cls and got.id == ident


def test_every_event_type_and_every_answer_is_on_the_wire_under_its_name():
    assert set(MESSAGE_TYPES) == {*EVENT_TYPES, events.RunSnapshot, control.Done, control.Refused,
                                  control.Subscribed, StatusReply}
    assert all(MESSAGES.types[cls.__name__] is cls for cls in MESSAGE_TYPES)


def test_every_command_is_named_by_its_ctl_verb():
    assert list(COMMANDS.types) == ["status", "subscribe", "pause", "resume", "kill", "requeue", "workers", "retry",
                                    "stop"]


def test_a_snapshot_keeps_its_nested_types():
    snap = events.RunSnapshot(now=5.0, slots=[events.SlotRow(0, "running", "t1", "a.com", step=3)],
                              sites=[events.SiteRow("a.com", "cooling", ready_at=9.5)],
                              pacing=events.Pacing(1, 120.0), summary=events.RunSummary(total=3, by_status={"done": 1}))
    back = read(line(snap))
    assert isinstance(back, events.RunSnapshot)
    assert isinstance(back.slots[0], events.SlotRow) and isinstance(back.pacing, events.Pacing)
    assert back.running == 1 and back.summary.by_status == {"done": 1}
    assert json.loads(line(snap))["type"] == "RunSnapshot"


@pytest.mark.parametrize("bad", [[], {"type": "Nope"}, {"type": "Log", "level": "info"},
                                 {"type": "Log", "level": "info", "message": "m", "extra": 1},
                                 {"type": "RunSnapshot", "pacing": [1, 2]},
                                 {"type": "SlotChanged", "slot": 0, "state": "dancing"},
                                 {"type": "SlotChanged", "slot": True, "state": "idle"},
                                 {"type": "Done", "message": "m", "id": "3"}])
def test_what_is_not_a_message_is_refused(bad):
    with pytest.raises(CodecError):
        read(json.dumps(bad))


@pytest.mark.parametrize("bad, says", [
    ([], "expected a JSON object"), ({"cmd": "nope"}, "unknown command 'nope' (known: status, subscribe"),
    ({"cmd": "workers"}, "workers: Workers: missing fields ['n']"), ({"cmd": "stop", "force": "yes"}, "expected bool"),
    ({"cmd": "status", "id": 1.5}, "id: expected a whole number"), ({"cmd": "kill", "slot": "0"}, "expected int")])
def test_what_is_not_a_command_is_refused_saying_why(bad, says):
    with pytest.raises(BadRequest) as e:
        read_request(bad)
    assert says in str(e.value)


def test_only_messages_of_the_protocol_are_sent():
    with pytest.raises(CodecError):
        line(events.SlotRow(0, "idle"))   # a part of a snapshot, never a message of its own
