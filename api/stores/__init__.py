"""The Redis-or-local seams, each one interface with its ``errors`` and its backends beside it
(built from the settings by :mod:`kalah_service.ops.backends`, the one place that chooses):

- answers: :mod:`.answers` (the keys, the entries, :class:`~.answers.AnswerStore` and the one
  single-flight), :mod:`.redis_answers`, :mod:`.embedded_answers` (SQLite on the local disk,
  its size bounded by :mod:`.walbound`);
- the rate limits' counters: :mod:`.counters`, :mod:`.redis_counters`,
  :mod:`.embedded_counters`;
- API keys: :mod:`.keys`, :mod:`.redis_keys`, :mod:`.memory_keys`;
- the state Redis itself (:mod:`.state`: refused when it evicts) and the compute-once leases
  (:mod:`.lease`).

The job store, the fourth seam, stands with the jobs (:mod:`kalah_service.jobs.store`).
"""
