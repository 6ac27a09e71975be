"""A small AgenticOS-compatible platform, so the suite and its tests have something real."""

__version__ = "0.1.0"
