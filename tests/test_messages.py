"""The wire between the master and its load processes: typed at both ends, checked on arrival.

Every message goes through msgspec (runner/messages.py) as it does between processes; a
malformed one is refused where it arrives in one line naming the field, and a worker of
another version is refused at Prepare in one line naming both versions, by a real master
and a real worker on 127.0.0.1.
"""

from __future__ import annotations

import importlib
import logging

import msgpack
import pytest

from engine.run_record import ProcessStart
from engine.samples import Sample
from engine.schedule import Plan
from engine.trust import Trust
from inputs.fixture import Fixture
from inputs.scenario import load_scenario
from probes import Reading
from runner.messages import (
    VERSION,
    Batch,
    Drained,
    Header,
    MessageError,
    Offered,
    Ping,
    PlanUpdate,
    Pong,
    Prepare,
    Ready,
    Stop,
    decode,
    encode,
    listen,
    prepare_from,
    send,
)
from stack.generator_runs import RUN_TIMEOUT_S, start_distributed, write_scenario

SAMPLES = [
    Sample(0, "api_read", 0, 0.0, 0.001, 0.013, None, 0, 200, "ok", "", 25),
    Sample(1, "chat_stream", 1, 0.4, 0.4, 2.9, 812.5, 9, 101, "ok", "", 300, 40.0, 2800.0, 9.5),
    Sample(2, "agent_run", 1, 0.8, None, 12.0, None, 0, 0, "abandoned", "abandoned at end", 0),
]


def _prepare(version: str = VERSION) -> Prepare:
    scenario = load_scenario()
    return Prepare(
        version=version,
        run_id="run-1",
        slots={"worker-a": 0, "worker-b": 1},
        connections=[3, 2],
        scenario=scenario,
        fixture=Fixture(api_url="http://127.0.0.1:1", stub_url="http://127.0.0.1:2"),
        host="http://127.0.0.1:1",
        email="load@example.com",
        warm=[1, 1],
        tls=Trust(ca_file="ca.pem", source="--ca-file", ca_pem="-----BEGIN CERTIFICATE-----"),
    )


def test_every_message_arrives_as_the_record_that_was_sent():
    prepare = _prepare()
    batch = Batch(
        "run-1",
        1,
        SAMPLES,
        [Reading(2.0, "generator.1", "cpu_percent", 12.5)],
        [(1, "ingest", "doc-1")],
        [Offered(0, "api_read", 1), Offered(1, "chat_stream", 2)],
    )
    start = ProcessStart(sign_in_ms=130.0, connections_opened=3, plan_ahead_ms=-2.5)
    messages = [
        prepare,
        Ping("run-1", 2),
        Pong("run-1", 2, 1),
        Ready("run-1", 1, "sign-in refused"),
        PlanUpdate("run-1", 1.7e9, Plan.from_scenario(prepare.scenario)),
        Stop("run-1"),
        batch,
        Drained(batch, "completed", start),
    ]
    for message in messages:
        assert decode(type(message), encode(message)) == message
    assert prepare_from(decode(Header, encode(prepare)), encode(prepare)) == prepare


def test_a_sample_travels_as_a_bare_array_of_its_values():
    values = [1, "chat_stream", 1, 0.4, 0.4, 2.9, 812.5, 9, 101, "ok", "", 300, 40.0, 2800.0, 9.5]
    assert msgpack.unpackb(encode(SAMPLES[1])) == values
    assert decode(Sample, encode(SAMPLES[1])) == SAMPLES[1]


@pytest.mark.parametrize(
    ("kind", "data", "said"),
    [
        (
            Pong,
            {"run_id": "r", "seq": "1", "slot": 0},
            "Pong: Expected `int`, got `str` - at `$.seq`",
        ),
        (Ready, {"run_id": "r"}, "Ready: Object missing required field `slot`"),
        (Stop, {"run_id": 7}, "Stop: Expected `str`, got `int` - at `$.run_id`"),
        (
            Batch,
            {"run_id": "r", "slot": 0, "samples": [[0, "api_read", 0, 0.0, None, 0.1]]},
            "Batch: Expected `array` of at least length 12, got 6 - at `$.samples[0]`",
        ),
        (
            Batch,
            {"run_id": "r", "slot": 0, "offered": [[0, "api_read", "many"]]},
            "Batch: Expected `int`, got `str` - at `$.offered[0][2]`",
        ),
    ],
)
def test_a_malformed_message_is_refused_in_one_line_naming_the_field(kind, data, said):
    with pytest.raises(MessageError) as refused:
        decode(kind, msgpack.packb(data))
    assert str(refused.value) == said


@pytest.fixture
def local_runner():
    """Locust's own local runner, imported as a library (its gevent monkey patching is for a
    load process, and comes too late in pytest's: ssl is already imported)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOCUST_SKIP_MONKEY_PATCH", "1")
        environment = importlib.import_module("locust.env").Environment()
        yield environment.create_local_runner()


def test_a_malformed_message_goes_no_further_than_where_it_arrives(local_runner, caplog):
    # As a local run sends through Locust's runner; a worker's runner hands on the same bytes.
    runner = local_runner
    taken: list[Pong] = []
    listen(runner.register_message, Pong, taken.append)
    runner.send_message(Pong.kind, msgpack.packb({"run_id": "r", "seq": 1, "slot": "x"}))
    send(runner.send_message, Pong("r", 2, 1))
    assert taken == [Pong("r", 2, 1)]
    [refused] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert refused == (
        "loadkit_pong from local refused: Pong: Expected `int`, got `str` - at `$.slot`"
    )


def test_a_message_that_is_not_msgspecs_bytes_is_refused_in_one_line():
    # What a worker of a version before the typed wire sends: a plain dict.
    with pytest.raises(MessageError, match=r"^Ready: got dict, not an encoded message$"):
        decode(Ready, {"run_id": "r", "slot": 0, "error": ""})


def test_a_prepare_of_another_version_is_refused_naming_both_before_its_fields_are_read():
    # Another version's Prepare may hold fields this one does not know, or lack its own:
    # its header still says whom to answer, and the refusal names the versions, not a field.
    other = {"version": "9.9.0", "run_id": "run-2", "slots": {"w": 0}, "plan_v2": [1, 2]}
    data = msgpack.packb(other)
    header = decode(Header, data)
    assert (header.run_id, header.slots) == ("run-2", {"w": 0})
    with pytest.raises(MessageError) as refused:
        prepare_from(header, data)
    line = str(refused.value)
    assert "\n" not in line and f"agent-loadkit {VERSION}" in line and "9.9.0" in line


def test_a_malformed_prepare_of_this_version_is_refused_naming_the_field():
    data = msgpack.packb({"version": VERSION, "run_id": "r", "slots": {"w": 0}})
    with pytest.raises(MessageError, match=r"^Prepare: Object missing required field `\w+`$"):
        prepare_from(decode(Header, data), data)


@pytest.mark.system
@pytest.mark.slow
def test_a_worker_of_another_version_is_refused_at_prepare_with_one_line(plat, tmp_path):
    scenario = write_scenario(tmp_path, [("sustain", 3.0, 4.0)])
    run_dir = tmp_path / "run"
    other = ("-f", "tests/support/other_version_worker.py")
    with start_distributed(plat, scenario, run_dir, 1, worker_extra=other) as run:
        _, err = run.master.communicate(timeout=RUN_TIMEOUT_S)
    assert run.master.returncode == 2, err[-1500:]
    ours = [line for line in err.splitlines() if line.startswith("agent-loadkit: ")]
    assert ours == [
        f"agent-loadkit: version: this load process is agent-loadkit 0.0.0-other, the master is "
        f"{VERSION}; run the same version on the master and every worker"
    ], err[-1500:]
    assert not (run_dir / "run.json").exists()
