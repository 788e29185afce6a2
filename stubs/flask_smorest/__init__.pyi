# flask-smorest ships no types: this stub types what the service uses, so that its routes
# are checked under mypy strict (the decorators return the view they are given).
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypeVar

import flask
from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from marshmallow import Schema
from marshmallow.schema import SchemaMeta
from werkzeug.exceptions import HTTPException

_T = TypeVar("_T")
_Schema = Schema | type[Schema]
_Doc = Mapping[str, Any]  # a fragment of the OpenAPI document, copied into the spec

class Blueprint(flask.Blueprint):
    description: str
    def __init__(
        self,
        name: str,
        import_name: str,
        *,
        description: str = "",
        url_prefix: str | None = None,
        **kwargs: Any,
    ) -> None: ...
    def add_url_rule(
        self,
        rule: str,
        endpoint: str | None = None,
        view_func: Callable[..., object] | None = None,
        provide_automatic_options: bool | None = None,
        *,
        parameters: list[_Doc | str] | None = None,
        tags: list[str] | None = None,
        **options: Any,
    ) -> None: ...
    # A MethodView class or a view function, returned as given.
    def route(
        self,
        rule: str,
        *,
        parameters: list[_Doc | str] | None = None,
        tags: list[str] | None = None,
        **options: Any,
    ) -> Callable[[_T], _T]: ...
    def arguments(
        self,
        schema: _Schema,
        *,
        location: str = "json",
        content_type: str | None = None,
        required: bool = True,
        description: str | None = None,
        example: Any = None,
        examples: _Doc | None = None,
        **kwargs: Any,
    ) -> Callable[[_T], _T]: ...
    def response(
        self,
        status_code: int | str,
        schema: _Schema | None = None,
        *,
        content_type: str | None = None,
        description: str | None = None,
        example: Any = None,
        examples: _Doc | None = None,
        headers: _Doc | None = None,
    ) -> Callable[[_T], _T]: ...
    def alt_response(
        self,
        status_code: int | str,
        response: str | None = None,
        *,
        schema: _Schema | None = None,
        content_type: str | None = None,
        description: str | None = None,
        example: Any = None,
        examples: _Doc | None = None,
        headers: _Doc | None = None,
        success: bool = False,
    ) -> Callable[[_T], _T]: ...
    @staticmethod
    def doc(**kwargs: Any) -> Callable[[_T], _T]: ...

class Api:
    ERROR_SCHEMA: ClassVar[SchemaMeta]  # a Schema class
    DEFAULT_RESPONSE_CONTENT_TYPE: str
    spec: APISpec
    ma_plugin: MarshmallowPlugin
    def __init__(
        self,
        app: flask.Flask | None = None,
        *,
        spec_kwargs: Mapping[str, Any] | None = None,
        config_prefix: str = "",
    ) -> None: ...
    def init_app(
        self, app: flask.Flask, *, spec_kwargs: Mapping[str, Any] | None = None
    ) -> None: ...
    def register_blueprint(
        self, blp: Blueprint, *, parameters: list[_Doc | str] | None = None, **options: Any
    ) -> None: ...
    def handle_http_exception(self, error: HTTPException) -> flask.Response: ...
    def _register_responses(self) -> None: ...
