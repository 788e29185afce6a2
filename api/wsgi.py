"""The WSGI entry point: ``gunicorn -c python:kalah_service.ops.gunicorn_conf`` names this app."""

from . import create_app

app = create_app()
