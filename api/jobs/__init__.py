"""Batch jobs: the job store (one interface, Redis and embedded), the runner, the worker
and the local and remote runners of ``kalah batch``."""
