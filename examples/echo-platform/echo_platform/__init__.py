"""The echo agent service as agent-loadkit speaks it (platform.py exports the record)."""
