"""`expconsole convert`: each tool's mapping, the containers, skipped rows and both output layouts.

Expectations come from the sample exports in tests/data/exports through an independent reading
of the documented rules (tests/unit/convert_reference.py), or from the row a test builds.
"""

from __future__ import annotations

import argparse
import gzip
import json
import zipfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from expconsole.models.events import check_event
from expconsole_tools import convert as convert_module
from expconsole_tools.convert import convert, output, run
from expconsole_tools.convert.mapping import Amplitude, Mixpanel, Segment, Skip
from tests.unit.convert_reference import (
    EXPORTS,
    TOOLS,
    amplitude_zip,
    expected,
    read_days,
    read_jsonl,
    sample_files,
    sample_lines,
)

NOW_MS = int(datetime(2024, 6, 1, tzinfo=UTC).timestamp() * 1000)


def ms(text: str) -> int:
    """Milliseconds of a UTC ISO time, computed the plain way."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def assert_valid(events: list[dict[str, Any]]) -> None:
    """Every event passes the ingestion validator unchanged."""
    for index, event in enumerate(events):
        errors: list[dict[str, str]] = []
        assert check_event(index, event, NOW_MS, errors) == event, errors


def sample_input(tool: str, tmp_path: Path) -> Path:
    """The sample in the container its tool exports: Amplitude's zip, Mixpanel's file, Segment's gzip."""
    if tool == "amplitude":
        return amplitude_zip(tmp_path / "export.zip")
    if tool == "segment":
        (source,) = sample_files("segment")
        packed = tmp_path / f"{source.name}.gz"
        packed.write_bytes(gzip.compress(source.read_bytes()))
        return packed
    (source,) = sample_files("mixpanel")
    return source


# --- Amplitude ---------------------------------------------------------------------------------


def test_amplitude_row_maps_every_documented_field() -> None:
    row = json.loads(sample_lines("amplitude")[0])
    event = Amplitude()(row)
    assert event is not None
    assert event["event"] == row["event_type"]
    assert event["timestamp"] == ms(row["event_time"].replace(" ", "T")[:23])
    assert event["user"]["userID"] == row["user_id"]
    assert event["user"]["stableID"] == row["device_id"]
    assert event["metadata"] == row["event_properties"]
    assert event["value"] == row["event_properties"]["$revenue"]
    for key, value in row["user_properties"].items():
        assert event["user"][key] == value
    for key in ("country", "city", "platform", "os_name", "language", "version_name"):
        assert event["user"][key] == row[key]
    for key in ("ip_address", "location_lat", "amplitude_id", "$insert_id", "session_id"):
        assert key not in event["user"] and key not in event["metadata"]
    assert_valid([event])


def test_amplitude_anonymous_device_identify_and_revenue_rules() -> None:
    base = {"event_type": "Played", "event_time": "2024-03-04 10:00:00.000000", "device_id": "d-1"}
    event = Amplitude()(base)
    assert event is not None and event["user"] == {"stableID": "d-1"} and "value" not in event
    assert Amplitude()({**base, "event_type": "$identify"}) is None
    top = Amplitude()({**base, "revenue": 4.5, "event_properties": {"$revenue": 9}})
    assert top is not None and top["value"] == 4.5
    # user properties never replace the ids
    clash = Amplitude()({**base, "user_id": "u-1", "user_properties": {"userID": 7, "stableID": None}})
    assert clash is not None and clash["user"] == {"userID": "u-1", "stableID": "d-1"}
    # the HTTP API's numeric `time` (ms) when event_time is absent
    http_shaped = Amplitude()({"event_type": "Played", "time": 1709546400000, "user_id": "u-1"})
    assert http_shaped is not None and http_shaped["timestamp"] == 1709546400000


# --- Mixpanel ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("time", "timestamp"),
    [
        (1709571600, 1709571600000),  # the default export: seconds
        (1709571600123, 1709571600123),  # time_in_ms=true
        (1709571600.25, 1709571600250),  # fractional seconds
        ("1709571600", 1709571600000),  # seconds as text
    ],
)
def test_mixpanel_seconds_or_milliseconds_by_magnitude(time: Any, timestamp: int) -> None:
    event = Mixpanel()({"event": "Played", "properties": {"time": time, "distinct_id": "u-1"}})
    assert event is not None and event["timestamp"] == timestamp


@pytest.mark.parametrize(
    ("properties", "user"),
    [
        ({"distinct_id": "u-1"}, {"userID": "u-1"}),
        (
            {"distinct_id": "u-1", "$device_id": "d-1", "$user_id": "u-1"},
            {"userID": "u-1", "stableID": "d-1"},
        ),
        ({"distinct_id": "$device:d-1", "$device_id": "d-1"}, {"stableID": "d-1"}),
        ({"distinct_id": "$device:d-2"}, {"stableID": "d-2"}),
        ({"distinct_id": "d-1", "$device_id": "d-1"}, {"stableID": "d-1"}),  # original ID merge, anonymous
        ({"distinct_id": 42}, {"userID": "42"}),
    ],
)
def test_mixpanel_ids(properties: dict[str, Any], user: dict[str, str]) -> None:
    event = Mixpanel()({"event": "Played", "properties": {"time": 1709571600, **properties}})
    assert event is not None and event["user"] == user


def test_mixpanel_keeps_dollar_properties_as_metadata_and_has_no_value() -> None:
    row = json.loads(sample_lines("mixpanel")[0])
    event = Mixpanel()(row)
    assert event is not None
    mapped = {"time", "distinct_id", "$user_id", "$device_id"}
    assert event["metadata"] == {k: v for k, v in row["properties"].items() if k not in mapped}
    assert event["metadata"]["$insert_id"] == row["properties"]["$insert_id"]
    assert "value" not in event


# --- Segment -----------------------------------------------------------------------------------


def test_segment_track_page_screen() -> None:
    segment = Segment()
    track = {
        "type": "track",
        "event": "Order Completed",
        "userId": "u-1",
        "anonymousId": "a-1",
        "timestamp": "2024-03-04T17:05:11.800Z",
        "properties": {"revenue": 39.5, "value": 2, "products": [{"sku": "x"}]},
        "context": {"ip": "203.0.113.7"},
    }
    event = segment(track)
    assert event == {
        "event": "Order Completed",
        "user": {"userID": "u-1", "stableID": "a-1"},
        "timestamp": ms("2024-03-04T17:05:11.800"),
        "metadata": track["properties"],
        "value": 39.5,
    }
    only_value = segment({**track, "properties": {"value": 3}})
    assert only_value is not None and only_value["value"] == 3
    text_value = segment({**track, "properties": {"value": "high"}})
    assert text_value is not None and "value" not in text_value

    page = segment(
        {**track, "type": "page", "name": "Pricing", "category": "Docs", "properties": {"path": "/p"}}
    )
    assert page is not None and page["event"] == "page"
    assert page["metadata"] == {"path": "/p", "name": "Pricing", "category": "Docs"}
    screen = segment({**track, "type": "screen", "name": "Home", "properties": None})
    assert screen is not None and (screen["event"], screen["metadata"]) == ("screen", {"name": "Home"})


def test_segment_identify_traits_apply_to_later_events_of_that_user() -> None:
    segment = Segment()
    track = {"type": "track", "event": "Clicked", "timestamp": "2024-03-04T10:00:00Z"}
    before = segment({**track, "userId": "u-1"})
    assert before is not None and before["user"] == {"userID": "u-1"}

    identify = {
        "type": "identify",
        "userId": "u-1",
        "anonymousId": "a-1",
        "traits": {"plan": "pro", "seats": 3},
    }
    assert segment({**identify, "timestamp": "2024-03-04T10:01:00Z"}) is None
    assert segment({"type": "identify", "userId": "u-1", "traits": {"seats": 4}}) is None  # traits merge

    after = segment({**track, "userId": "u-1"})
    assert after is not None and after["user"] == {"plan": "pro", "seats": 4, "userID": "u-1"}
    anonymous = segment({**track, "anonymousId": "a-1"})
    assert anonymous is not None and anonymous["user"] == {"plan": "pro", "seats": 3, "stableID": "a-1"}
    # the message's own context.traits are the latest word
    own = segment({**track, "userId": "u-1", "context": {"traits": {"plan": "team"}}})
    assert own is not None and own["user"]["plan"] == "team"
    other = segment({**track, "userId": "u-2"})
    assert other is not None and other["user"] == {"userID": "u-2"}


def test_segment_messages_that_are_not_events_or_not_convertible() -> None:
    segment = Segment()
    assert segment({"type": "group", "userId": "u-1", "groupId": "g", "traits": {}}) is None
    assert segment({"type": "alias", "userId": "u-1", "previousId": "a-1"}) is None
    for row, reason in [
        ({"type": "track", "userId": "u", "timestamp": "2024-03-04T10:00:00Z"}, "no event name"),
        ({"type": "track", "event": "E", "timestamp": "2024-03-04T10:00:00Z"}, "no user id or device id"),
        ({"type": "track", "event": "E", "userId": "u"}, "no time"),
        ({"type": "track", "event": "E", "userId": "u", "timestamp": "yesterday"}, "not a date-time"),
        ({"type": "track", "event": "E", "userId": "u", "timestamp": "1999-12-31T23:59:59Z"}, "before 2000"),
        (
            {
                "type": "track",
                "event": "E",
                "userId": "u",
                "timestamp": "2024-03-04T10:00:00Z",
                "properties": [],
            },
            "not an object",
        ),
        ({"type": "bogus", "userId": "u", "timestamp": "2024-03-04T10:00:00Z"}, "not a Segment event"),
    ]:
        with pytest.raises(Skip, match=reason):
            segment(row)


# --- whole exports -----------------------------------------------------------------------------


@pytest.mark.parametrize("tool", TOOLS)
def test_sample_export_to_day_directories(tool: str, tmp_path: Path) -> None:
    want = expected(tool)
    out = tmp_path / "out"
    summary = convert(tool, sample_input(tool, tmp_path), out, now_ms=NOW_MS)
    assert (summary.converted, summary.skipped, summary.not_events) == (
        len(want.events),
        want.skipped,
        want.not_events,
    )
    got = read_days(out, tool)
    assert got == want.days()
    assert summary.days == set(got)
    assert len(summary.reasons) == min(want.skipped, 5)
    for events in got.values():
        assert_valid(events)
    assert not [p for p in out.rglob("*") if p.name.startswith(".")]  # no temporary files left


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("name", ["events.jsonl", "events.jsonl.gz"])
def test_sample_export_to_one_file(tool: str, name: str, tmp_path: Path) -> None:
    want = expected(tool)
    out = tmp_path / name
    summary = convert(tool, EXPORTS / tool, out, now_ms=NOW_MS)
    assert read_jsonl(out) == want.events
    assert summary.converted == len(want.events)
    assert_valid(read_jsonl(out))
    if name.endswith(".gz"):
        assert out.read_bytes()[:2] == b"\x1f\x8b"


def test_containers_zip_gzip_plain_and_directory_agree(tmp_path: Path) -> None:
    """Amplitude's zip, a single gzip, plain files and a directory of them all give the same events."""
    want = expected("amplitude").events
    packed = amplitude_zip(tmp_path / "export.zip")
    (tmp_path / "dir" / "nested").mkdir(parents=True)
    first, second = sample_files("amplitude")
    (tmp_path / "dir" / first.name).write_bytes(first.read_bytes())
    (tmp_path / "dir" / "nested" / f"{second.name}.gz").write_bytes(gzip.compress(second.read_bytes()))
    (tmp_path / "dir" / "README.txt").write_text("not an export\n")
    renamed = tmp_path / "download.bin"  # recognised by content, not name
    renamed.write_bytes(packed.read_bytes())
    for source in (packed, EXPORTS / "amplitude", tmp_path / "dir", renamed):
        out = tmp_path / f"out-{source.name}.jsonl"
        summary = convert("amplitude", source, out, now_ms=NOW_MS)
        assert read_jsonl(out) == want, source
    assert summary.files.ignored == []
    mixed = convert("amplitude", tmp_path / "dir", tmp_path / "mixed.jsonl", now_ms=NOW_MS)
    assert read_jsonl(tmp_path / "mixed.jsonl") == want
    assert mixed.files.ignored == [str(tmp_path / "dir" / "README.txt")]


def test_bad_lines_are_counted_never_fatal(tmp_path: Path) -> None:
    good = {"event": "Played", "properties": {"time": 1709571600, "distinct_id": "u-1"}}
    lines = [
        json.dumps(good),
        "not json at all",
        "[1, 2, 3]",
        '{"event": "Played", "properties": {"time": NaN, "distinct_id": "u-1"}}',
        b"\xff\xfe\x00broken".decode("latin-1"),
        json.dumps({"event": "Played", "properties": "time=1709571600"}),
        json.dumps({"event": "Played", "properties": {"time": 4_102_444_800, "distinct_id": "u-1"}}),  # 2100
        "",
        json.dumps(good),
    ]
    source = tmp_path / "export.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="latin-1")
    summary = convert("mixpanel", source, tmp_path / "out.jsonl", now_ms=NOW_MS)
    assert (summary.converted, summary.skipped) == (2, 6)
    assert summary.reasons[0].startswith(f"{source}:2: not JSON")
    assert summary.reasons[2] == f"{source}:4: not JSON (NaN is not JSON)"
    assert len(summary.reasons) == 5
    assert "in the future" in json.dumps(
        convert("mixpanel", _one_line(tmp_path, lines[6]), tmp_path / "f.jsonl", now_ms=NOW_MS).reasons
    )


def _one_line(tmp_path: Path, line: str) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text(line + "\n")
    return path


def test_day_files_reopen_when_more_days_than_open_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "MAX_OPEN_DAYS", 2)
    days = ["2024-03-01", "2024-03-02", "2024-03-03", "2024-03-04"]
    rows = [
        {"event": f"E{i}", "properties": {"time": ms(f"{days[i % 4]}T12:00:00") // 1000, "distinct_id": "u"}}
        for i in range(12)
    ]
    source = tmp_path / "export.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    (out / days[0]).mkdir(parents=True)
    (out / days[0] / "mixpanel.jsonl").write_text('{"stale": true}\n')  # a previous run: replaced
    convert("mixpanel", source, out, now_ms=NOW_MS)
    got = read_days(out, "mixpanel")
    assert {day: [e["event"] for e in events] for day, events in got.items()} == {
        day: [f"E{i}" for i in range(12) if i % 4 == n] for n, day in enumerate(days)
    }


def test_unreadable_input_leaves_no_output(tmp_path: Path) -> None:
    source = tmp_path / "export"
    source.mkdir()
    (source / "a.jsonl").write_text(
        '{"event": "E", "properties": {"time": 1709571600, "distinct_id": "u"}}\n'
    )
    (source / "b.json.gz").write_bytes(gzip.compress(b'{"event": "E"}\n' * 50)[:-12])  # truncated
    out = tmp_path / "out"
    with pytest.raises(convert_module.UnreadableInput, match=r"b\.json\.gz"):
        convert("mixpanel", source, out, now_ms=NOW_MS)
    assert not out.exists()
    (source / "b.json.gz").unlink()
    (source / "c.zip").write_bytes(b"PK\x03\x04 not really a zip")
    with pytest.raises(convert_module.UnreadableInput, match=r"c\.zip"):
        convert("mixpanel", source, tmp_path / "out.jsonl", now_ms=NOW_MS)
    assert list(tmp_path.glob("*out*")) == []


def _args(tool: str, source: Path, out: Path) -> argparse.Namespace:
    return argparse.Namespace(tool=tool, input=str(source), output=str(out))


def test_run_exit_codes_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(_args("segment", tmp_path / "missing", tmp_path / "out")) == 2
    assert "no such file" in capsys.readouterr().err

    want = expected("segment")
    assert run(_args("segment", EXPORTS / "segment", tmp_path / "out")) == 0
    captured = capsys.readouterr()
    assert f"converted {len(want.events)} events, skipped {want.skipped} rows" in captured.out
    assert f"{len(want.days())} days" in captured.out
    assert captured.err.count("skipped ") == min(want.skipped, 5)

    # the wrong --from: nothing converts, which is worth a non-zero exit
    assert run(_args("amplitude", EXPORTS / "segment", tmp_path / "wrong")) == 1
    assert "really an export from amplitude" in capsys.readouterr().err

    empty = tmp_path / "empty"
    empty.mkdir()
    assert run(_args("mixpanel", empty, tmp_path / "out2")) == 1
    assert "no export files" in capsys.readouterr().err

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert run(_args("mixpanel", EXPORTS / "mixpanel", blocker)) == 1
    assert "not a directory" in capsys.readouterr().err


def test_zip_members_are_read_in_name_order(tmp_path: Path) -> None:
    packed = tmp_path / "export.zip"
    with zipfile.ZipFile(packed, "w") as archive:
        for hour in (1, 0):  # written out of order
            line = {
                "event_type": f"H{hour}",
                "event_time": f"2024-03-04 0{hour}:00:00.000000",
                "user_id": "u",
            }
            archive.writestr(f"1/1_2024-03-04_{hour}#0.json.gz", gzip.compress(json.dumps(line).encode()))
        archive.writestr("1/", b"")
    convert("amplitude", packed, tmp_path / "out.jsonl", now_ms=NOW_MS)
    assert [e["event"] for e in read_jsonl(tmp_path / "out.jsonl")] == ["H0", "H1"]
