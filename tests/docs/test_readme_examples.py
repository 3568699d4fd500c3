"""README.md's examples run as written, in order, on a fresh clone (issue 37 item 6).

Every fenced block of the README is run, or skipped by a visible marker with its reason right before it
(``<!-- readme-test: skip (needs a Kubernetes cluster) -->``). The demo runs as ``make demo`` starts it, on a copy of
the clone (``tests/demo.py``); each ``bash`` block's lines run one by one in a shell in that clone, as from a new
terminal, and each ``python`` block is a notebook cell run in one real kernel on the same machine, which finds the
server by itself. Each command must exit 0 and print what the README says it does (``readme_checks.py``: every
command and cell has its check, and one without fails). The Configuration table names real settings with their
real defaults.
"""

from __future__ import annotations

import json
import queue
import re
import shlex
import subprocess
from collections.abc import Iterator

import pytest

from ..demo import demo_environ, start_demo
from ..harness import LabServer, ServerLayout, kill_runners_under
from .readme import README, RUNNABLE, SETUP, Block, command_words, configuration_rows, readme_blocks, shell_commands
from .readme_checks import Run, Shown, check_of_cell, check_of_command

pytestmark = pytest.mark.slow

COMMAND_TIMEOUT_S = 120


def run_command(run: Run, block: Block, command: str) -> None:
    check = check_of_command(command)
    if command_words(command)[:3] == ["hetero", "audit", "verify"]:
        run.audited_before = run.api("audit/verify")["entries"]
    finished = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=run.clone, env=run.environ,
                              capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S)
    shown = Shown(finished.returncode, finished.stdout, finished.stderr)
    where = (f"{block}: {command}\nexit code {shown.returncode}\nstdout:\n{shown.stdout[-3000:]}\n"
             f"stderr:\n{shown.stderr[-3000:]}\nserver log:\n{run.lab.log_tail()}")
    assert shown.returncode == 0, where
    try:
        check(run, command_words(command), shown)
    except AssertionError as error:
        raise AssertionError(f"{where}\ncheck {check.__name__}: {error}") from None
    run.commands_run += 1


class Kernel:
    """One real IPython kernel, started as a notebook's would be on the demo's machine (its environment, the clone
    as its directory), that runs the README's cells in order."""

    def __init__(self, run: Run) -> None:
        from jupyter_client.manager import KernelManager  # noqa: PLC0415 - only the python blocks need a kernel

        self.manager = KernelManager(kernel_name="python3")
        self.manager.start_kernel(env=run.environ, cwd=str(run.clone))
        self.client = self.manager.client()
        self.client.start_channels()
        self.client.wait_for_ready(timeout=120)

    def execute(self, code: str) -> Shown:
        texts: list[str] = []
        errors: list[str] = []

        def collect(message: dict) -> None:
            content = message["content"]
            kind = message["header"]["msg_type"]
            if kind == "stream":
                texts.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                texts.append(content["data"].get("text/plain", "") + "\n")
            elif kind == "error":
                errors.append("\n".join(content["traceback"]))

        try:
            reply = self.client.execute_interactive(code, timeout=COMMAND_TIMEOUT_S, output_hook=collect,
                                                    allow_stdin=False)
        except (TimeoutError, queue.Empty) as error:  # jupyter_client says a timeout with either
            errors.append(f"no answer within {COMMAND_TIMEOUT_S} s: {error!r}")
            reply = {"content": {"status": "timeout"}}
        ok = reply["content"]["status"] == "ok" and not errors
        return Shown(0 if ok else 1, "".join(texts), re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors)))

    def stop(self) -> None:
        self.client.stop_channels()
        self.manager.shutdown_kernel(now=True)


def run_cell(run: Run, kernel: Kernel, block: Block) -> None:
    check = check_of_cell(block)
    shown = kernel.execute(block.text)
    where = (f"{block}:\n{block.text}\nstatus {'ok' if shown.returncode == 0 else 'error'}\noutput:\n"
             f"{shown.stdout[-3000:]}\nerror:\n{shown.stderr[-3000:]}\nserver log:\n{run.lab.log_tail()}")
    assert shown.returncode == 0, where
    try:
        check(run, shown)
    except AssertionError as error:
        raise AssertionError(f"{where}\ncheck {check.__name__}: {error}") from None
    run.cells_run += 1


def test_every_setting_in_the_configuration_table_is_one_with_that_default():
    from jupyter_hetero.app import HeteroApp  # noqa: PLC0415
    from jupyter_hetero.backends.kubernetes.config import KubernetesConfig  # noqa: PLC0415
    from jupyter_hetero.hub import HeteroHub  # noqa: PLC0415
    from jupyter_hetero.hub.placement import HeteroPlacement  # noqa: PLC0415

    classes = {cls.__name__: cls for cls in (HeteroApp, KubernetesConfig, HeteroHub, HeteroPlacement)}
    rows = configuration_rows(README.read_text(encoding="utf-8"))
    assert len(rows) >= 40, rows
    for name, stated in rows:
        owner, _, setting = name.rpartition(".")
        cls = classes[owner or "HeteroApp"]
        trait = cls.class_traits(config=True).get(setting)
        assert trait is not None, f"README's Configuration names {name}, which {cls.__name__} does not have"
        if stated is None or setting in cls._trait_default_generators:  # computed when the app starts
            continue
        default = trait.default()
        if isinstance(default, type):  # a Type trait: the README names the class
            default = default.__name__
        if isinstance(default, bool) or not isinstance(default, (int, float)):
            assert stated == (json.dumps(default) if isinstance(default, (list, dict)) or default == "" else
                              str(default)), f"{name}: README says {stated!r}, the default is {default!r}"
        else:
            assert float(stated) == default, f"{name}: README says {stated!r}, the default is {default!r}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Iterator[tuple[LabServer, ServerLayout]]:
    """``make demo``'s server on a fresh clone: the shipped catalog, the demo's nodes, every setting its default."""
    layout = ServerLayout.create(tmp_path_factory.mktemp("readme"))
    lab = start_demo(layout, log_path=layout.root / "demo.log")
    try:
        yield lab, layout
    finally:
        lab.stop()
        kill_runners_under(layout.root)


def test_every_block_is_run_or_skipped_with_its_reason():
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    first = blocks[0]
    # CI and the checker read the README's first block: the two commands that set up and test everything.
    assert [shlex.split(c, comments=True) for c in shell_commands(first)] == [["make", "demo"], ["make", "test"]]
    assert first.line == 3 and first.skip == SETUP, f"{first}: the README opens with the set-up, right under its title"
    unknown = [str(b) for b in blocks if b.skip is None and b.lang not in RUNNABLE]
    assert not unknown, f"blocks neither runnable (bash, python) nor marked 'readme-test: skip (why)': {unknown}"
    runnable = [b for b in blocks if b.skip is None]
    assert len(runnable) >= 3 and {b.lang for b in runnable} >= {"bash", "python"}, [str(b) for b in runnable]
    for block in runnable:  # a command or cell with no check fails here, before any server starts
        if RUNNABLE[block.lang] == "shell":
            assert shell_commands(block), f"{block}: a shell block with no command"
            for command in shell_commands(block):
                check_of_command(command)
        else:
            check_of_cell(block)


@pytest.mark.parametrize(("text", "problem"), [
    pytest.param("<!-- readme-test: skip () -->\n```bash\nmake demo\n```\n", "must say why", id="a skip without why"),
    pytest.param("<!-- readme-test: skip (x) -->\n\nSome words.\n```bash\nls\n```\n", "no block follows",
                 id="a marker before words, not a block"),
    pytest.param("<!-- readme-test: ignore -->\n```bash\nls\n```\n", "knows only", id="an unknown directive"),
    pytest.param("```bash\nls\n", "never closes", id="an unclosed block"),
])
def test_a_marker_that_does_not_say_why_or_skips_nothing_is_an_error(text, problem):
    with pytest.raises(AssertionError, match=problem):
        readme_blocks(text)


def test_a_marked_block_is_skipped_with_its_reason_and_the_rest_are_not():
    blocks = readme_blocks("<!-- readme-test: skip (needs a Kubernetes cluster) -->\n\n```bash\nkubectl get pods\n```\n"
                           "Then:\n```python\n%load_ext jupyter_hetero\n```\n")
    assert [(b.line, b.lang, b.skip) for b in blocks] == [(3, "bash", "needs a Kubernetes cluster"),
                                                         (7, "python", None)]


def test_the_readme_runs_as_written_in_order_on_a_fresh_clone(demo):
    lab, layout = demo
    run = Run(lab, layout.notebooks, demo_environ(layout))
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    kernel: Kernel | None = None
    executed = 0
    try:
        for block in blocks:
            if block.skip:
                continue
            if RUNNABLE[block.lang] == "shell":
                for command in shell_commands(block):
                    run_command(run, block, command)
            else:
                kernel = kernel or Kernel(run)
                run_cell(run, kernel, block)
            executed += 1
    finally:
        if kernel is not None:
            kernel.stop()
    runnable = [b for b in blocks if b.skip is None]
    assert executed == len(runnable) and run.cells_run == sum(b.lang == "python" for b in runnable)
    assert run.commands_run == sum(len(shell_commands(b)) for b in runnable if RUNNABLE[b.lang] == "shell")
