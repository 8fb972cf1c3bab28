"""The wire codec of the control socket: every event type, the snapshot and their parts come back equal from a JSON
round trip (what a console attached over the socket reads is what the engine said)."""

from __future__ import annotations

import json
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from om2w_tui.engine import events
from om2w_tui.engine.results import STATUSES, EpisodeRecord
from om2w_tui.engine.wire import WIRE_TYPES, WireError, from_wire, to_wire

text = st.text(max_size=12)
floats = st.floats(allow_nan=False, allow_infinity=False)
records = st.builds(
    EpisodeRecord, task_id=text, arm=text, website=text, level=st.none() | text, status=st.sampled_from(STATUSES),
    error=st.none() | text, steps=st.integers(0, 99), duration_s=floats, answer=text, agent_done=st.booleans(),
    attempt=st.integers(1, 9), slot=st.none() | st.integers(0, 9), correct=st.none() | st.booleans(),
    extra=st.dictionaries(st.sampled_from(["seed_key", "note"]), st.integers() | text, max_size=2))
st.register_type_strategy(EpisodeRecord, records)   # its own to_json/from_json carry it; no test builds it otherwise

EVENT_TYPES = typing.get_args(events.Event)
ALL = [*EVENT_TYPES, events.RunSnapshot, events.RunSummary]


def over_json(obj: object) -> object:
    return from_wire(json.loads(json.dumps(to_wire(obj))))


@pytest.mark.parametrize("cls", ALL, ids=lambda c: c.__name__)
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_event_and_the_snapshot_round_trip(cls, data):
    obj = data.draw(st.from_type(cls))
    back = over_json(obj)
    sent = json.dumps(to_wire(obj))
    assert type(back) is cls and json.dumps(to_wire(back)) == sent
    if "NaN" not in sent:   # NaN is never equal to itself; its JSON is
        assert back == obj
    if isinstance(obj, events.EpisodeFinished):   # extra is not compared by ==; it travels all the same
        assert back.record.extra == obj.record.extra


def test_every_event_type_is_on_the_wire():
    assert {c.__name__ for c in EVENT_TYPES} <= set(WIRE_TYPES)


def test_a_snapshot_keeps_its_nested_types():
    snap = events.RunSnapshot(now=5.0, slots=[events.SlotRow(0, "running", "t1", "a.com", step=3)],
                              sites=[events.SiteRow("a.com", "cooling", ready_at=9.5)],
                              pacing=events.Pacing(1, 120.0), summary=events.RunSummary(total=3, by_status={"done": 1}))
    back = over_json(snap)
    assert isinstance(back.slots[0], events.SlotRow) and isinstance(back.pacing, events.Pacing)
    assert back.running == 1 and back.summary.by_status == {"done": 1}


@pytest.mark.parametrize("bad", [[], {"type": "Nope"}, {"type": "Log", "level": "info"},
                                 {"type": "Log", "level": "info", "message": "m", "extra": 1},
                                 {"type": "RunSnapshot", "pacing": [1, 2]}])
def test_what_is_not_a_value_is_refused(bad):
    with pytest.raises(WireError):
        from_wire(bad)


def test_only_known_types_are_sent():
    with pytest.raises(WireError):
        to_wire(object())
