"""The launcher's settings, read from its environment: where the stub is and the keys. Kept
apart from keys.py, which imports LiteLLM: the launcher must set LiteLLM's offline switches
before anything imports it (LiteLLM fetches its model-price map at import otherwise)."""

from __future__ import annotations

# The master key the launcher generates at every start (LiteLLM reads it from here).
MASTER_KEY_ENV = "LITELLM_MASTER_KEY"
# The key clients use (the run's LOAD_PASSWORD), given to the launcher.
CLIENT_KEY_ENV = "LITELLM_KIT_CLIENT_KEY"
# The stub, as this process reaches it.
STUB_URL_ENV = "LITELLM_KIT_STUB_URL"
DEFAULT_STUB_URL = "http://127.0.0.1:4020"
# Where config.yaml's model points: the stub's /v1.
MODEL_URL_ENV = "LITELLM_KIT_MODEL_URL"
# The one model the proxy serves, and the one the client key may use.
MODEL = "stub"
# Nothing of LiteLLM's leaves this machine: no telemetry, nothing fetched on its own (its
# bundled model-price map, release check and feeds are used instead).
OFFLINE = {
    "LITELLM_OFFLINE_MODE": "true",
    "LITELLM_TELEMETRY_DISABLED": "true",
    "LITELLM_LOCAL_MODEL_COST_MAP": "true",
}
