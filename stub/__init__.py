"""The fake model provider: OpenAI-compatible, slow on purpose and by a stated amount."""
