"""HTTP concerns around every resource: problems as HTTP answers, security headers,
forwarding, body bounds, keys, access to metrics, charging and the spec's limits."""
