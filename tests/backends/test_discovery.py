"""Local discovery: the real machine, and the parsers of npu-smi and rocm-smi output."""

from __future__ import annotations

import json
import subprocess

import psutil
import pytest

from jupyter_hetero.backends.local.discovery import (
    EmulatedNodesError,
    discover_local_node,
    load_emulated_nodes,
    parse_npu_smi,
    parse_rocm_smi,
)

# The layout `npu-smi info` prints on an Atlas 800T A2 (two devices shown).
NPU_SMI = """\
+------------------------------------------------------------------------------------------------+
| npu-smi 24.1.rc2                 Version: 24.1.rc2                                             |
+---------------------------+---------------+----------------------------------------------------+
| NPU   Name                | Health        | Power(W)    Temp(C)           Hugepages-Usage(page)|
| Chip                      | Bus-Id        | AICore(%)   Memory-Usage(MB)  HBM-Usage(MB)        |
+===========================+===============+====================================================+
| 0     910B3               | OK            | 93.1        36                0    / 0             |
| 0                         | 0000:C1:00.0  | 0           0    / 0          3396 / 65536         |
+===========================+===============+====================================================+
| 1     910B3               | OK            | 91.5        35                0    / 0             |
| 0                         | 0000:C2:00.0  | 0           0    / 0          3394 / 65536         |
+===========================+===============+====================================================+
"""

ROCM_SMI = json.dumps({
    "card0": {"Card series": "AMD Instinct MI300X", "VRAM Total Memory (B)": str(192 * 1024**3)},
    "card1": {"Card series": "AMD Instinct MI300X", "VRAM Total Memory (B)": str(192 * 1024**3)},
    "system": {"Driver version": "6.7.0"},
})


def test_the_real_machine_is_discovered():
    node = discover_local_node("here")
    assert node.name == "here"
    assert node.cpu_milli == psutil.cpu_count(logical=True) * 1000
    assert node.memory_mib == psutil.virtual_memory().total // (1024 * 1024)
    assert node.emulated is False
    assert node.labels["kubernetes.io/hostname"] == "here"


def test_npu_smi_output_is_parsed():
    devices = parse_npu_smi(NPU_SMI)
    assert [d["index"] for d in devices] == [0, 1]
    assert devices[0]["model"] == "910B3"
    assert devices[0]["memory_mib"] == 65536
    assert devices[0]["driver_version"] == "24.1.rc2"
    assert devices[0]["interconnect"] == "hccs"


def test_rocm_smi_output_is_parsed():
    devices = parse_rocm_smi(ROCM_SMI)
    assert [d["model"] for d in devices] == ["AMD Instinct MI300X"] * 2
    assert devices[0]["memory_mib"] == 192 * 1024
    assert devices[0]["driver_version"] == "6.7.0"


def test_an_ascend_machine_is_discovered_through_npu_smi():
    node = discover_local_node("npu", run=lambda argv: NPU_SMI, which=lambda tool: "/usr/local/bin/npu-smi" if tool == "npu-smi" else None)
    assert node.accelerator is not None
    assert (node.accelerator.vendor, node.accelerator.model, node.accelerator.count) == ("ascend", "910B3", 2)
    assert node.family.value == "ascend"


def test_a_failing_tool_is_a_note_not_a_crash():
    def broken(argv):
        raise subprocess.CalledProcessError(9, argv, "", "dcmi module initialize failed")

    node = discover_local_node("npu", run=broken, which=lambda tool: "/usr/bin/" + tool)
    assert node.accelerator is None or node.accelerator.vendor == "nvidia"
    assert any(note.startswith("npu-smi: query failed") for note in node.notes)
    assert any(note.startswith("rocm-smi: query failed") for note in node.notes)


def test_emulated_nodes_with_replicas_are_flagged(tmp_path):
    path = tmp_path / "nodes.yaml"
    path.write_text(
        "nodes:\n  - name: g\n    replicas: 3\n    cpu: 8\n    memory: 32Gi\n"
        "    accelerator: {vendor: nvidia, model: T4, count: 1, memory_mib: 16Gi}\n",
        encoding="utf-8",
    )
    nodes = load_emulated_nodes(path)
    assert [n.name for n in nodes] == ["g-0", "g-1", "g-2"]
    assert all(n.emulated and n.source == "emulated" for n in nodes)
    assert nodes[0].cpu_milli == 8000 and nodes[0].accelerator.memory_mib == 16384


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        pytest.param([{"name": "a", "cpu": 1, "memory": "1Gi"}, {"name": "a", "cpu": 1, "memory": "1Gi"}], "used twice", id="duplicate"),
        pytest.param([{"name": "a", "cpu": 1, "memory": "huge"}], "nodes[0].memory_mib", id="bad memory"),
        pytest.param({"machines": []}, "expected a list", id="wrong shape"),
    ],
)
def test_bad_emulated_nodes_are_rejected_with_the_entry_named(entries, message):
    with pytest.raises(EmulatedNodesError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_emulated_nodes(entries)
