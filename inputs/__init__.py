"""The run's inputs, read before any load: the scenario, the fixture, a trace file, and how a
bad one is told. Everything else reads these; they import nothing of the kit but each other."""
