"""The graph the server runs: one model call on the stub, and the store's embeddings.

A chat graph as small as a team's first deployment: the conversation's
messages go to an OpenAI-compatible chat model (LangChain's ``ChatOpenAI``,
streaming, so the API can stream its tokens) and the answer is appended. The
store's semantic index embeds through the same stub's ``/v1/embeddings``
(``OpenAIEmbeddings``). Loaded by langgraph-api from this file's path; the
stub's address comes from the environment the launcher set.
"""

from __future__ import annotations

import os

from langchain_openai import ChatOpenAI, OpenAIEmbeddings
from langgraph.graph import END, START, MessagesState, StateGraph

# The stub ignores keys and echoes any model name; these only have to be present.
STUB_API_KEY = "loadkit-stub-no-real-key"
STUB_MODEL = "loadkit-stub-model"
BASE_URL = os.environ["LANGGRAPH_STUB_URL"] + "/v1"

model = ChatOpenAI(model=STUB_MODEL, base_url=BASE_URL, api_key=STUB_API_KEY, streaming=True)

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
builder.add_edge(START, "answer")
builder.add_edge("answer", END)
graph = builder.compile()
