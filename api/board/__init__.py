"""The analysis board: the page at ``/`` (a client of the public API, :mod:`.page`) and the
board image ``/v1/board.svg`` (:mod:`.routes`, drawn by :mod:`kalah_core.svg`)."""
