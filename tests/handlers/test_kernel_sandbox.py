"""A hetero kernel on the local backend runs in its sandbox: it starts, runs code and takes interrupts as before,
while the server's processes, its runtime directory (but the kernel's own connection file) and its store are
out of its sight."""

from __future__ import annotations

import asyncio
import json

from .test_kernels import kernelspecs, run_code, start_kernel  # noqa: F401 - the fixture is used by name

PROBE = """
import os
from pathlib import Path
print(len([p for p in os.listdir('/proc') if p.isdigit()]), sorted(os.listdir({runtime!r})),
      Path({store!r}).exists())
"""


async def test_a_kernel_sees_only_its_own_processes_and_connection_file_and_still_takes_interrupts(
        kernelspecs, jp_fetch, jp_serverapp, jp_runtime_dir, hetero_config):  # noqa: F811
    kernel_id = await start_kernel(jp_fetch, "hetero-cpu")
    store = hetero_config["db_url"].removeprefix("sqlite:///")
    printed = (await run_code(jp_serverapp, kernel_id, PROBE.format(runtime=str(jp_runtime_dir), store=store))).split()
    connection = jp_serverapp.kernel_manager.get_kernel(kernel_id).connection_file
    # bwrap's init and the kernel (the server, its other kernels and jobs are not there); one runtime file.
    assert printed[0] == "2", printed
    assert json.loads(printed[1].replace("'", '"')) == [connection.rsplit("/", 1)[1]], printed
    assert printed[2] == "False", "the kernel sees the store"
    # An interrupt (SIGINT to the kernel's process group) reaches the kernel, not the sandbox around it.
    running = asyncio.ensure_future(run_code(jp_serverapp, kernel_id, "import time\ntry:\n time.sleep(30)\n"
                                                                      "except KeyboardInterrupt:\n print('interrupted')"))
    await asyncio.sleep(2)
    await jp_fetch("api", "kernels", kernel_id, "interrupt", method="POST", body="{}")
    assert (await asyncio.wait_for(running, 20)).strip() == "interrupted"
    assert (await run_code(jp_serverapp, kernel_id, "print(6 * 7)")).strip() == "42"
    await jp_fetch("api", "kernels", kernel_id, method="DELETE")
