"""What HTTP adds around every resource, and nothing else:

- :mod:`.http_errors`: every exception as an RFC 9457 problem answer;
- :mod:`.callers`: who is calling (an API key checked against the key store, or an address);
- :mod:`.charging`: admission, reservations and settlement of each request (Flask hooks over
  :mod:`kalah_service.ratelimit`);
- :mod:`.forwarding`, :mod:`.bounds`, :mod:`.security`, :mod:`.access`: forwarding headers,
  request bodies that cannot be read, CORS and security headers, who may read ``/metrics``;
- :mod:`.responses`: an answer as a response (entity tag, 304, a live stream);
- :mod:`.spec_limits`, :mod:`.spec_rates`: what the OpenAPI document says of this server's
  limits and of the rate limits.
"""
