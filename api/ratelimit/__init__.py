"""Rate limits charged by cost, one bucket per caller shared by every endpoint and every
worker; nothing here knows HTTP, so the batch workers charge through the same buckets.

- :mod:`.costs`: the cost policy (what a request, a body, a search and a job cost);
- :mod:`.buckets`: each worker's view of its callers' buckets, synced with the shared
  counters (:mod:`kalah_service.stores.counters`: the state store's Redis, or a SQLite file
  beside the embedded answer store), and the charge of work run after its request.

Who is limited (``KALAH_LIMITS``), admission, reservations and the settlement of each request
are Flask hooks in :mod:`kalah_service.edge.charging`; the limits in the OpenAPI document are
:mod:`kalah_service.edge.spec_rates`.
"""
