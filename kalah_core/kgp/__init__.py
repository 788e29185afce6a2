"""``kalah kgp``: the Kalah Game Protocol of KWARC's go-kgp servers and an agent that plays on them.

- :mod:`~kalah_core.kgp.protocol`: commands, boards and transports (TCP, WebSocket);
- :mod:`~kalah_core.kgp.agent`: the agent (how it plays: its docstring), over
- :mod:`~kalah_core.kgp.thinker`: the search thread that answers each state;
- :mod:`~kalah_core.kgp.tracker`: the games followed through the states the server sends;
- :mod:`~kalah_core.kgp.records` and :mod:`~kalah_core.kgp.experience`: the games' records and
  what earlier games teach;
- :mod:`~kalah_core.kgp.limits`: the memory and cores the agent may use.
"""
