"""Schemas shared by several resources (each resource's own are in its ``schemas.py``):

- :mod:`.components`: the hand-written component schemas of the contract (``Position``,
  ``Rules``, ``Move`` ...);
- :mod:`.fields`: the shared request fields and the :func:`~.fields.answer` decorator;
- :mod:`.requests`: search budgets and the position parameters of a query;
- :mod:`.answers`: the rules, a position in JSON form, the problem.
"""
