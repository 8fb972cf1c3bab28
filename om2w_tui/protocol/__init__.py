"""What crosses a process, declared once and imported by both sides: the worker's pipe (`protocol.worker`: the
spec a worker runs an episode with, the commands and events, the outcome with its typed fault kind), the outcome of
a model call (`protocol.model`: its kinds, the per-episode counts, and the pure rules that name a server's answer),
and the one codec that turns those dataclasses into JSON lines and back (`protocol.codec`).

This package sits below the engine and the episode package: it imports neither (pyproject.toml's contracts)."""
