"""Running the service: :mod:`.backends` (every Redis-or-local backend built from the
settings, in this one place), :mod:`.commands` (the ``kalah`` commands the service adds) and
:mod:`.key_admin`, :mod:`.serve`, :mod:`.gunicorn_conf` and :mod:`.gworker` (gunicorn), and
:mod:`.config_docs` (docs/config.md from the settings)."""
