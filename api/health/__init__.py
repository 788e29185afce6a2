"""Health: liveness, readiness and Prometheus metrics."""
