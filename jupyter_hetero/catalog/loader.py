"""Load a catalog from YAML and report every problem with its path in the file.

>>> catalog = load_catalog(DEFAULT_CATALOG_PATH)
>>> [t.name for t in catalog.templates][:2]
['data-preprocessing', 'training']
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .models import Catalog

__all__ = ["DEFAULT_CATALOG_PATH", "CatalogError", "CatalogIssue", "load_catalog", "parse_catalog"]

DEFAULT_CATALOG_PATH = Path(str(resources.files(__package__) / "default_catalog.yaml"))


@dataclass(frozen=True)
class CatalogIssue:
    """One problem in a catalog file, at a YAML path such as ``templates[3].request.memory``."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class CatalogError(ValueError):
    """A catalog that cannot be used; ``issues`` lists every problem found."""

    def __init__(self, issues: list[CatalogIssue], source: str = "catalog"):
        self.issues = issues
        self.source = source
        lines = "\n".join(f"  {issue}" for issue in issues)
        super().__init__(f"{source}: {len(issues)} error(s)\n{lines}")


def load_catalog(path: str | Path) -> Catalog:
    """Read and validate a catalog file; raises :class:`CatalogError` listing every problem."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CatalogError([CatalogIssue("", f"cannot read file: {exc.strerror}")], str(path)) from None
    return parse_catalog(text, source=str(path))


def parse_catalog(text: str, source: str = "catalog") -> Catalog:
    """Validate catalog YAML text; raises :class:`CatalogError` listing every problem."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise CatalogError([CatalogIssue(where, f"not valid YAML: {getattr(exc, 'problem', exc)}")], source) from None
    if not isinstance(data, dict):
        raise CatalogError([CatalogIssue("", "a catalog is a mapping with flavors, templates, queues and tenants")], source)
    issues: list[CatalogIssue] = []
    catalog = None
    try:
        catalog = Catalog.model_validate(data)
    except ValidationError as exc:
        issues.extend(CatalogIssue(_yaml_path(data, error["loc"]), error["msg"]) for error in exc.errors())
    issues.extend(_reference_issues(data))
    if issues:
        raise CatalogError(issues, source)
    assert catalog is not None
    return catalog


def _yaml_path(data: Any, loc: tuple) -> str:
    """``('templates', 2, 'request')`` -> ``templates[2](fine-tuning).request``."""
    path, node = "", data
    for key in loc:
        if isinstance(key, int):
            node = node[key] if isinstance(node, list) and key < len(node) else None
            name = node.get("name") if isinstance(node, dict) else None
            path += f"[{key}]" + (f"({name})" if isinstance(name, str) else "")
        elif isinstance(node, dict) or node is None:
            if isinstance(node, dict) and key not in node and str(key).rsplit("_", 1)[0] in node:
                key = str(key).rsplit("_", 1)[0]  # written as `memory: 16Gi`, validated as memory_mib
            path += ("." if path else "") + str(key)
            node = node.get(key) if isinstance(node, dict) else None
        # else: a pydantic-internal step (a validator or union member name), not a YAML key
    return path


def _names(items: Any) -> list[str]:
    return [item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)] if isinstance(items, list) else []


def _reference_issues(data: dict) -> list[CatalogIssue]:
    """Cross-references between sections, checked on the raw data so every problem is found at once."""
    issues: list[CatalogIssue] = []
    flavors, queues = set(_names(data.get("flavors"))), set(_names(data.get("queues")))
    templates, tenants = set(_names(data.get("templates"))), set(_names(data.get("tenants")))
    flavor_family = {
        f["name"]: (f.get("selector") or {}).get("family", "cpu")
        for f in data.get("flavors") or []
        if isinstance(f, dict) and isinstance(f.get("name"), str)
    }

    for section in ("flavors", "templates", "queues", "tenants", "alerts", "models"):
        for name, count in Counter(_names(data.get(section))).items():
            if count > 1:
                issues.append(CatalogIssue(section, f"name {name!r} is used {count} times"))

    def unknown(path: str, kind: str, name: Any, known: set[str]) -> None:
        if name not in known and name != "*":
            issues.append(CatalogIssue(path, f"unknown {kind} {name!r}; known: {', '.join(sorted(known)) or 'none'}"))

    for i, template in _items(data, "templates"):
        path = f"templates[{i}]({template.get('name')})"
        for j, flavor in enumerate(template.get("flavors") or []):
            unknown(f"{path}.flavors[{j}]", "flavor", flavor, flavors)
        if "queue" in template:
            unknown(f"{path}.queue", "queue", template["queue"], queues)
        families = {v.get("family") for v in template.get("variants") or [] if isinstance(v, dict)}
        for j, flavor in enumerate(template.get("flavors") or []):
            family = flavor_family.get(flavor)
            if family and family not in families:
                issues.append(
                    CatalogIssue(f"{path}.flavors[{j}]", f"flavor {flavor!r} is {family} but the template has no {family} variant")
                )
        for j, parameter in enumerate(template.get("parameters") or []):
            if isinstance(parameter, dict) and parameter.get("name") == "flavor":
                for k, choice in enumerate(parameter.get("choices") or []):
                    unknown(f"{path}.parameters[{j}].choices[{k}]", "flavor", choice, flavors)
            if isinstance(parameter, dict):
                issues.extend(_default_within_bounds(f"{path}.parameters[{j}]", parameter))

    for i, queue in _items(data, "queues"):
        path = f"queues[{i}]({queue.get('name')})"
        for flavor in (queue.get("reserved") or {}) if isinstance(queue.get("reserved"), dict) else ():
            unknown(f"{path}.reserved.{flavor}", "flavor", flavor, flavors)
        for j, target in enumerate((queue.get("preemption") or {}).get("may_preempt") or []):
            unknown(f"{path}.preemption.may_preempt[{j}]", "queue", target, queues)

    for i, tenant in _items(data, "tenants"):
        path = f"tenants[{i}]({tenant.get('name')})"
        for flavor in (tenant.get("quotas") or {}) if isinstance(tenant.get("quotas"), dict) else ():
            unknown(f"{path}.quotas.{flavor}", "flavor", flavor, flavors)
        for j, queue in enumerate(tenant.get("queues") or []):
            unknown(f"{path}.queues[{j}]", "queue", queue, queues)
        for j, template in enumerate(tenant.get("templates") or []):
            unknown(f"{path}.templates[{j}]", "template", template, templates)

    for i, model in _items(data, "models"):
        if "template" in model:
            unknown(f"models[{i}]({model.get('name')}).template", "template", model["template"], templates)

    for i, rule in _items(data, "alerts"):
        for j, queue in enumerate(rule.get("queues") or []):
            unknown(f"alerts[{i}]({rule.get('name')}).queues[{j}]", "queue", queue, queues)

    if data.get("default_tenant") is not None:
        unknown("default_tenant", "tenant", data["default_tenant"], tenants)
    return issues


def _items(data: dict, section: str):
    items = data.get(section)
    if isinstance(items, list):
        yield from ((i, item) for i, item in enumerate(items) if isinstance(item, dict))


def _default_within_bounds(path: str, parameter: dict) -> list[CatalogIssue]:
    default, low, high = parameter.get("default"), parameter.get("min"), parameter.get("max")
    if parameter.get("type") == "choice":
        choices = parameter.get("choices") or []
        if default is not None and default not in choices:
            return [CatalogIssue(f"{path}.default", f"{default!r} is not one of {choices}")]
        return []
    if isinstance(default, (int, float)) and isinstance(low, (int, float)) and isinstance(high, (int, float)):
        if not low <= default <= high:
            return [CatalogIssue(f"{path}.default", f"{default} is outside [{low}, {high}]")]
    return []
