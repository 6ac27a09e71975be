"""A fixture carries what each platform needs, read by that platform, old files included;
every field is checked before any load, ids are percent-encoded in URL paths, and no request
head carries a CR or LF.

The common part (API, stub, platform) is the fixture's; the rest is the
platform's own, checked by its package (workloads/<platform>/fixture.py): a
missing or wrong field is one line naming it and the seed that writes it,
before any load. Files written before the split read as they always did. A
fixture's ids end up in request lines and headers: ``collection_name: "x\\r\\nX-Evil: 1"``
once went onto the request line as it was. Here the loader refuses it, the dialects encode
what a platform answered, and the transport refuses a line break in any head it is asked to
send.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, replace

import pytest

from engine.http import HttpCall
from inputs.fixture import Fixture, FixtureError, fixture_from_dict, load_fixture, password_from_env
from stack.processes import ROOT, free_port
from tests.support.transport import dialect_at, transport
from workloads.agenticos.platform import PLATFORM as AGENTICOS
from workloads.agenticos.seed import AgenticOSSeeded
from workloads.agno.platform import PLATFORM as AGNO
from workloads.langgraph.platform import PLATFORM as LANGGRAPH
from workloads.langgraph.seed import LangGraphSeeded

# Files as the seeds wrote them before the platform part was the platform's own.
OLD_AGENTICOS = {
    "api_url": "http://127.0.0.1:8000",
    "agent_id": "a1",
    "stub_url": "http://127.0.0.1:4020",
    "collection_name": "loadkit-docs",
    "documents": 40,
    "org_id": "o1",
    "model_profile_id": "p1",
    "trigger_id": "t1",
    "trigger_source": "webhook",
    "platform": "agenticos",
    "extra": {},
}
OLD_AGNO = {
    **OLD_AGENTICOS,
    "agent_id": "loadkit-agent",
    "org_id": "",
    "model_profile_id": "",
    "trigger_id": None,
    "trigger_source": "whatsapp",
    "platform": "agno",
    "extra": {"whatsapp_prefix": "/wa"},
}


def _written(tmp_path, data) -> Fixture:
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(data))
    return load_fixture(path)


def test_old_files_read_as_each_platform_needs(tmp_path):
    assert AGENTICOS.seeded_from(_written(tmp_path, OLD_AGENTICOS)) == AgenticOSSeeded(
        org_id="o1",
        agent_id="a1",
        model_profile_id="p1",
        collection_name="loadkit-docs",
        documents=40,
        trigger_id="t1",
        trigger_source="webhook",
    )
    agno = AGNO.seeded_from(_written(tmp_path, OLD_AGNO))
    assert (agno.agent_id, agno.collection_name, agno.whatsapp_prefix) == (
        "loadkit-agent",
        "loadkit-docs",
        "/wa",
    )


def test_a_saved_fixture_reads_back_with_only_its_platform_part(tmp_path):
    part = LangGraphSeeded("loadkit-agent", "loadkit-docs", 6)
    fixture = Fixture(
        api_url="http://a", stub_url="http://s", platform="langgraph", seeded=vars(part)
    )
    fixture.save(tmp_path / "f.json")
    saved = json.loads((tmp_path / "f.json").read_text())
    assert set(saved) == {"api_url", "stub_url", "platform", "seeded"}
    assert LANGGRAPH.seeded_from(load_fixture(tmp_path / "f.json")) == part


@pytest.mark.parametrize(
    ("seeded", "words"),
    [
        ({"namespace": "n", "documents": 1}, "fixture.seeded.graph_id: missing for langgraph"),
        ({"graph_id": "g", "namespace": "n", "documents": "6"}, "seeded.documents: '6' is not"),
        ({"graph_id": 7, "namespace": "n", "documents": 6}, "fixture.seeded.graph_id: 7 is not"),
    ],
)
def test_a_platform_names_the_field_it_cannot_use_and_the_seed_that_writes_it(seeded, words):
    fixture = Fixture(api_url="http://a", stub_url="", platform="langgraph", seeded=seeded)
    with pytest.raises(FixtureError) as refused:
        LANGGRAPH.seeded_from(fixture)
    assert words in str(refused.value)
    assert "make seed PLATFORM=langgraph" in str(refused.value)


GOOD = Fixture(
    api_url="http://127.0.0.1:8000",
    stub_url="http://127.0.0.1:4020",
    platform="agenticos",
    seeded={
        "org_id": "731b2392-92e9-49fe-b900-53c43e4e1067",
        "agent_id": "10576d93-55a1-4b9a-9c84-4bd9f30d7196",
        "model_profile_id": "8fba611c-3406-433a-8a97-bcdbd7e77fbe",
        "collection_name": "loadkit_docs",
        "documents": 40,
        "trigger_id": "7298e2ca-1b79-4ff2-8c19-b6fa0a6a4c5d",
        "trigger_source": "webhook",
    },
)


def _load(tmp_path, seeded=None, **changes):
    data = {**asdict(GOOD), **changes}
    data["seeded"] = {**GOOD.seeded, **(seeded or {})}
    path = tmp_path / "fixture.json"
    path.write_text(json.dumps(data))
    return load_fixture(path)


def test_a_seeded_fixture_loads_as_written(tmp_path):
    GOOD.save(tmp_path / "fixture.json")
    assert load_fixture(tmp_path / "fixture.json") == GOOD


@pytest.mark.parametrize(
    ("changes", "seeded", "field"),
    [
        ({"api_url": 8000}, {}, "fixture.api_url"),
        ({"api_url": "ftp://127.0.0.1"}, {}, "fixture.api_url"),
        ({"api_url": "http://127.0.0.1:8000\r\nX-Evil: 1"}, {}, "fixture.api_url"),
        ({"api_url": "http://127.0.0.1:99999"}, {}, "fixture.api_url"),
        ({"stub_url": None}, {}, "fixture.stub_url"),
        ({"platform": "open code"}, {}, "fixture.platform"),
        ({"token": "x"}, {}, "fixture.token"),
        ({}, {"collection_name": "x\r\nX-Evil: 1"}, "fixture.seeded.collection_name"),
        ({}, {"agent_id": "../../admin"}, "fixture.seeded.agent_id"),
        ({}, {"trigger_id": "t?x=1"}, "fixture.seeded.trigger_id"),
        ({}, {"org_id": "o#"}, "fixture.seeded.org_id"),
        ({}, {"documents": 10**12}, "fixture.seeded.documents"),
        ({}, {"agent_id": [1]}, "fixture.seeded.agent_id"),
        ({}, {"whatsapp_prefix": "/wa\nX: 1"}, "fixture.seeded.whatsapp_prefix"),
    ],
)
def test_each_bad_field_is_one_line_naming_it(tmp_path, changes, seeded, field):
    with pytest.raises(FixtureError) as err:
        _load(tmp_path, seeded, **changes)
    assert err.value.problems == [str(err.value)], str(err.value)
    assert str(err.value).startswith(field + ": ")


def test_every_problem_is_reported_at_once_and_long_values_are_cut(tmp_path):
    bad = {"agent_id": "a" * 1_000_000, "collection_name": "x\r\nX-Evil: 1"}
    with pytest.raises(FixtureError) as err:
        _load(tmp_path, bad, api_url=8000)
    fields = [line.split(":")[0] for line in err.value.problems]
    assert fields == [
        "fixture.api_url",
        "fixture.seeded.agent_id",
        "fixture.seeded.collection_name",
    ]
    assert all(len(line) < 300 for line in err.value.problems)
    assert "1000002 characters" in str(err.value)


def test_a_missing_field_and_a_file_that_is_not_an_object_are_named(tmp_path):
    data = asdict(GOOD)
    del data["api_url"]
    (tmp_path / "a.json").write_text(json.dumps(data))
    with pytest.raises(FixtureError, match=r"^fixture\.api_url: missing"):
        load_fixture(tmp_path / "a.json")
    (tmp_path / "b.json").write_text("[1, 2]")
    with pytest.raises(FixtureError, match="is not a JSON object"):
        load_fixture(tmp_path / "b.json")


def test_a_seed_never_writes_an_id_a_platform_answered_with_a_line_break(tmp_path):
    bad = replace(GOOD, seeded={**GOOD.seeded, "agent_id": "a\r\nX-Evil: 1"})
    with pytest.raises(FixtureError, match=r"^fixture\.seeded\.agent_id: "):
        bad.save(tmp_path / "fixture.json")
    assert not (tmp_path / "fixture.json").exists()


def test_a_password_with_a_line_break_is_refused(monkeypatch):
    monkeypatch.setenv("LOAD_PASSWORD", "secret\r\nX-Evil: 1")
    with pytest.raises(FixtureError, match=r"^LOAD_PASSWORD: holds a control character"):
        password_from_env()


def test_ids_in_url_paths_are_percent_encoded():
    """Whatever an id holds (the fixture's are checked; a platform's answers are not), it
    stays one path segment: a slash, a question mark or a line break is encoded."""
    odd = {"agent_id": "a/b?c", "collection_name": "d e", "trigger_id": "f\r\ng"}
    agenticos = dialect_at(replace(GOOD, seeded={**GOOD.seeded, **odd}), "http://127.0.0.1:8000")
    assert agenticos.call("agent_run", 0).path == "/api/v1/agents/a%2Fb%3Fc/run"
    assert agenticos.call("ingest", 0).path == "/api/v1/rag/collections/d%20e/ingest"
    assert agenticos.call("trigger_fire", 0).path.endswith("/webhook/f%0D%0Ag")
    agno_part = {"agent_id": "a/b?c", "collection_name": "d", "documents": 1}
    agno = dialect_at(replace(GOOD, platform="agno", seeded=agno_part), "http://127.0.0.1:7777")
    assert agno.call("agent_run", 0).path.startswith("/agents/a%2Fb%3Fc/runs")


def test_the_transport_refuses_a_line_break_in_any_request_head_before_connecting():
    """Port nobody listens on: had the request been sent, it would fail to connect instead."""
    http = transport(f"http://127.0.0.1:{free_port()}")
    for call in (
        HttpCall("GET", "/x\r\nX-Evil: 1", b"", {}),
        HttpCall("GET", "/x", b"", {"X-Ok": "a\nb"}),
        HttpCall("GET", "/x", b"", {"X\r\nEvil": "1"}),
    ):
        with pytest.raises(ValueError, match="refused before sending"):
            http.send(call)
    assert http.stats.opened == 0


@pytest.mark.system
def test_python_m_workloads_seed_and_preflight_are_never_silent(tmp_path):
    """Both dispatch to the fixture's (or the named) platform, or say what to run."""

    def run(*args):
        return subprocess.run(
            [sys.executable, "-m", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "LOAD_PASSWORD": "x"},
        )

    helped = run("workloads.seed", "--help")
    assert helped.returncode == 0 and "--platform" in helped.stdout and "--api-url" in helped.stdout
    unknown = run("workloads.seed", "--platform", "nosuch")
    assert unknown.returncode == 2 and "agenticos, agno" in unknown.stderr
    missing = run("workloads.preflight", "--fixture", str(tmp_path / "none.json"))
    assert missing.returncode == 1 and "run `make seed` first" in missing.stderr
    (tmp_path / "bad.json").write_text(json.dumps({**asdict(GOOD), "api_url": 8000}))
    bad = run("workloads.preflight", "--fixture", str(tmp_path / "bad.json"))
    assert bad.returncode == 1 and "fixture.api_url: 8000 is not a URL" in bad.stderr
    (tmp_path / "other.json").write_text(json.dumps({**asdict(GOOD), "platform": "nosuch"}))
    other = run("workloads.preflight", "--fixture", str(tmp_path / "other.json"))
    assert other.returncode == 1 and "'nosuch' is not one this kit found" in other.stderr
    assert "Traceback" not in missing.stderr + bad.stderr + unknown.stderr


@pytest.mark.parametrize(
    ("value", "holds"),
    [
        ("/", True),
        ("/a2a/agents/loadkit-agent/v1/", True),
        ("/v1/message:stream", True),
        ("openai/gpt-4o", True),
        ("thread-1:run-2", True),
        (True, True),
        ("http://127.0.0.1:9999/", True),
        ("../../admin", False),
        ("/a/../b", False),
        ("a b", False),
        ("/x?q=1", False),
        ("a\r\nb", False),
    ],
)
def test_a_seeded_value_is_one_of_the_kinds_the_rule_names(value, holds):
    """The rule a platform author reads (your-platform.md): ids, names joined by /, paths from
    / (A2A's), booleans and URLs hold; a way up a path, a space, a query, a line break do not,
    and the refusal names the rule."""
    bad = Fixture(api_url="http://127.0.0.1:1", stub_url="http://127.0.0.1:2", seeded={"x": value})
    if holds:
        fixture_from_dict(asdict(bad))
        return
    with pytest.raises(FixtureError, match=r"^fixture\.seeded\.x: .* is none of: null, a count"):
        fixture_from_dict(asdict(bad))
