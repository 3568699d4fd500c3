"""The OpenAPI document of the REST API, built from the route table and the pydantic models.

``python -m jupyter_hetero.api.openapi`` writes it to ``handlers/openapi.yaml``, which the server
serves; ``--check`` exits 1 when the checked-in copy differs from a fresh build.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic.json_schema import GenerateJsonSchema, models_json_schema

from .responses import Error
from .routes import BAD_REQUEST, ENGINE_RESTARTING, FORBIDDEN, NOT_FOUND, ROUTES, TOO_MANY_REQUESTS, Route

__all__ = ["DOCUMENT_PATH", "build_document", "render_document"]

DOCUMENT_PATH = Path(__file__).parent.parent / "handlers" / "openapi.yaml"
_REF = "#/components/schemas/{model}"
_SHARED_RESPONSES = {
    BAD_REQUEST: ("BadRequest", "Invalid input; `field` names it"),
    FORBIDDEN: ("Forbidden", "Not allowed; `reason` says why"),
    NOT_FOUND: ("NotFound", "Unknown name or id"),
    TOO_MANY_REQUESTS: ("TooManyRequests", ("Faster than this server allows: `Retry-After` says in how many seconds "
                        "to try again (`reason` rate-limited); nothing was done")),
    ENGINE_RESTARTING: ("EngineRestarting", ("A dry run met a dead or stuck engine process, which restarts: try again "
                        "in a few seconds (`message` in English, `message_zh` in Chinese, `reason` engine-unavailable)")),
}
_DESCRIPTION = (
    "Self-service heterogeneous AI compute from inside Jupyter. Every endpoint needs a Jupyter token (header "
    "`Authorization: token ...` or `?token=`) and is authorised on the `hetero` resource. Errors are JSON objects "
    "with a `message`; 400s also name the offending `field`, 403s give a `reason`. Generated from the server's "
    "models by `python -m jupyter_hetero.api.openapi`: do not edit by hand."
)


class _Schemas(GenerateJsonSchema):
    """Pydantic's JSON schemas without a title per field, which only repeats the field's name."""

    def field_title_should_be_set(self, schema) -> bool:
        return False


def build_document() -> dict[str, Any]:
    """The document as a dict; the same routes and models always give the same document."""
    schemas, query_schemas = _schemas()
    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.path, {})[route.method] = _operation(route, query_schemas)
    return {
        "openapi": "3.1.0",
        "info": {"title": "jupyter-hetero API", "version": "filled in at run time", "description": _DESCRIPTION},
        "servers": [{"url": "/hetero/api/v1"}],
        "security": [{"token": []}],
        "paths": paths,
        "components": {
            "securitySchemes": {"token": {"type": "apiKey", "in": "header", "name": "Authorization"}},
            "responses": {
                name: {"description": text, "content": {"application/json": {"schema": {"$ref": _REF.format(model="Error")}}}}
                for name, text in _SHARED_RESPONSES.values()
            },
            "schemas": schemas,
        },
    }


def render_document() -> str:
    """The document as the YAML text checked in beside the handlers."""
    return yaml.safe_dump(build_document(), sort_keys=False, allow_unicode=True, width=110)


def _models(annotation) -> list[type[BaseModel]]:
    if isinstance(annotation, list):
        return _models(annotation[0])
    return [annotation] if isinstance(annotation, type) and issubclass(annotation, BaseModel) else []


def _schemas() -> tuple[dict[str, Any], dict[type[BaseModel], dict[str, Any]]]:
    """Every component schema, and each query model's own schema (its parameters; not a component)."""
    answers = ({model for route in ROUTES for model in _models(route.answer)} | {Error}
               | {route.accepted[0] for route in ROUTES if route.accepted is not None})
    bodies = {route.body for route in ROUTES if route.body}
    queries = {route.query for route in ROUTES if route.query}
    # Requests as clients send them, answers as the server writes them; sorted so the output is stable.
    wanted = ([(m, "validation") for m in sorted(bodies | queries, key=lambda m: m.__name__)]
              + [(m, "serialization") for m in sorted(answers, key=lambda m: m.__name__)])
    keyed, top = models_json_schema(wanted, ref_template=_REF, schema_generator=_Schemas)
    defs = top.get("$defs", {})
    query_schemas = {}
    for model in queries:
        name = keyed[(model, "validation")]["$ref"].rsplit("/", 1)[1]
        query_schemas[model] = defs.pop(name)
    return dict(sorted(defs.items())), query_schemas


def _operation(route: Route, query_schemas: dict) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": route.summary, "operationId": route.operation_id}
    if route.description:
        operation["description"] = route.description
    parameters = [{"name": name, "in": "path", "required": True, "schema": {"type": kind}}
                  for name, kind in route.path_parameters.items()]
    if route.query:
        schema = query_schemas[route.query]
        required = set(schema.get("required", ()))
        for name, prop in schema["properties"].items():
            prop = dict(prop)
            parameter = {"name": name, "in": "query", "required": name in required}
            if "description" in prop:
                parameter["description"] = prop.pop("description")
            parameters.append({**parameter, "schema": prop})
    parameters += [{"name": name, "in": "header", "required": False, **described}
                   for name, described in route.headers.items()]
    if parameters:
        operation["parameters"] = parameters
    if route.body:
        operation["requestBody"] = {"required": True, "content": {"application/json": {
            "schema": {"$ref": _REF.format(model=route.body.__name__)}}}}
    answer: dict[str, Any] = {"description": route.answer_description}
    if route.media_type != "application/json":
        plain = {"type": "string"} if route.media_type.startswith("text/") else {"type": "string", "format": "binary"}
        answer["content"] = {route.media_type: {"schema": plain}}
    elif route.answer is not None:
        answer["content"] = {"application/json": {"schema": _answer_schema(route.answer)}}
    responses: dict[str, Any] = {str(route.status): answer}
    if route.accepted is not None:
        model, description = route.accepted
        responses["202"] = {"description": description,
                            "content": {"application/json": {"schema": _answer_schema(model)}}}
    for status in sorted((*route.errors, *((409,) if route.conflict else ()))):
        if status == 409:
            responses["409"] = {"description": route.conflict, "content": {"application/json": {
                "schema": {"$ref": _REF.format(model="Error")}}}}
        else:
            responses[str(status)] = {"$ref": f"#/components/responses/{_SHARED_RESPONSES[status][0]}"}
    operation["responses"] = responses
    return operation


def _answer_schema(annotation) -> dict[str, Any]:
    if isinstance(annotation, list):
        return {"type": "array", "items": _answer_schema(annotation[0])}
    return {"$ref": _REF.format(model=annotation.__name__)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write (or with --check, compare) the API's OpenAPI document.")
    parser.add_argument("--check", action="store_true", help="exit 1 when the checked-in document is out of date")
    parser.add_argument("--output", type=Path, default=DOCUMENT_PATH)
    args = parser.parse_args(argv)
    text = render_document()
    if args.check:
        if args.output.read_text(encoding="utf-8") != text:
            print(f"{args.output} is out of date: run python -m jupyter_hetero.api.openapi", file=sys.stderr)
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
