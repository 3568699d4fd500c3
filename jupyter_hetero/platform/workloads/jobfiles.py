"""Where a job keeps its files: checkpoints (kept across attempts), outputs, one folder per attempt
(log, exit records, executed notebook) and an archive per attempt."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["JobPaths", "archive_attempt", "runner_argv"]


@dataclass(frozen=True)
class JobPaths:
    """Where one workload keeps its files under the work directory."""

    root: Path

    @property
    def checkpoints(self) -> Path:
        return self.root / "checkpoints"

    @property
    def outputs(self) -> Path:
        return self.root / "outputs"

    def attempt(self, number: int) -> Path:
        return self.root / "attempts" / str(number)

    def archive(self, number: int) -> Path:
        return self.root / "archive" / f"attempt-{number}"

    def newest_checkpoint(self) -> tuple[Path, float] | None:
        try:
            entries = [(p, p.stat().st_mtime) for p in self.checkpoints.iterdir()]
        except OSError:
            return None
        return max(entries, key=lambda pair: pair[1]) if entries else None


def archive_attempt(paths: JobPaths, number: int, archive: Path) -> None:
    """Keep this attempt's outputs (and executed notebook) apart from later attempts'."""
    archive.mkdir(parents=True, exist_ok=True)
    if paths.outputs.is_dir():
        shutil.copytree(paths.outputs, archive / "outputs", dirs_exist_ok=True)
    attempt_dir = paths.attempt(number)
    for notebook in attempt_dir.glob("*.ipynb") if attempt_dir.is_dir() else ():
        shutil.copy2(notebook, archive / notebook.name)



def runner_argv(spec: dict, attempt_dir: Path) -> list[str]:
    """The runner's arguments for a job's payload (a code cell is written into the attempt's folder)."""
    if "command" in spec:
        return ["command", "--", *spec["command"]]
    if "script" in spec:
        return ["script", spec["script"]["path"], *spec["script"]["args"]]
    if "code" in spec:
        source = attempt_dir / "cell.py"
        source.write_text(spec["code"], encoding="utf-8")
        return ["code", str(source)]
    notebook = spec["notebook"]
    return ["notebook", notebook["path"], "--output", str(attempt_dir / Path(notebook["path"]).name),
            "--parameters", json.dumps(notebook["parameters"])]
