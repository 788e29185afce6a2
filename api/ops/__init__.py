"""Running the service: the backends built from the settings, gunicorn, the commands."""
