"""The translation catalogs: extract, update, compile and check, for the Python package and the panel.

    python scripts/i18n.py update    extract every string into locale/jupyter_hetero.pot and merge it
                                     into each locale's .po (new strings untranslated, stale ones dropped)
    python scripts/i18n.py compile   each .po to a .mo (Python's gettext) and a .json (JupyterLab's panel)
    python scripts/i18n.py check     exit 1, listing each problem, when a string lacks a translation, an
                                     entry is stale or fuzzy, placeholders differ, a compiled file is old,
                                     or an API error is raised with a plain string instead of a Message

One catalog per locale, ``jupyter_hetero/locale/<locale>/LC_MESSAGES/jupyter_hetero.po``, holds both sides,
as JupyterLab language packs do: Python strings marked ``N_("...")`` and the panel's ``trans.__('...')``
(and ``_n``/``_p``) calls. The panel's JSON carries only the strings the panel uses.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
DOMAIN = "jupyter_hetero"
LOCALE_DIR = ROOT / "jupyter_hetero" / "locale"
TEMPLATE = LOCALE_DIR / f"{DOMAIN}.pot"
PANEL_DIR = "labextension"
HEADER = ("# Translations of jupyter-hetero (Python package and JupyterLab panel).\n"
          "# Made by scripts/i18n.py update; translate the empty entries, then run scripts/i18n.py compile.")
VERSION = "0.1.0"  # the catalog format's version in the panel JSON header, as JupyterLab reads it

_PYTHON_KEYWORDS = {"N_": None}
# The translator's methods under every name the JupyterLab convention looks for (as jupyterlab-translate does).
_PANEL_KEYWORDS = {
    f"{root}.{name}": spec
    for root in ("trans", "this.trans", "this._trans", "props.trans", "this.props.trans")
    for name, spec in (("__", None), ("_n", (1, 2)), ("_p", ((1, "c"), 2)), ("_np", ((1, "c"), 2, 3)))
}
_SOURCES = (
    (ROOT / "jupyter_hetero", [("**.py", "python")], _PYTHON_KEYWORDS, {}),
    # Template literals too: a string inside `${...}` is as much the panel's as any other.
    (ROOT / PANEL_DIR / "src", [("**.ts", "javascript"), ("**.tsx", "javascript")], _PANEL_KEYWORDS,
     {"parse_template_string": "true"}),
)
# `{name}` / `{name!r}` in Python strings, `%1` in the panel's.
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%\d+")


def template() -> Catalog:
    """Every translatable string of the source, with where it is used (file only, so edits don't churn)."""
    catalog = Catalog(project="jupyter-hetero", version=VERSION, domain=DOMAIN, fuzzy=False, header_comment=HEADER,
                      copyright_holder="jupyter-hetero contributors", msgid_bugs_address="")
    for directory, methods, keywords, options in _SOURCES:
        relative = directory.relative_to(ROOT).as_posix()
        for filename, _lineno, message, comments, context in extract_from_dir(
            directory, method_map=methods, options_map={pattern: options for pattern, _ in methods},
            keywords=keywords, comment_tags=("TRANSLATORS:",), strip_comment_tags=True,
        ):
            catalog.add(message, None, [(f"{relative}/{filename}", None)], auto_comments=comments, context=context)
    return catalog


def po_files(locale_dir: Path = LOCALE_DIR) -> list[Path]:
    return sorted(locale_dir.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))


def read(path: Path) -> Catalog:
    with path.open("rb") as file:
        return read_po(file, abort_invalid=True)


def _po_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_po(out, catalog, width=100, sort_output=True, ignore_obsolete=True, include_lineno=False,
             omit_header=False)
    return out.getvalue()


def update() -> None:
    """Write the template and merge it into each locale's catalog."""
    fresh = template()
    if TEMPLATE.exists():
        # Unchanged strings keep the template's date, so an update without news changes no file.
        now, fresh.creation_date = fresh.creation_date, read(TEMPLATE).creation_date
        if _po_bytes(fresh) != TEMPLATE.read_bytes():
            fresh.creation_date = now
    TEMPLATE.write_bytes(_po_bytes(fresh))
    for path in po_files():
        catalog = read(path)
        catalog.update(fresh, no_fuzzy_matching=True)
        path.write_bytes(_po_bytes(catalog))
        print(f"updated {path.relative_to(ROOT)}")


def mo_bytes(catalog: Catalog) -> bytes:
    out = io.BytesIO()
    write_mo(out, catalog, use_fuzzy=False)
    return out.getvalue()


def panel_json(catalog: Catalog) -> str:
    """The catalog's panel strings in the Jed format JupyterLab's translator loads."""
    data: dict[str, object] = {"": {
        "domain": DOMAIN,
        "language": catalog.locale_identifier.replace("_", "-"),
        "plural_forms": catalog.plural_forms,
        "version": VERSION,
    }}
    for message in sorted(_translated(catalog), key=lambda m: _key(m)):
        if any(path.startswith(PANEL_DIR + "/") for path, _ in message.locations):
            data[_key(message)] = list(message.string) if isinstance(message.string, tuple) else [message.string]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def _key(message) -> str:
    msgid = message.id[0] if isinstance(message.id, tuple) else message.id
    return f"{message.context}\x04{msgid}" if message.context else msgid


def _translated(catalog: Catalog) -> Iterator:
    return (m for m in catalog if m.id and m.string and not m.fuzzy)


def compiled(path: Path) -> dict[Path, bytes]:
    """What compiling one .po writes: its .mo and its panel .json, by path."""
    catalog = read(path)
    return {path.with_suffix(".mo"): mo_bytes(catalog), path.with_suffix(".json"): panel_json(catalog).encode()}


def compile_all(locale_dir: Path = LOCALE_DIR) -> list[Path]:
    written = []
    for path in po_files(locale_dir):
        for target, content in compiled(path).items():
            target.write_bytes(content)
            written.append(target)
    return written


def problems(catalog: Catalog, wanted: Catalog) -> list[str]:
    """Why ``catalog`` does not translate exactly the strings of ``wanted``; empty when it does."""
    found = []
    for message in wanted:
        if not message.id:
            continue
        have = catalog.get(message.id, message.context)
        name = json.dumps(_key(message), ensure_ascii=False)
        if have is None:
            found.append(f"missing: {name}")
        elif not have.string or (isinstance(have.string, tuple) and not all(have.string)):
            found.append(f"untranslated: {name}")
        elif have.fuzzy:
            found.append(f"fuzzy: {name}")
        elif not _same_placeholders(message.id, have.string):
            found.append(f"placeholders differ: {name}")
    for message in catalog:
        if message.id and wanted.get(message.id, message.context) is None:
            found.append(f"stale: {json.dumps(_key(message), ensure_ascii=False)}")
    found.extend(f"stale (obsolete): {json.dumps(msgid, ensure_ascii=False)}" for msgid in catalog.obsolete)
    return found


def _same_placeholders(source: str | tuple, translated: str | tuple) -> bool:
    def marks(texts: Iterable[str]) -> list[str]:
        return sorted({mark for text in texts for mark in _PLACEHOLDER.findall(text)})
    as_tuple = lambda value: value if isinstance(value, tuple) else (value,)  # noqa: E731
    return marks(as_tuple(source)) == marks(as_tuple(translated))


# The errors a client reads (errors.py), by name; and Access.deny, whose fourth argument is the reason.
_ERRORS = {"HeteroError", "InvalidRequest", "Forbidden", "NotFound", "Conflict", "PayloadTooLarge", "TooManyRequests",
           "Unavailable", "GatewayTimeout"}
# Calls that turn something into English text a catalog never sees (``str(exc)``, ``"...".format(...)``).
_TEXT_CALLS = {"str", "repr", "format", "join"}


def unmarked_errors(package: Path = ROOT / "jupyter_hetero") -> list[str]:
    """Each client error raised with a plain (or f-) string, which no catalog can translate."""
    found = []
    for path in sorted(package.rglob("*.py")):
        found.extend(unmarked_errors_in(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix()))
    return found


def unmarked_errors_in(source: str, filename: str) -> list[str]:
    """Where ``source`` gives a client error (or ``deny``) a text that is not ``Message(N_("..."))``: a plain, f- or
    concatenated string, another error's ``str()``, a name bound to one in the same function; and where a
    ``Message`` is made of such a text, or ``N_`` marks anything but one literal string.

        unmarked_errors_in('raise NotFound(f"workload {w} does not exist")', "m.py")   # ['m.py:1: NotFound() ...']
    """
    tree = ast.parse(source, filename)
    found = []
    for scope in [tree, *(node for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        bound = _bindings(scope)
        for node in _own_nodes(scope):
            if not isinstance(node, ast.Call):
                continue
            name = _called(node)
            if name in _ERRORS or name == "deny":
                text = _argument(node, 0 if name in _ERRORS else 3, "message" if name in _ERRORS else "reason")
                if text is not None and _untranslatable(text, bound):
                    found.append(f"{filename}:{node.lineno}: {name}() with a plain string; give it Message(N_(...))")
            elif name == "Message" and node.args and _untranslatable(node.args[0], bound):
                found.append(f"{filename}:{node.lineno}: Message() of a plain string; mark it N_(...)")
            elif name == "N_" and not (len(node.args) == 1 and isinstance(node.args[0], ast.Constant)
                                       and isinstance(node.args[0].value, str)):
                found.append(f"{filename}:{node.lineno}: N_() of something other than one literal string")
    return found


def _called(node: ast.Call) -> str | None:
    return node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)


def _argument(node: ast.Call, position: int, keyword: str) -> ast.expr | None:
    if len(node.args) > position:
        return node.args[position]
    return next((k.value for k in node.keywords if k.arg == keyword), None)


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope`` outside the functions defined in it (those are scopes of their own)."""
    for child in ast.iter_child_nodes(scope):
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield child
            yield from _own_nodes(child)


def _bindings(scope: ast.AST) -> dict[str, list[ast.expr]]:
    """Every value each plain name is assigned in ``scope`` (not in the functions inside it)."""
    bound: dict[str, list[ast.expr]] = {}
    for node in _own_nodes(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    bound.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and isinstance(node.target, ast.Name) and node.value:
            bound.setdefault(node.target.id, []).append(node.value)
    return bound


def _untranslatable(node: ast.expr, bound: dict[str, list[ast.expr]], seen: frozenset[str] = frozenset()) -> bool:
    """Whether ``node`` is text a catalog cannot translate (directly, or through a name bound to it)."""
    if isinstance(node, ast.BinOp):  # "..." + f"..."
        return _untranslatable(node.left, bound, seen) or _untranslatable(node.right, bound, seen)
    if isinstance(node, ast.IfExp):
        return _untranslatable(node.body, bound, seen) or _untranslatable(node.orelse, bound, seen)
    if isinstance(node, ast.Call):
        return _called(node) in _TEXT_CALLS
    if isinstance(node, ast.Name) and node.id in bound and node.id not in seen:
        return any(_untranslatable(value, bound, seen | {node.id}) for value in bound[node.id])
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def check(paths: Iterable[Path] | None = None, wanted: Catalog | None = None) -> list[str]:
    """Every problem of the given catalogs (default: all shipped ones), each naming its file."""
    wanted = wanted or template()
    found = []
    for path in paths or po_files():
        where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        found.extend(f"{where}: {problem}" for problem in problems(read(path), wanted))
        for target, content in compiled(path).items():
            if not target.exists() or target.read_bytes() != content:
                found.append(f"{where}: {target.name} is not compiled from it (run: python scripts/i18n.py compile)")
    if not paths:
        found.extend(unmarked_errors())
        if not po_files():
            found.append(f"no catalog under {LOCALE_DIR}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("update", help="extract the strings and merge them into each locale's catalog")
    commands.add_parser("compile", help="compile each catalog to .mo and the panel's .json")
    checking = commands.add_parser("check", help="fail on a missing, stale, fuzzy or uncompiled translation")
    checking.add_argument("po", nargs="*", type=Path, help="catalogs to check (default: every shipped one)")
    args = parser.parse_args(argv)
    if args.command == "update":
        update()
    elif args.command == "compile":
        for path in compile_all():
            print(f"compiled {path.relative_to(ROOT)}")
    else:
        found = check([path.resolve() for path in args.po] or None)
        for problem in found:
            print(problem)
        if found:
            print(f"{len(found)} problem(s); fix with: python scripts/i18n.py update, translate, then compile",
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
