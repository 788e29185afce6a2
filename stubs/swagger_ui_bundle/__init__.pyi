# swagger-ui-bundle ships no types; the service reads only this.
from importlib.resources.abc import Traversable

swagger_ui_path: Traversable  # the folder of Swagger UI's files
