"""Each vendor module against recorded outputs of its tool (tests/data/vendors/*/SOURCES.md says where each
comes from), and the tool absent, failing, or hanging past its timeout: always a note, never an exception."""

from __future__ import annotations

import functools
import os
import shutil
import sys
import threading
import time
from pathlib import Path

import pytest

from jupyter_hetero.backends.base import Launch
from jupyter_hetero.backends.local import telemetry
from jupyter_hetero.backends.local.discovery import discover_local_node, group_devices, vendor_module
from jupyter_hetero.backends.local.processes import LocalBackend
from jupyter_hetero.backends.local.telemetry import _QuietAfterTimeout, sample_devices
from jupyter_hetero.backends.local.vendors import amd, ascend, nvidia, run_tool
from jupyter_hetero.backends.local.vendors.links import link_domains, pci_bus_id

from ..fakes import recorded_tool
from ..harness import until
from . import recorded_amdsmi

DATA = Path(__file__).parent.parent / "data" / "vendors"
ASCEND, AMD = DATA / "ascend", DATA / "amd"


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


@pytest.fixture
def no_toolkits(monkeypatch):
    """No CANN or ROCm install is looked for outside the test data."""
    monkeypatch.setattr(ascend, "TOOLKIT_HOMES", ())
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.setenv("ROCM_PATH", str(AMD / "rocm"))


def replay(answers: dict[str, Path], tool: str):
    """A runner answering ``tool``'s argv from recorded files, and a which that finds only ``tool``."""
    def run(argv: list[str]) -> str:
        path = answers.get(" ".join(argv[1:]))
        if path is None:
            raise OSError(f"no record for {argv}")
        return read(path)
    return run, lambda name: f"/usr/local/bin/{name}" if name == tool else None


# -- Ascend ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("record", "driver", "expected"),
    [
        pytest.param("info-910b4.txt", "24.1.1",
                     [(0, 0, 0, "910B4", "OK", "0000:c1:00.0", 0.0, 26838, 32768),
                      (1, 0, 1, "910B4", "OK", "0000:c2:00.0", 0.0, 29356, 32768)],
                     id="Atlas 800I A2 910B4, process table after it"),
        pytest.param("info-910-a3.txt", "26.0.rc2",
                     [(0, 0, 0, "910", "OK", "0000:9d:00.0", 0.0, 3419, 65536),
                      (0, 1, 1, "910", "OK", "0000:9f:00.0", 0.0, 2874, 65536)],
                     id="Atlas A3 two chips per NPU, Phy-ID column"),
        pytest.param("info-310p3-duo.txt", "25.2.0",
                     [(2, 0, 0, "310P3", "OK", "0000:01:00.0", 0.0, 1529, 44280),
                      (2, 1, 1, "310P3", "OK", "0000:01:00.0", 0.0, 1412, 43693)],
                     id="Atlas 300I Duo 310P3, Device column, no HBM column"),
        pytest.param("info-910a-reconstructed.txt", "22.0.4",
                     [(0, 0, 0, "910A", "OK", "0000:c1:00.0", 0.0, 0, 32768),
                      (1, 0, 1, "910A", "OK", "0000:81:00.0", 0.0, 0, 32768),
                      (2, 0, 2, "910A", "Critical", "0000:41:00.0", None, 0, 32768),
                      (3, 0, 3, "910A", "OK", "0000:01:00.0", 0.0, 0, 32768)],
                     id="Atlas 800 9000 910A, a chip in Critical state"),
        pytest.param("info-atlas-200i-a2-doc.txt", "25.2.0",
                     [(0, 0, 0, "xxx", "OK", None, 0.0, 957, 10810)], id="vendor doc: Bus-Id NA, name redacted"),
        pytest.param("info-310b4-alarm-23.0.0-nputop.txt", "23.0.0",
                     [(0, 0, 0, "310B4", "Alarm", None, 0.0, 3628, 15609)],
                     id="recorded 310B4 in Alarm health, hugepages column, trailing blanks"),
        pytest.param("info-910a-8npu-24.1.rc2-warning-gpustack.txt", "24.1.RC2",
                     [(n, 0, n, "xxx", "Warning" if n in (3, 7) else "OK", bus, 0.0, 0, 32768) for n, bus in enumerate(
                         ["0000:c1:00.0", "0000:81:00.0", "0000:41:00.0", "0000:01:00.0",
                          "0000:c2:00.0", "0000:82:00.0", "0000:42:00.0", "0000:02:00.0"])],
                     id="recorded Atlas 800 9010, 910A x8, two in Warning health, process table after it"),
        pytest.param("info-910a-8npu-21.0.4-haicgu-slurm.txt", "21.0.4",
                     [(n, 0, n, "910A", "OK", bus, 0.0, used, 32768) for n, (bus, used) in enumerate(
                         [("0000:c1:00.0", 1), ("0000:81:00.0", 0), ("0000:41:00.0", 0), ("0000:01:00.0", 0),
                          ("0000:c2:00.0", 0), ("0000:82:00.0", 0), ("0000:42:00.0", 0), ("0000:02:00.0", 0)])],
                     id="recorded Atlas 800 9000 from a SLURM job, 910A x8, Hugepages column"),
        pytest.param("info-910a-2npu-21.0.2-ascend-utils.txt", "21.0.2",
                     [(1, 0, 0, "910A", "OK", "0000:3b:00.0", 0.0, 0, 32768),
                      (4, 0, 1, "910A", "OK", "0000:86:00.0", 0.0, 0, 32768)],
                     id="recorded two cards as NPU 1 and 4, older layout: devices 0 and 1"),
    ],
)
def test_npu_smi_info_tables_of_each_atlas_generation(record, driver, expected):
    found_driver, chips = ascend.parse_info(read(ASCEND / record))
    assert found_driver == driver
    assert [(c.npu, c.chip, c.device, c.model, c.health, c.bus, c.aicore_pct, c.memory_used_mib, c.memory_total_mib)
            for c in chips] == expected


def test_npu_smi_keyed_outputs_are_read_per_chip():
    assert ascend.parse_board(read(ASCEND / "board-atlas-200i-a2-doc.txt")) == ("24.1.RC2", "7.1.0.4.218", None)
    assert ascend.parse_board(read(ASCEND / "board-910b4-driver-mismatch-reconstructed.txt"))[2] == "NOK"
    usages = ascend.parse_keyed(read(ASCEND / "usages-910b.txt"))
    assert usages[0]["HBM Capacity(MB)"] == "65536" and usages[0]["Aicore Usage Rate(%)"] == "0"
    memory = ascend.parse_keyed(read(ASCEND / "memory-200i-a2-doc.txt"))
    assert (memory[0]["Chip ID"], memory[0]["Total Capacity(MB)"]) == ("0", "12288")
    assert ascend.parse_topo(read(ASCEND / "topo-910b-reconstructed.txt")) == [(0, 1), (1, 0)]
    assert ascend.parse_topo(read(ASCEND / "topo-unsupported-doc.txt")) is None


def test_the_cann_version_comes_from_the_toolkit_install_record_or_version_cfg(tmp_path):
    assert ascend.cann_version([str(ASCEND / "toolkit")]) == "8.0.RC2"
    (tmp_path / "version.cfg").write_text(read(ASCEND / "version.cfg"), encoding="utf-8")
    assert ascend.cann_version([str(tmp_path)]) == "8.0.0"
    assert ascend.cann_version([str(tmp_path / "nowhere")]) is None


def test_an_atlas_800i_a2_is_discovered_with_versions_hccs_and_firmware(monkeypatch, no_toolkits):
    monkeypatch.setenv("ASCEND_TOOLKIT_HOME", str(ASCEND / "toolkit"))
    run, which = replay({"info": ASCEND / "info-910b4.txt", "info -t topo": ASCEND / "topo-910b-reconstructed.txt",
                         "info -t board -i 0": ASCEND / "board-910b4-reconstructed.txt",
                         "info -t board -i 1": ASCEND / "board-910b4-reconstructed.txt"}, "npu-smi")
    devices, notes = ascend.discover(run, which)
    assert notes == []
    assert [(d.index, d.model, d.memory_mib, d.link_domain, d.interconnect) for d in devices] == [
        (0, "910B4", 32768, "hccs-0", "hccs"), (1, "910B4", 32768, "hccs-0", "hccs")]
    assert (devices[0].driver_version, devices[0].firmware_version, devices[0].runtime) == (
        "24.1.1", "7.5.0.3.220", "cann 8.0.RC2")


def test_a_driver_firmware_mismatch_and_a_critical_chip_are_health_and_notes(no_toolkits):
    run, which = replay({"info": ASCEND / "info-910a-reconstructed.txt",
                         "info -t topo": ASCEND / "topo-unsupported-doc.txt",
                         **{f"info -t board -i {n}": ASCEND / "board-910b4-driver-mismatch-reconstructed.txt"
                            for n in range(4)}}, "npu-smi")
    devices, notes = ascend.discover(run, which)
    assert devices[2].health == "Critical"
    assert devices[0].health == "driver/firmware compatibility NOK"
    assert any("differs from the tool's (22.0.4)" in note for note in notes)
    assert any(note.startswith("npu-smi: no topology (not supported); the 910 chips are taken as one HCCS") for note in notes)
    assert {d.link_domain for d in devices} == {"hccs-0"}


def test_a_recorded_chip_in_alarm_health_is_discovered_with_that_health(no_toolkits):
    run, which = replay({"info": ASCEND / "info-310b4-alarm-23.0.0-nputop.txt",
                         "info -t topo": ASCEND / "topo-unsupported-doc.txt"}, "npu-smi")
    [device], notes = ascend.discover(run, which)
    assert (device.model, device.health, device.memory_mib, device.interconnect) == ("310B4", "Alarm", 15609, "pcie")
    assert any("Alarm" in note for note in notes), notes



@pytest.mark.parametrize(
    ("record", "health", "withheld"),
    [
        pytest.param("info-910a-8npu-24.1.rc2-warning-gpustack.txt", {3: "Warning", 7: "Warning"}, [],
                     id="recorded: two 910A in Warning stay placeable"),
        pytest.param("info-910a-reconstructed.txt", {2: "Critical"},
                     ["ascend: nothing is placed on device 2 (Critical) until its health clears"],
                     id="a 910A in Critical is withheld"),
    ],
)
def test_the_node_keeps_each_chips_health_and_withholds_the_unhealthy(record, health, withheld, no_toolkits):
    run, which = replay({"info": ASCEND / record, "info -t topo": ASCEND / "topo-unsupported-doc.txt"}, "npu-smi")
    node = discover_local_node("atlas", run=run, which=which, vendors=(ascend,))
    assert {d.index: d.health for d in node.accelerator.devices if d.health} == health
    assert [note for note in node.notes if "nothing is placed" in note] == withheld

def test_hbm_capacity_and_ai_core_use_come_from_the_per_chip_queries_where_the_table_lacks_them(tmp_path):
    table = read(ASCEND / "info-910a-reconstructed.txt").replace("0    / 32768", "NA", 1)
    (tmp_path / "info.txt").write_text(table, encoding="utf-8")
    run, which = replay({"info": tmp_path / "info.txt", "info -t memory -i 0": ASCEND / "memory-910b-reconstructed.txt",
                         "info -t usages -i 0": ASCEND / "usages-910b.txt",
                         "info -t usages -i 2": ASCEND / "usages-910b.txt"}, "npu-smi")
    devices, _notes = ascend.discover(run, which)
    assert devices[0].memory_mib == 32768  # from -t memory
    usage = ascend.sample([0, 2], run, which)
    assert [(u.index, u.util_pct, u.memory_used_mib) for u in usage] == [(0, 0.0, 1966), (2, 0.0, 0)]


def test_recorded_8x910b3_server_is_discovered_from_its_own_table_and_topology(no_toolkits):
    """One real machine's `npu-smi info` and `-t topo` (ms-swift's NPU guide): eight 910B3 in one HCCS mesh."""
    run, which = replay({"info": ASCEND / "info-910b3-8npu-24.1.rc1-ms-swift.txt",
                         "info -t topo": ASCEND / "topo-910b3-8npu-24.1.rc1-ms-swift.txt"}, "npu-smi")
    devices, notes = ascend.discover(run, which)
    assert [(d.index, d.model, d.memory_mib, d.pci_bus, d.interconnect, d.link_domain, d.health) for d in devices] == [
        (n, "910B3", 65536, bus, "hccs", "hccs-0", None)
        for n, bus in enumerate(["0000:c1:00.0", "0000:c2:00.0", "0000:81:00.0", "0000:82:00.0",
                                 "0000:01:00.0", "0000:02:00.0", "0000:41:00.0", "0000:42:00.0"])]
    assert {d.driver_version for d in devices} == {"24.1.rc1.b030"}
    assert notes == [f"npu-smi: board of NPU {n} not read (no record for ['npu-smi', 'info', '-t', 'board', '-i', '{n}'])"
                     for n in range(8)]
    usage = ascend.sample([0, 7], run, which)
    assert [(u.index, u.util_pct, u.memory_used_mib) for u in usage] == [(0, 0.0, 3318), (7, 0.0, 3315)]


@pytest.mark.parametrize(
    "record",
    ["topo-910b3-8npu-24.1.rc1-ms-swift.txt",  # header line starts with a tab, Legend with "NA"
     "topo-910b1-8npu-23.0.rc2-arthurchiao.txt"],  # header without its leading blank, no "NA" legend line
)
def test_recorded_8_npu_topologies_are_one_full_hccs_mesh(record):
    pairs = ascend.parse_topo(read(ASCEND / record))
    assert sorted(pairs) == [(a, b) for a in range(8) for b in range(8) if a != b]
    assert link_domains(pairs, "hccs") == {n: "hccs-0" for n in range(8)}


def test_recorded_910_table_with_redacted_names_and_a_process_table():
    """MindCluster's log-collection guide: eight 910 (names shown as xxx) busy with a training job."""
    driver, chips = ascend.parse_info(read(ASCEND / "info-910-8npu-23.0.rc2.3-mindcluster-doc.txt"))
    assert driver == "23.0.rc2.3"
    assert [(c.npu, c.device, c.model, c.health, c.bus, c.aicore_pct, c.memory_used_mib, c.memory_total_mib)
            for c in chips] == [
        (n, n, "xxx", "OK", bus, 0.0, used, 32768)
        for n, bus, used in [(0, "0000:c1:00.0", 30710), (1, "0000:81:00.0", 30710), (2, "0000:41:00.0", 30710),
                             (3, "0000:01:00.0", 30709), (4, "0000:c2:00.0", 30709), (5, "0000:82:00.0", 30709),
                             (6, "0000:42:00.0", 30710), (7, "0000:02:00.0", 30710)]]


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        pytest.param("board-910b-25.5.1-telegraf-fixture.txt", ("25.5.1", "7.8.0.6.201", "OK"),
                     id="910B (0xD802), Product Name and Serial Number lines"),
        pytest.param("board-910-23.0.5-mindcluster-doc.txt", ("23.0.5", "7.1.0.7.220", "OK"), id="910 (0xD801)"),
    ],
)
def test_recorded_board_queries(record, expected):
    assert ascend.parse_board(read(ASCEND / record)) == expected


def test_recorded_910b1_usages_give_hbm_in_use_from_its_rate(no_toolkits):
    facts = ascend.parse_keyed(read(ASCEND / "usages-910b1-23.0.rc2-arthurchiao.txt"))
    assert [(f["Chip ID"], f["HBM Capacity(MB)"], f["HBM Usage Rate(%)"], f["Aicore Usage Rate(%)"]) for f in facts] == [
        ("0", "65536", "4", "0")]
    table = read(ASCEND / "info-910b3-8npu-24.1.rc1-ms-swift.txt").replace("3318 / 65536", "NA", 1)
    run = lambda argv: {"info": table, "info -t usages -i 0": read(ASCEND / "usages-910b1-23.0.rc2-arthurchiao.txt")}[
        " ".join(argv[1:])]
    usage = ascend.sample([0], run, lambda name: "/usr/local/bin/npu-smi")
    assert [(u.index, u.util_pct, u.memory_used_mib) for u in usage] == [(0, 0.0, 2621)]  # 4 % of 65536 MB


def test_a_recorded_cann_8_5_install_record_is_read():
    assert ascend.cann_version([str(ASCEND / "toolkit-8.5.0-doc")]) == "8.5.0"


def test_a_310p_duo_card_stays_on_pcie():
    run, which = replay({"info": ASCEND / "info-310p3-duo.txt", "info -t topo": ASCEND / "topo-unsupported-doc.txt"},
                        "npu-smi")
    devices, notes = ascend.discover(run, which)
    assert [(d.index, d.interconnect, d.link_domain, d.memory_mib) for d in devices] == [
        (0, "pcie", None, 44280), (1, "pcie", None, 43693)]
    accelerator, _note = group_devices(devices)
    assert (accelerator.model, accelerator.count, accelerator.memory_mib) == ("310P3", 2, 43693)


# -- AMD ------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    ("discover", "topo", "expected", "note"),
    [
        pytest.param("discover-rocm6-mi300x.json", "topo-rocm6-mi300x.json",
                     [(0, "AMD Instinct MI300X", 196592, "xgmi-0", 0, "0000:05:00.0", None),
                      (1, "AMD Instinct MI300X", 196592, "xgmi-0", 0, "0000:26:00.0", None)],
                     None, id="ROCm 6 MI300X hive: Card Series"),
        pytest.param("discover-rocm5-mi250x.json", "topo-rocm5-mi250x.json",
                     [(0, "AMD INSTINCT MI250X", 65520, "xgmi-0", 3, "0000:c1:00.0", None),
                      (1, "AMD INSTINCT MI250X", 65520, "xgmi-0", 3, "0000:c6:00.0", None),
                      (2, "D65209", 0, None, 1, "0000:c9:00.0", "rocm-smi reports no VRAM for card2")],
                     "rocm-smi: rocm-smi reports no VRAM for card2",
                     id="ROCm 5 MI250X: Card series, a warning line, a card answering N/A"),
    ],
)
def test_rocm_smi_discovery_across_rocm_5_and_6(discover, topo, expected, note, no_toolkits):
    run, which = replay({" ".join(amd.DISCOVER_ARGS): AMD / discover, " ".join(amd.TOPO_ARGS): AMD / topo}, "rocm-smi")
    devices, notes = amd.discover(run, which)
    assert [(d.index, d.model, d.memory_mib, d.link_domain, d.numa_node, d.pci_bus, d.health) for d in devices] == expected
    assert devices[0].runtime == "rocm 6.1"
    assert notes == ([note] if note else [])


def test_a_card_its_tool_cannot_read_is_counted_on_its_node_and_never_placed_on(no_toolkits):
    """card2 of the MI250X answer says N/A for everything but its SKU: one of the node's three, withheld."""
    run, which = replay({" ".join(amd.DISCOVER_ARGS): AMD / "discover-rocm5-mi250x.json",
                         " ".join(amd.TOPO_ARGS): AMD / "topo-rocm5-mi250x.json"}, "rocm-smi")
    accelerator, note = group_devices(amd.discover(run, which)[0])
    assert (accelerator.model, accelerator.count, accelerator.memory_mib, note) == ("AMD INSTINCT MI250X", 3, 65520, None)
    assert [(d.index, d.placeable) for d in accelerator.devices] == [(0, True), (1, True), (2, False)]


def test_a_radeon_without_topology_is_on_pcie(no_toolkits):
    run, which = replay({" ".join(amd.DISCOVER_ARGS): AMD / "discover-rocm6-radeon-marimo-9237.json"}, "rocm-smi")
    devices, notes = amd.discover(run, which)
    assert [(d.model, d.memory_mib, d.interconnect, d.driver_version) for d in devices] == [
        ("Radeon RX 7900 XT", 20464, "pcie", None)]
    assert notes[0].startswith("rocm-smi: no topology (no record for")


@pytest.mark.parametrize(
    ("record", "expected"),
    [
        pytest.param("usage-rocm6.json", [(0, 87.0, 80603.7), (1, 0.0, 284.0)], id="ROCm 6: bytes in use"),
        pytest.param("usage-rocm5.json", [(0, 100.0, 32760.0), (1, 0.0, 0.0), (2, None, None)],
                     id="ROCm 5: GPU memory use (%) of the VRAM total"),
    ],
)
def test_rocm_smi_usage(record, expected):
    run, which = replay({" ".join(amd.USAGE_ARGS): AMD / record}, "rocm-smi")
    assert [(u.index, u.util_pct, u.memory_used_mib) for u in amd.sample([0, 1, 2], run, which)] == expected


@pytest.mark.parametrize(
    ("record", "driver", "buses", "numa", "used_mib"),
    [
        pytest.param("rocm-smi-all-rocm5.7.1-mi100x6-telegraf.json", "6.2.4",
                     ["0000:1e:00.0", "0000:22:00.0", "0000:3f:00.0", "0000:43:00.0", "0000:46:00.0", "0000:49:00.0"],
                     0, 6.5, id="ROCm 5.7.1, six MI100, a PID line in system"),
        pytest.param("rocm-smi-all-rocm6.0.2-mi100x4-telegraf.json", "6.3.6",
                     ["0000:83:00.0", "0000:a3:00.0", "0000:c3:00.0", "0000:e3:00.0"], 1, 6.4,
                     id="ROCm 6.0.2, four MI100"),
    ],
)
def test_recorded_mi100_servers_are_discovered_on_pcie(record, driver, buses, numa, used_mib, no_toolkits):
    """telegraf's recorded `rocm-smi ... --json` of real MI100 servers: one answer holds products, VRAM, the
    driver, the topology (every pair PCIE) and the use now, so every query is answered with it."""
    run, which = replay({" ".join(args): AMD / record for args in (amd.DISCOVER_ARGS, amd.TOPO_ARGS, amd.USAGE_ARGS)},
                        "rocm-smi")
    devices, notes = amd.discover(run, which)
    assert notes == []
    assert [(d.index, d.pci_bus) for d in devices] == list(enumerate(buses))
    assert {(d.model, d.memory_mib, d.driver_version, d.interconnect, d.link_domain, d.numa_node, d.health)
            for d in devices} == {("Arcturus GL-XL [Instinct MI100]", 32752, driver, "pcie", None, numa, None)}
    assert [(u.index, u.util_pct, u.memory_used_mib) for u in amd.sample([0, 1], run, which)] == [
        (0, 0.0, used_mib), (1, 0.0, used_mib)]


@pytest.mark.parametrize(
    ("record", "hives", "numa"),
    [
        pytest.param("showtopo-rocm7.2-mi300-0x74a2-x8-ms-swift.txt", [range(8)], [0] * 4 + [1] * 4,
                     id="ROCm 7.2, eight MI300-series (0x74a2) in one hive, a low-power warning, GPU[i]"),
        pytest.param("showtopo-x4-archer2-docs.txt", [range(4)], [0, 1, 2, 3],
                     id="four GPUs in one hive, one NUMA node each, the older GPU i spelling"),
        pytest.param("showtopo-two-hives-x8-unattributed.txt", [range(4), range(4, 8)], [0] * 4 + [1] * 4,
                     id="two hives of four joined over PCIe, tabs before the colons"),
    ],
)
def test_recorded_rocm_smi_topology_tables_give_hives_and_numa_nodes(record, hives, numa):
    """Real ``rocm-smi --showtopo`` tables, as users pasted them: the hives XGMI joins and each card's NUMA node;
    the weight and hop matrices around them are passed over."""
    pairs, nodes = amd.parse_topology_tables(read(AMD / record))
    assert sorted(pairs) == [(i, j) for hive in hives for i in hive for j in hive if i < j]
    assert nodes == dict(enumerate(numa))
    assert link_domains(pairs, "xgmi") == {card: f"xgmi-{n}" for n, hive in enumerate(hives) for card in hive}


def test_where_rocm_smi_has_no_json_for_the_topology_its_tables_are_read(tmp_path, no_toolkits):
    no_json = tmp_path / "no-json.txt"
    no_json.write_text("WARNING: No JSON data to report\n", encoding="utf-8")  # its answer to some --show flags
    run, which = replay({" ".join(amd.DISCOVER_ARGS): AMD / "discover-rocm6-mi300x.json",
                         " ".join(amd.TOPO_ARGS): no_json,
                         " ".join(amd.TOPO_TABLE_ARGS): AMD / "showtopo-rocm7.2-mi300-0x74a2-x8-ms-swift.txt"},
                        "rocm-smi")
    devices, notes = amd.discover(run, which)
    assert notes == []
    assert [(d.interconnect, d.link_domain, d.numa_node) for d in devices] == [("xgmi", "xgmi-0", 0)] * 2


@pytest.fixture
def bindings(monkeypatch, no_toolkits):
    """Install an ``amdsmi`` answering from recordings (see recorded_amdsmi) in place of the real one."""
    def install(**recordings) -> None:
        monkeypatch.setitem(sys.modules, "amdsmi", recorded_amdsmi.machine(**recordings))
    return install


def test_the_amdsmi_bindings_discover_four_mi300a_with_the_link_they_report(bindings):
    """``amd-smi static`` of four MI300A (its README) and ``amd-smi topology --json`` of the same BDFs (its
    CHANGELOG, which shows GPU 0 and 1 joined by XGMI and elides the other pairs, left unanswered here)."""
    bindings(static=read(AMD / "amd-smi-static-mi300a-x4-amdsmi-readme.txt"),
             links=read(AMD / "amd-smi-topology-json-xgmi-excerpt-amdsmi-changelog.txt"))
    devices, notes = amd.discover(*replay({}, "rocm-smi"))
    assert [(d.index, d.pci_bus, d.numa_node, d.interconnect, d.link_domain) for d in devices] == [
        (0, "0000:01:00.0", 0, "xgmi", "xgmi-0"), (1, "0001:01:00.0", 1, "xgmi", "xgmi-0"),
        (2, "0002:01:00.0", 2, "pcie", None), (3, "0003:01:00.0", 3, "pcie", None)]
    assert {(d.model, d.memory_mib, d.driver_version, d.runtime, d.firmware_version, d.health) for d in devices} == {
        ("MI300A", 64289, "6.9.0-rc5+", "rocm 6.1", None, None)}
    assert notes == ["amdsmi: no link type for 5 GPU pair(s); those count as PCIe"]


def test_the_amdsmi_bindings_sample_use_and_vram_in_use(bindings):
    """The bindings' own integration run on a NAVI21: gfx_activity 9 %, VRAM in use 17104896 B."""
    bindings(run=read(AMD / "amdsmi-python-integration-run-navi21-amdsmi-readme.txt"))
    run, which = replay({}, "rocm-smi")
    assert [(u.index, u.util_pct, u.memory_used_mib) for u in amd.sample([0, 1], run, which)] == [
        (0, 9.0, 17104896 / 2**20)]


def test_an_activity_the_driver_cannot_give_is_unknown_not_the_sample_lost(bindings):
    """amdsmi_get_gpu_activity answers "N/A" for a counter the driver leaves at 0xFFFF: the run above, so edited."""
    bindings(run=read(AMD / "amdsmi-python-integration-run-navi21-amdsmi-readme.txt").replace(
        "engine_usage['gfx_activity'] is: 9 %", "engine_usage['gfx_activity'] is: N/A %"))
    assert [(u.util_pct, u.memory_used_mib) for u in amd.sample([0], *replay({}, "rocm-smi"))] == [
        (None, 17104896 / 2**20)]


def test_amdsmi_that_cannot_start_falls_back_to_rocm_smi_with_a_note(bindings):
    bindings(static=read(AMD / "amd-smi-static-mi300a-x4-amdsmi-readme.txt"), init_fails=True)
    record = AMD / "rocm-smi-all-rocm6.0.2-mi100x4-telegraf.json"
    run, which = replay({" ".join(args): record for args in (amd.DISCOVER_ARGS, amd.TOPO_ARGS, amd.USAGE_ARGS)},
                        "rocm-smi")
    devices, notes = amd.discover(run, which)
    assert [d.model for d in devices] == ["Arcturus GL-XL [Instinct MI100]"] * 4
    assert notes == ["amdsmi: query failed (Error code: 18 | AMDSMI_STATUS_INIT_ERROR - Initialization error); "
                     "asking rocm-smi"]
    assert [u.index for u in amd.sample([0, 1], run, which)] == [0, 1]


# -- the registry, NVIDIA, and tools that are absent, failing or hung -----------------------------------------

def test_the_registry_maps_each_family_to_its_module():
    assert vendor_module("ascend") is ascend and vendor_module("amd") is amd and vendor_module("nvidia") is nvidia
    assert vendor_module("cpu") is None


def test_nvlink_pairs_join_direct_peers_and_everything_behind_nvswitches():
    buses = ["0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0"]
    direct = [[(0, buses[1])], [(0, buses[0])], [], []]
    assert link_domains(nvidia.nvlink_pairs(buses, direct), "nvlink") == {0: "nvlink-0", 1: "nvlink-0"}
    switched = [[(2, "0000:c1:00.0")], [(2, "0000:c2:00.0")], [(2, "0000:c1:00.0")], []]
    assert link_domains(nvidia.nvlink_pairs(buses, switched), "nvlink") == {0: "nvlink-0", 1: "nvlink-0",
                                                                            2: "nvlink-0"}
    assert pci_bus_id("00000000:3B:00.0") == "0000:3b:00.0"


def test_every_tool_absent_is_a_plain_node():
    node = discover_local_node("bare", run=lambda argv: pytest.fail(f"ran {argv}"), which=lambda name: None,
                               vendors=(amd, ascend))
    assert node.accelerator is None and node.notes == []
    assert sample_devices("ascend", [0], run=lambda argv: pytest.fail("ran"), which=lambda name: None) == {}


def test_a_failing_tool_is_a_note_not_a_crash(tmp_path):
    recorded_tool(tmp_path, "npu-smi", {})
    recorded_tool(tmp_path, "rocm-smi", {})
    node = discover_local_node("broken", which=lambda name: shutil.which(name, path=str(tmp_path)),
                               run=lambda argv: run_tool([str(tmp_path / argv[0]), *argv[1:]]), vendors=(amd, ascend))
    assert node.accelerator is None
    assert [note.split(" (")[0] for note in node.notes] == ["rocm-smi: query failed", "npu-smi: query failed"]
    assert "no record for ['info']" in node.notes[1]


def test_a_hung_tool_is_bounded_by_its_timeout_and_left_alone_after(tmp_path):
    recorded_tool(tmp_path, "npu-smi", {"info": ASCEND / "info-910b4.txt"}, hang_s=30)
    run = functools.partial(run_tool, timeout=0.5)
    which = functools.partial(shutil.which, path=str(tmp_path))
    started = time.monotonic()
    node = discover_local_node("hung", run=lambda argv: run([str(tmp_path / argv[0]), *argv[1:]]), which=which,
                               vendors=(ascend,))
    assert time.monotonic() - started < 10
    assert node.notes == ["npu-smi: query failed (no answer within 0.5 s)"]
    quiet = _QuietAfterTimeout(quiet_s=60, run=lambda argv: run([str(tmp_path / argv[0]), *argv[1:]]))
    assert sample_devices("ascend", [0], run=quiet, which=which) == {}
    started = time.monotonic()
    assert sample_devices("ascend", [0], run=quiet, which=which) == {}  # refused at once: no second wait
    assert time.monotonic() - started < 0.2


def test_one_usage_pass_asks_the_tool_once_for_every_replica(tmp_path, monkeypatch):
    tool = recorded_tool(tmp_path / "bin", "npu-smi", {"info": ASCEND / "info-910b4.txt"})
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    # Asks by the thread that made them: the pass asks in the caller's thread; the per-process sampler the pass
    # wakes asks in its own, by the path `which` found, whenever it is scheduled (before or after scan returns).
    asked: dict[str, list[list[str]]] = {}
    monkeypatch.setattr(telemetry, "_run", lambda argv: asked.setdefault(
        threading.current_thread().name, []).append(argv) or run_tool(argv))
    backend = LocalBackend(usage_interval_s=0)
    backend.process_devices.interval_s = 3600  # its one pass in this test is the one the scan asks for
    handles = [backend.launch(Launch(
        workload_id=1, attempt=1, replica=replica, node="local", argv=["command", "--", sys.executable, "-c",
                                                                        "import time; time.sleep(30)"],
        env={"PATH": "/usr/bin:/bin"}, cwd=tmp_path, log_path=tmp_path / "log.txt",
        exit_path=tmp_path / f"exit-{replica}.json", devices=(replica,), measurable=True, family="ascend"))
        for replica in (0, 1)]
    try:
        scanned = backend.scan(handles)
        # Each replica's devices, from the one ask (its processes' CPU, memory and IO figures are tested apart).
        assert [{k: v for k, v in scanned[h].items() if k.startswith("device_")} for h in handles] == [
            {"device_util_pct": 0.0, "device_memory_used_mib": 26838.0}, {"device_util_pct": 0.0, "device_memory_used_mib": 29356.0}]
        assert asked.pop(threading.current_thread().name) == [["npu-smi", "info"]]
        # The sampler reads every replica's processes in one ask too, once for the family the scan wanted.
        until(lambda: backend.process_devices.latest("ascend") is not None, "the per-process sampler's pass")
        assert asked == {"hetero-process-devices": [[str(tool), "info"]]}
    finally:
        for handle in handles:
            backend.kill(handle)
