"""A small AgenticOS-compatible platform, so the suite and its tests have something real."""
