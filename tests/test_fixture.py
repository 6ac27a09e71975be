"""A fixture carries what each platform needs, read by that platform, old files included.

The common part (API, stub, platform) is the fixture's; the rest is the
platform's own, checked by its package (workloads/<platform>/fixture.py): a
missing or wrong field is one line naming it and the seed that writes it,
before any load. Files written before the split read as they always did.
"""

from __future__ import annotations

import json

import pytest

from fixture import Fixture, FixtureError, load_fixture
from workloads.agenticos.fixture import AgenticOSSeeded
from workloads.agenticos.fixture import seeded as agenticos_part
from workloads.agno.fixture import seeded as agno_part
from workloads.langgraph.fixture import LangGraphSeeded
from workloads.langgraph.fixture import seeded as langgraph_part

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
    assert agenticos_part(_written(tmp_path, OLD_AGENTICOS)) == AgenticOSSeeded(
        org_id="o1",
        agent_id="a1",
        model_profile_id="p1",
        collection_name="loadkit-docs",
        documents=40,
        trigger_id="t1",
        trigger_source="webhook",
    )
    agno = agno_part(_written(tmp_path, OLD_AGNO))
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
    assert langgraph_part(load_fixture(tmp_path / "f.json")) == part


@pytest.mark.parametrize(
    ("seeded", "words"),
    [
        ({"namespace": "n", "documents": 1}, "seeded.graph_id is missing for langgraph"),
        ({"graph_id": "g", "namespace": "n", "documents": "6"}, "seeded.documents is '6'"),
        ({"graph_id": 7, "namespace": "n", "documents": 6}, "seeded.graph_id is 7"),
    ],
)
def test_a_platform_names_the_field_it_cannot_use_and_the_seed_that_writes_it(seeded, words):
    fixture = Fixture(api_url="http://a", stub_url="", platform="langgraph", seeded=seeded)
    with pytest.raises(FixtureError) as refused:
        langgraph_part(fixture)
    assert words in str(refused.value)
    assert "make seed PLATFORM=langgraph" in str(refused.value)
