"""Per-process device use from the vendors' tools: recorded outputs (tests/data/vendors/processes, SOURCES.md says
whence) read back, and the asks made of a replayed tool."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.vendors.per_process import (
    ProcessUse,
    parse_amd_smi_process,
    parse_compute_apps,
    parse_npu_smi_processes,
    parse_pmon,
    parse_xpu_smi_ps,
    process_usage,
)

from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_pmon_rows_are_read_by_the_headers_names_whatever_columns_the_driver_adds():
    ten = parse_pmon(recorded("processes/nvidia-smi-pmon-c3-10col-python.txt"))
    assert ten == [ProcessUse(3485, 0, None, 0.0)] * 3
    twelve = parse_pmon(recorded("processes/nvidia-smi-pmon-c1-12col-fb-ccpm.txt"))
    assert twelve == [ProcessUse(1312, 0, 97.0, 24.0), ProcessUse(1941, 0, 5.0, None)]  # "-": not measured, not 0
    busy = parse_pmon(recorded("processes/nvidia-smi-pmon-idle-8gpu-reconstructed.txt"))
    assert [(use.pid, use.index, use.util_pct) for use in busy] == [(48213, 1, 87.0), (48213, 2, 79.0),
                                                                    (51007, 3, 12.0)]


def test_compute_apps_give_memory_per_process_and_gpu_and_say_when_they_cannot():
    uses = parse_compute_apps(recorded("processes/nvidia-smi-query-compute-apps-reconstructed.csv"))
    assert [(use.pid, use.memory_mib) for use in uses] == [(48213, 30412.0), (48213, 30388.0), (51007, 2048.0),
                                                           (51210, None)]


def test_amd_smi_process_json_gives_vram_per_process_and_gpu_not_a_made_up_share():
    uses = parse_amd_smi_process(recorded("processes/amd-smi-process-json-r9700-x2-rocm7.json"))
    assert len(uses) == 8 and {use.index for use in uses} == {0, 1}
    big = [use for use in uses if use.pid == 213952]
    assert [use.memory_mib for use in big] == [round(21008920000 / 2**20, 1)] * 2
    assert all(use.util_pct is None for use in uses)  # usage.gfx is engine time in ns, not a percentage


@pytest.mark.parametrize(("name", "expected"), [
    pytest.param("ascend/info-910-8npu-23.0.rc2.3-mindcluster-doc.txt", (139667, 0, 30780.0), id="910 mindcluster"),
    pytest.param("ascend/info-910a-8npu-24.1.rc2-warning-gpustack.txt", (37656, 0, 686.0), id="910A gpustack"),
])
def test_npu_smi_info_process_table_gives_memory_per_process_and_npu(name, expected):
    uses = parse_npu_smi_processes(recorded(name))
    assert uses and (uses[0].pid, uses[0].index, uses[0].memory_mib) == expected
    assert all(use.util_pct is None for use in uses)


def test_npu_smi_info_without_a_process_table_names_no_process():
    assert parse_npu_smi_processes(recorded("ascend/info-910b3-8npu-24.1.rc1-ms-swift.txt")) == []


def test_xpu_smi_ps_gives_memory_in_kib_per_process_and_device():
    uses = parse_xpu_smi_ps(recorded("processes/xpu-smi-ps-reconstructed.txt"))
    assert uses[:2] == [ProcessUse(29541, 0, 6144.0), ProcessUse(29541, 1, 6140.0)]


def test_nvidia_asks_two_questions_and_sums_a_process_over_its_gpus():
    run = replay({
        ("--query-compute-apps=gpu_bus_id,pid,used_memory", "--format=csv,noheader,nounits"):
            recorded("processes/nvidia-smi-query-compute-apps-reconstructed.csv"),
        ("pmon", "-c", "1", "-s", "u"): recorded("processes/nvidia-smi-pmon-idle-8gpu-reconstructed.txt"),
    })
    uses, note = process_usage("nvidia", run, installed)
    assert note is None
    assert {use.pid: (use.memory_mib, use.util_pct) for use in uses} == {
        48213: (60800.0, 166.0), 51007: (2048.0, 12.0), 51210: (None, None)}


def test_a_failing_pmon_leaves_memory_and_a_missing_tool_is_a_note():
    run = replay({
        ("--query-compute-apps=gpu_bus_id,pid,used_memory", "--format=csv,noheader,nounits"):
            recorded("processes/nvidia-smi-query-compute-apps-reconstructed.csv"),
        ("pmon", "-c", "1", "-s", "u"): subprocess.CalledProcessError(6, ["nvidia-smi"], stderr="Not Supported"),
    })
    uses, _note = process_usage("nvidia", run, installed)
    assert {use.pid: use.util_pct for use in uses} == {48213: None, 51007: None, 51210: None}
    assert process_usage("intel", run, lambda tool: None) == (
        [], "xpu-smi is not installed: the devices' use per process is not measured")
    uses, note = process_usage("amd", replay({("process", "--json"): "not json"}), installed)
    assert uses == [] and "amd-smi: could not read" in note
    assert process_usage("cpu", run, installed) == ([], None)
