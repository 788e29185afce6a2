"""The service core, shared by every resource, the batch runners and the command line.

- :mod:`.request`: the request type, the only parser and validator of positions, rules and
  limits;
- :mod:`.reply`: the answer object (``cached`` a field, one serialisation, the entity tag);
- :mod:`.analyser`: the one analysis code path (answer store, single flight, engines);
- :mod:`.engines`: each process's pool of engines;
- :mod:`.live`: a live analysis (its search on another thread, its events);
- :mod:`.play` and :mod:`.game_review`: moves played by the rules, a game judged;
- :mod:`.endgames`: the endgame databases of the process (found, built, attached);
- :mod:`.problems`: the problem types and the exception raised for a bad input.

Nothing here knows HTTP: the resources (``api/<resource>/routes.py``) turn arguments into a
request, call the analyser and turn its answer into a response
(:mod:`kalah_service.edge.responses`).
"""
