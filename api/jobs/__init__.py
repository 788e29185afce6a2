"""Batch jobs, whoever runs them: the server's own processes, ``kalah worker`` processes on
any number of machines, or ``kalah batch`` on this machine's cores.

- :mod:`.items`: a batch request normalized (distinct tasks, the slots of the input, chunks)
  and a slot's JSON, written once; ``POST /v1/batch`` and ``kalah batch`` parse alike;
- :mod:`.store`: the job store's interface, :class:`~.store.JobStore` with its ``errors``;
  its backends :mod:`.redis_jobs` (the state Redis, its fair queue and leases; keys and
  scripts in :mod:`.redis_layout`) and :mod:`.embedded_jobs` (``diskcache``, no Redis);
- :mod:`.runner`: the one loop that runs a job's chunks, and the server's runner thread;
- :mod:`.worker`: ``kalah worker``; :mod:`.work`: engine work (a book build) on the workers;
- :mod:`.local` and :mod:`.remote`: ``kalah batch`` without a server, and through one.

Nothing here knows HTTP: the resource is :mod:`kalah_service.batch`; the searches are charged
through :mod:`kalah_service.ratelimit.buckets`; the backends are built by
:mod:`kalah_service.ops.backends` and handed in.
"""
