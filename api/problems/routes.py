"""``GET /problems/<slug>``: what a problem ``type`` means (RFC 9457 types should resolve)."""

from __future__ import annotations

from flask import abort
from flask.views import MethodView
from flask_smorest import Blueprint

from ..core.problems import PROBLEMS, TYPE_PREFIX
from ..schemas.answers import ProblemSchema
from .schemas import ProblemTypeSchema

blp = Blueprint(
    "problems", __name__, url_prefix="/problems", description="The problem types of error answers."
)


@blp.route("/<string:slug>")
class ProblemType(MethodView):
    @blp.response(200, ProblemTypeSchema, description="The problem type.")
    @blp.alt_response(
        404,
        schema=ProblemSchema,
        content_type="application/problem+json",
        description="No such type.",
    )
    def get(self, slug: str) -> dict[str, object]:
        """Describe one problem type."""
        problem = PROBLEMS.get(slug)
        if problem is None:
            abort(404)
        return {
            "type": TYPE_PREFIX + problem.slug,
            "title": problem.title,
            "status": problem.status,
            "description": problem.description,
        }
