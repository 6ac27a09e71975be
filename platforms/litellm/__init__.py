"""LiteLLM's proxy (litellm 1.110.2), in front of the stub: an OpenAI-compatible gateway to test."""
