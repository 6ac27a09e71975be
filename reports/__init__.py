"""Samples to per-phase statistics to verdict to Markdown/HTML; never talks to the network."""
