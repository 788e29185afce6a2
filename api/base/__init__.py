"""The ground floor, read by every storey above: the settings (:mod:`.config`, every
environment variable in one place) and the Prometheus metrics (:mod:`.metrics`)."""
