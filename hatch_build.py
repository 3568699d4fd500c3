"""Build hook: compile the translation catalogs (.po to .mo and the panel's .json) into the package."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class CompileCatalogs(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if self.target_name != "wheel":
            return  # an sdist ships the .po files; its wheel build compiles them
        spec = importlib.util.spec_from_file_location("hetero_i18n_tool", Path(self.root) / "scripts" / "i18n.py")
        tool = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tool)
        for path in tool.compile_all():
            self.app.display_info(f"compiled {path.relative_to(self.root)}")
