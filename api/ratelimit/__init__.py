"""Rate limits charged by cost, one bucket per caller shared by every endpoint and every
worker.

- :mod:`.costs`: the cost policy (what a request, a body, a search and a job cost);
- :mod:`.counters`: the shared counters (the state store's Redis, or a SQLite file beside
  the embedded answer store);
- :mod:`.buckets`: each worker's view of its callers' buckets, synced with the counters;
- :mod:`.charging`: who is limited (``KALAH_LIMITS``), admission, reservations and the
  settlement of each request, as Flask hooks: charging happens there and nowhere else;
- :mod:`.spec`: the limits in the OpenAPI document.
"""
