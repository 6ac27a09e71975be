"""opencode serve (opencode-ai 1.18.33) as a platform the kit speaks: CONTRACT.md says how."""
