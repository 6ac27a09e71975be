"""The text the kit puts into a platform, whichever platform it is.

Seeding fills the knowledge base with the same synthetic documents on every
platform, the run's uploads and retrieval questions are the same, and so are
preflight's probes, so two platforms do comparable work and a test proxy can
tell the kit's requests apart by their words. A platform package spells where
the text goes; this module is what the text says, and imports no platform.
"""

from __future__ import annotations

# Documents a seed puts in the knowledge base: enough for searches to rank, few enough
# to index in seconds.
DEFAULT_DOCUMENTS = 40
# Words the synthetic documents are made of, so searches have something to rank.
TOPICS = (
    "capacity planning",
    "connection pools",
    "rate limits",
    "streaming responses",
    "background workers",
    "vector search",
    "webhook delivery",
    "tail latency",
)

# A handful of retrieval questions, so the platform cannot answer one cached query.
QUERIES = (
    "How is the load test fixture configured?",
    "What does the platform do when its provider fails?",
    "Which settings bound the database connection pool?",
    "How are webhook deliveries signed?",
    "What happens to a chat turn that is cancelled?",
)

# Preflight's one search and one agent run: a question the seeded documents answer, and a
# prompt that keeps the model's answer (and the stub's work) short.
SEARCH_QUERY = "how do connection pools behave under load"
RUN_PROMPT = "agent-loadkit preflight: answer with one short sentence."


def document_name(index: int) -> str:
    """The file name of synthetic document ``index``: stable, so re-seeding finds it."""
    return f"loadkit-doc-{index:04d}.txt"


def document_text(index: int) -> str:
    """Synthetic document ``index``: a short paragraph (one chunk) on one of the topics."""
    topic = TOPICS[index % len(TOPICS)]
    return (
        f"agent-loadkit synthetic document {index}, about {topic}.\n"
        f"This note describes how {topic} affect an agent platform under load. "
        f"Operators measure {topic} during the sustain phase and again after the burst, "
        f"because a platform that recovers and one that stays degraded look alike mid-burst. "
        f"Reference number {index * 7919 % 100003}.\n"
    )


def question(k: int) -> str:
    """The retrieval question of arrival ``k``: the questions in turn."""
    return QUERIES[k % len(QUERIES)]


def run_prompt(k: int) -> str:
    """Arrival ``k``'s agent run prompt: numbered, and asking for a short answer."""
    return f"Load test run {k}: answer in one short sentence."


def turn_message(k: int) -> str:
    """Arrival ``k``'s chat turn: numbered, and asking for a few words."""
    return f"Load test turn {k}: answer in a few words."


def upload_name(run_id: str, k: int) -> str:
    """The file name of arrival ``k``'s upload: unique to the run and the arrival."""
    return f"loadkit-{run_id}-{k}.txt"


def upload_text(run_id: str, k: int) -> str:
    """Arrival ``k``'s upload, unique so no platform takes it for one it already has (agno
    names content by a hash of it); tests/support/embed_fault_proxy.py finds ``k`` in its first
    line."""
    return (
        f"Load test document {run_id}-{k}.\n"
        "It exists to be uploaded, accepted with 202 and indexed in the background.\n"
    ) * 8
