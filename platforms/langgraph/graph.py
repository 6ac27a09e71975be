"""The graph the server runs: an agent on the stub with one tool node, and the store's
embeddings.

A chat graph as small as a team's first agent: the conversation's messages go to
an OpenAI-compatible chat model (LangChain's ``ChatOpenAI``, streaming, so the API
can stream its tokens) bound to one tool, ``lookup``; while the model asks for it,
the graph's tool node runs it (LangGraph's prebuilt ``ToolNode``, the calls of one
step concurrently) and the model is called again, as LangGraph's own agent
tutorial wires it. The tool waits the ``wait_ms`` it is asked to, asleep, so the
loop's tool costs what the scenario states and the platform's share is the rest. The
store's semantic index embeds through the same stub's ``/v1/embeddings``
(``OpenAIEmbeddings``). Loaded by langgraph-api from this file's path; the
stub's address comes from the environment the launcher set.
"""

from __future__ import annotations

import asyncio
import os

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

# The stub ignores keys and echoes any model name; these only have to be present.
STUB_API_KEY = "loadkit-stub-no-real-key"
STUB_MODEL = "loadkit-stub-model"
BASE_URL = os.environ["LANGGRAPH_STUB_URL"] + "/v1"


@tool
async def lookup(topic: str, wait_ms: float = 0) -> str:
    """Look a topic up in the team's notes; wait_ms is how long the lookup takes."""
    if wait_ms > 0:
        await asyncio.sleep(wait_ms / 1000.0)
    return f"{topic}: nothing more to report"


model = ChatOpenAI(
    model=STUB_MODEL, base_url=BASE_URL, api_key=STUB_API_KEY, streaming=True
).bind_tools([lookup])

# check_embedding_ctx_length=False: otherwise LangChain tokenises with tiktoken first, which
# downloads its encoding from the internet on first use.
embeddings = OpenAIEmbeddings(
    model=STUB_MODEL,
    base_url=BASE_URL,
    api_key=STUB_API_KEY,
    check_embedding_ctx_length=False,
    dimensions=int(os.environ["LANGGRAPH_EMBEDDING_DIM"]),
)


async def answer(state: MessagesState) -> dict:
    """The model's reply to the conversation so far."""
    return {"messages": [await model.ainvoke(state["messages"])]}


builder = StateGraph(MessagesState)
builder.add_node("answer", answer)
builder.add_node("tools", ToolNode([lookup]))
builder.add_edge(START, "answer")
builder.add_conditional_edges("answer", tools_condition)
builder.add_edge("tools", "answer")
graph = builder.compile()
