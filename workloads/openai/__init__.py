"""OpenAI-compatible endpoints: Chat Completions or the Responses API, reached from a URL alone."""
