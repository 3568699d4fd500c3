"""README.md read as the test of its examples reads it: its fenced blocks in order, each with the reason it is
skipped where a marker right before it gives one (``<!-- readme-test: skip (needs a Kubernetes cluster) -->``), a
shell block's commands, and the Configuration table's settings with their stated defaults.

```python
blocks = readme_blocks(README.read_text())
[(b.line, b.lang, b.skip) for b in blocks][0]     # -> (3, "bash", SETUP): the README opens with it
shell_commands(blocks[1])                         # -> ['.venv/bin/jupyter hetero submit ...', ...]
```
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass

from ..demo import REPO

__all__ = ["HETERO", "README", "RUNNABLE", "SETUP", "Block", "command_words", "configuration_rows", "readme_blocks",
           "shell_commands"]

README = REPO / "README.md"
HETERO = [".venv/bin/jupyter", "hetero"]
RUNNABLE = {"bash": "shell", "sh": "shell", "python": "cell"}

_FENCE = re.compile(r"^(?P<fence>`{3,}|~{3,})\s*(?P<lang>[\w+-]*)\s*$")
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(?P<directive>.*?)\s*-->$")
_SKIP = re.compile(r"^skip\s*\((?P<reason>.*)\)$")
# Why the README's first block is not run: the README opens with it, bare, and the test does what it does.
SETUP = "the set-up itself: the test starts the demo as make demo does, and make test runs this test"


@dataclass(frozen=True)
class Block:
    """One fenced block of the README: where it starts, its language, its text, and why it is skipped (if it is)."""

    line: int
    lang: str
    text: str
    skip: str | None

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang or 'no language'})"


def readme_blocks(text: str) -> list[Block]:
    """The fenced blocks of ``text`` in order, the first one (the set-up, which the README opens with) skipped for
    ``SETUP``; a ``readme-test`` marker anywhere but right before a block is an error, and so is one that is not
    ``skip (<reason>)``."""
    blocks: list[Block] = []
    lines = text.splitlines()
    marker: tuple[int, str] | None = None
    index = 0
    while index < len(lines):
        line = lines[index].strip()
        if found := _MARKER.match(line):
            assert marker is None, f"README.md:{marker[0] + 1}: a readme-test marker that no block follows"
            marker = (index, found["directive"])
        elif opening := _FENCE.match(lines[index]):
            fence, body = opening["fence"], []
            start = index
            index += 1
            while index < len(lines) and not lines[index].startswith(fence):
                body.append(lines[index])
                index += 1
            assert index < len(lines), f"README.md:{start + 1}: a block that never closes"
            skip = SETUP if not blocks and marker is None else _skip_reason(marker)
            blocks.append(Block(start + 1, opening["lang"].lower(), "\n".join(body), skip))
            marker = None
        elif line and marker is not None:
            raise AssertionError(f"README.md:{marker[0] + 1}: a readme-test marker that no block follows")
        index += 1
    assert marker is None, f"README.md:{marker[0] + 1}: a readme-test marker that no block follows"
    return blocks


def _skip_reason(marker: tuple[int, str] | None) -> str | None:
    if marker is None:
        return None
    line, directive = marker
    skip = _SKIP.match(directive)
    assert skip, f"README.md:{line + 1}: readme-test knows only 'skip (<reason>)', not {directive!r}"
    assert skip["reason"].strip(), f"README.md:{line + 1}: a skipped block must say why"
    return skip["reason"].strip()


def shell_commands(block: Block) -> list[str]:
    """The commands of a shell block, one per line (a trailing backslash continues one); comments and blank lines
    are not commands."""
    commands, pending = [], ""
    for line in block.text.splitlines():
        assert "<<" not in line, f"{block}: a here-document; the test runs a block one line at a time"
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        command, pending = (pending + line).strip(), ""
        if command and not command.startswith("#"):
            commands.append(command)
    assert not pending, f"{block}: the last line continues into nothing"
    return commands


def command_words(command: str) -> list[str]:
    """The command's words, its comment left out, ``.venv/bin/jupyter hetero`` written ``hetero``."""
    words = shlex.split(command, comments=True)
    return ["hetero", *words[2:]] if words[:2] == HETERO else words



_SETTING_ROW = re.compile(r"^\| `(?P<name>[\w.]+)`(?: / `(?P<second>[\w.]+)`)? \| (?P<default>.*?) \| ")


def configuration_rows(text: str) -> list[tuple[str, str | None]]:
    """The README's Configuration table: each setting's name (``KubernetesConfig.x``, ``HeteroApp.x`` or a bare
    ``HeteroApp`` one) with the default it states where that is one plain value (``2.0``, ``local``, ``[]``)."""
    section = text[text.index("## Configuration"):]
    section = section[:section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        if not (row := _SETTING_ROW.match(line)):
            continue
        names = [row["name"], row["second"]] if row["second"] else [row["name"]]
        defaults = re.findall(r"`([^`]*)`", row["default"])
        plain = len(defaults) == len(names) and re.fullmatch(r"(`[^`]*`( / )?)+", row["default"])
        rows += [(name, defaults[i] if plain else None) for i, name in enumerate(names)]
    return rows

