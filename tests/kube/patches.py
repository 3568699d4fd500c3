"""PATCH bodies as the API applies them: JSON merge patch (strategic merge treated alike) and JSON patch."""

from __future__ import annotations

import copy

from tests.kube.wire import ApiError

__all__ = ["apply"]

MERGE = ("application/merge-patch+json", "application/strategic-merge-patch+json")
JSON_PATCH = "application/json-patch+json"


def merge(target, patch):
    """RFC 7386: objects merge key by key, null removes a key, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise ApiError(422, "Invalid", f"the json patch path {path!r} does not start with /")
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _parent(doc, parts: list[str]):
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def json_patch(doc: dict, operations: list[dict]) -> dict:
    """RFC 6902's add, remove, replace and test; a failing one is a 422 as the API answers it."""
    for operation in operations:
        op, parts = operation.get("op"), _pointer(operation.get("path", ""))
        try:
            parent = _parent(doc, parts)
            last = parts[-1]
            if op == "test":
                current = parent[int(last)] if isinstance(parent, list) else parent[last]
                if current != operation.get("value"):
                    raise ApiError(422, "Invalid", f"the json patch test at {operation['path']} failed")
            elif op == "remove":
                del parent[int(last) if isinstance(parent, list) else last]
            elif op in ("add", "replace"):
                value = copy.deepcopy(operation.get("value"))
                if isinstance(parent, list):
                    if last == "-":
                        parent.append(value)
                    elif op == "add":
                        parent.insert(int(last), value)
                    else:
                        parent[int(last)] = value
                else:
                    if op == "replace" and last not in parent:
                        raise KeyError(last)
                    parent[last] = value
            else:
                raise ApiError(422, "Invalid", f"unsupported json patch operation {op!r}")
        except (KeyError, IndexError, ValueError, TypeError) as error:
            raise ApiError(422, "Invalid", f"the json patch {op} at {operation.get('path')} failed: {error}") from None
    return doc


def apply(doc: dict, patch, content_type: str) -> dict:
    if content_type in MERGE:
        if not isinstance(patch, dict):
            raise ApiError.bad_request("a merge patch must be a JSON object")
        return merge(doc, patch)
    if content_type == JSON_PATCH:
        if not isinstance(patch, list):
            raise ApiError.bad_request("a json patch must be a JSON array")
        return json_patch(doc, patch)
    raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {content_type}")
