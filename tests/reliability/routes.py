"""Every route a running server's web application has, each with a path that reaches it, for the route sweeps
(tests/reliability/test_routes.py, tests/hub/test_routes.py).

    for route in routes_of(serverapp.web_app):
        route.key, route.path    # 'jupyter_server.services.contents.handlers.ContentsHandler', '/api/contents/x'
"""

from __future__ import annotations

import re
import re._parser as regex_parser
from dataclasses import dataclass
from re._constants import (ANY, BRANCH, CATEGORY, IN, LITERAL, MAX_REPEAT, MIN_REPEAT, NEGATE, NOT_LITERAL, RANGE,
                           SUBPATTERN)

from jupyter_server.base.handlers import JupyterHandler
from tornado.httputil import HTTPHeaders, HTTPServerRequest, RequestStartLine
from tornado.routing import PathMatches

from jupyter_hetero.authorizer import handler_key

# What a path parameter is, where its name says (a kernel's id must look like one to reach its route).
NAMED = {"kernel_id": "00000000-0000-0000-0000-000000000000", "session_id": "00000000-0000-0000-0000-000000000000",
         "kernel_name": "python3", "section_name": "notebook", "format": "html", "action": "interrupt"}


@dataclass(frozen=True)
class Route:
    """One rule of the application: its handler (as the allow lists name it), its pattern and a path it answers."""

    key: str
    pattern: str
    path: str
    methods: frozenset[str]  # the handler's SUPPORTED_METHODS: tornado refuses any other before the handler runs
    authenticates: bool  # a JupyterHandler, which asks who is calling; a bare tornado handler serves anyone alike

    def __str__(self) -> str:
        return f"{self.path} ({self.key})"


def routes_of(web_app, base_url: str = "/") -> list[Route]:
    """Every leaf rule of ``web_app``'s routers whose pattern a path can reach, with one such path."""
    found: dict[tuple[str, str], Route] = {}
    for handler_class, pattern in _leaves(web_app.default_router):
        sampled = sample_path(pattern)
        # A pattern under the base URL, or one matching any path (the 404 page's), there.
        path = sampled if sampled.startswith(base_url) else base_url + sampled.lstrip("/")
        if _resolves_to(web_app, path) is handler_class:  # an earlier rule may shadow this one: it is not reachable
            found.setdefault((handler_key(handler_class), pattern),
                             Route(handler_key(handler_class), pattern, path, frozenset(handler_class.SUPPORTED_METHODS),
                                   issubclass(handler_class, JupyterHandler)))
    return sorted(found.values(), key=lambda route: route.path)


def _leaves(router):
    for rule in router.rules:
        if hasattr(rule.target, "rules"):
            yield from _leaves(rule.target)
        elif isinstance(rule.matcher, PathMatches) and isinstance(rule.target, type):
            yield rule.target, rule.matcher.regex.pattern


def _resolves_to(web_app, path: str) -> type | None:
    request = HTTPServerRequest(start_line=RequestStartLine("GET", path, "HTTP/1.1"),
                                headers=HTTPHeaders({"Host": "localhost"}))
    delegate = web_app.find_handler(request)
    return getattr(delegate, "handler_class", None)


def sample_path(pattern: str) -> str:
    """A path ``pattern`` matches, named parameters as :data:`NAMED` says, anything else as short as it goes."""
    parsed = regex_parser.parse(pattern)
    names = {number: name for name, number in parsed.state.groupdict.items()}
    path = _emit(parsed, names)
    return path if path.startswith("/") else "/" + path


def _emit(items, names: dict[int, str]) -> str:
    out = []
    for op, value in items:
        if op is LITERAL:
            out.append(chr(value))
        elif op in (ANY, NOT_LITERAL):
            out.append("x")
        elif op is IN:
            out.append(_member(value))
        elif op is SUBPATTERN:
            group, _add, _remove, inner = value
            out.append(NAMED.get(names.get(group, ""), None) or _emit(inner, names))
        elif op is BRANCH:
            out.append(_emit(value[1][0], names))
        elif op in (MAX_REPEAT, MIN_REPEAT):
            low, high, inner = value
            out.append(_emit(inner, names) * (low if high == 1 else max(low, 1)))  # an optional part left out
        # AT (^, $) and the like add nothing to a path
    return "".join(out)


def _member(choices) -> str:
    """A character of a class: a letter where the class takes one."""
    for candidate in "xa1-":
        if re.fullmatch(_class_regex(choices), candidate):
            return candidate
    return "x"


def _class_regex(choices) -> str:
    parts, negate = [], False
    for op, value in choices:
        if op is NEGATE:
            negate = True
        elif op is LITERAL:
            parts.append(re.escape(chr(value)))
        elif op is RANGE:
            parts.append(f"{re.escape(chr(value[0]))}-{re.escape(chr(value[1]))}")
        elif op is CATEGORY:
            parts.append({"CATEGORY_WORD": r"\w", "CATEGORY_DIGIT": r"\d", "CATEGORY_SPACE": r"\s",
                          "CATEGORY_NOT_WORD": r"\W", "CATEGORY_NOT_DIGIT": r"\D"}.get(str(value), r"\w"))
    return ("[^" if negate else "[") + "".join(parts) + "]"



_LIST_ROUTES = """
import json, sys
from jupyter_server.serverapp import ServerApp
sys.path.insert(0, sys.argv[2])
from tests.reliability.routes import _leaves
from jupyter_hetero.authorizer import handler_key
root = sys.argv[1]
app = ServerApp()
app.initialize(argv=[f"--ServerApp.root_dir={root}", "--ServerApp.port=0", "--allow-root",
                     *(f"--ServerApp.jpserver_extensions={name}=True" for name in sys.argv[3:]),
                     f"--HeteroApp.db_url=sqlite:///{root}/hetero.sqlite", f"--HeteroApp.work_dir={root}/work",
                     "--HeteroApp.discover_local=False", "--HeteroApp.engine_process=False"],
               new_httpserver=False)
print(json.dumps(sorted({(handler_key(cls), pattern) for cls, pattern in _leaves(app.web_app.default_router)})))
"""


def installed_routes(root, extensions: tuple[str, ...]) -> list[tuple[str, str]]:
    """(handler key, pattern) of every route a plain server with ``extensions`` (and whatever else is enabled where
    it is installed) has, under the base URL /: the routes a server of this installation could serve."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    environ = {**os.environ, "JUPYTER_CONFIG_DIR": str(root / "config"), "JUPYTER_DATA_DIR": str(root / "data"),
               "JUPYTER_RUNTIME_DIR": str(root / "runtime")}
    done = subprocess.run([sys.executable, "-c", _LIST_ROUTES, str(root), str(repo), *extensions], env=environ,
                          capture_output=True, text=True, timeout=120, check=True, cwd=root)
    return [tuple(route) for route in json.loads(done.stdout.strip().splitlines()[-1])]
