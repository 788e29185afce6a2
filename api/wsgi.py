"""The WSGI entry point: ``gunicorn -c python:api.gunicorn_conf`` (which names this app)."""

from api import create_app

app = create_app()
