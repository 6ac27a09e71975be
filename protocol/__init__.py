"""What the kit and the stub both speak, below both: the loop's marker (marker.py).

The kit writes its plan for a turn into the prompt and the stub reads it back, so the
marker is neither side's own; kept here, the core need not import the fake model.
"""
