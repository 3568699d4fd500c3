"""NVIDIA GPUs through NVML: a ``pynvml`` answering from recorded ``nvidia-smi`` outputs (tests/data/vendors/nvidia,
SOURCES.md says whence; recorded_nvml says how) read back by the calls discovery and sampling make."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from jupyter_hetero.backends.local.discovery import group_devices
from jupyter_hetero.backends.local.vendors import DeviceUsage, nvidia

from . import recorded_nvml
from ..fakes import installed, replay

DATA = Path(__file__).parent.parent / "data" / "vendors" / "nvidia"


def recorded(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


@pytest.fixture
def nvml(monkeypatch):
    """Install a ``pynvml`` answering from recordings in place of the real one, and forget the loaded one."""
    def install(**recordings: object) -> None:
        monkeypatch.setitem(sys.modules, "pynvml", recorded_nvml.machine(**recordings))
        monkeypatch.setattr(nvidia, "_state", {})
    return install


@pytest.mark.parametrize(
    ("xml", "facts", "use", "health"),
    [
        pytest.param("nvidia-smi-q-x-tesla-t4-telegraf.xml",
                     ("Tesla T4", 15360, "515.105.01", "cuda 11.7", "90.04.84.00.06", "0000:00:1e.0"),
                     DeviceUsage(0, 0.0, 1032.0), None, id="Tesla T4, driver 515"),
        pytest.param("nvidia-smi-q-x-rtx-3080-v13-telegraf.xml",
                     ("GeForce RTX 3080", 10240, "595.58.03", "cuda 13.2", "94.02.71.40.72", "0000:0c:00.0"),
                     DeviceUsage(0, 65.0, 9184.0), None, id="RTX 3080 busy, driver 595"),
        # In MIG mode the GPU has no whole-GPU utilisation (N/A), but its memory in use is still read; split into
        # instances, it is not placed on whole.
        pytest.param("nvidia-smi-q-x-a100-sxm4-v12-telegraf.xml",
                     ("A100-SXM4-80GB", 81920, "535.54.03", "cuda 12.2", "92.00.36.00.02", "0000:01:00.0"),
                     DeviceUsage(0, None, 50.0), "MIG mode: split into instances, not given whole",
                     id="A100 SXM4 in MIG mode"),
    ],
)
def test_a_gpu_is_discovered_and_sampled_as_nvidia_smi_recorded_it(nvml, xml, facts, use, health):
    nvml(xml=recorded(xml))
    devices, notes = nvidia.discover(replay({}), installed)
    assert notes == []
    [device] = devices
    assert (device.model, device.memory_mib, device.driver_version, device.runtime, device.firmware_version,
            device.pci_bus) == facts
    assert (device.vendor, device.interconnect, device.link_domain, device.health) == ("nvidia", "pcie", None, health)
    assert nvidia.sample([0], replay({}), installed) == [use]


def test_a_driver_that_does_not_load_is_a_note_and_no_devices(nvml):
    nvml(xml=recorded("nvidia-smi-q-x-tesla-t4-telegraf.xml"), init_fails=True)
    assert nvidia.discover(replay({}), installed) == ([], ["nvml: not available (Driver Not Loaded)"])
    assert nvidia.sample([0], replay({}), installed) == []


def test_a_device_that_vanished_is_left_out_of_a_sample(nvml):
    nvml(xml=recorded("nvidia-smi-q-x-tesla-t4-telegraf.xml"))
    assert nvidia.sample([0, 1], replay({}), installed) == [DeviceUsage(0, 0.0, 1032.0)]


def test_eight_a100_on_nvswitches_are_one_nvlink_domain(nvml):
    """A blog's `nvidia-smi -a` of eight A100-SXM4-40GB and its `topo -m` (NV12 between every pair: 84 links
    a GPU, more than its 12, so each GPU's links end at NVSwitches)."""
    nvml(query=recorded("nvidia-smi-a-a100-sxm4-40gb-x8-535.129.03-xuesongtap-blog.txt"),
         topology=recorded("topo-m-a100-sxm4-40gb-x8-nv12-xuesongtap-blog.txt"))
    devices, notes = nvidia.discover(replay({}), installed)
    assert notes == []
    assert [d.pci_bus for d in devices] == [f"0000:{bus}:00.0" for bus in ("2f", "35", "62", "67", "9f", "a5", "c8", "cd")]
    assert {(d.model, d.memory_mib, d.driver_version, d.runtime, d.interconnect, d.link_domain) for d in devices} == {
        ("A100-SXM4-40GB", 40960, "535.129.03", "cuda 12.2", "nvlink", "nvlink-0")}
    assert devices[0].firmware_version == "92.00.36.00.04"
    assert nvidia.sample([0, 7], replay({}), installed) == [DeviceUsage(0, 0.0, 4.0), DeviceUsage(7, 0.0, 4.0)]


def test_the_numa_node_is_the_memory_affinity_topo_m_shows(nvml):
    """`topo -m` of an eight-H100 server (NV18, NUMA Affinity 0 for GPUs 0-3 and 1 for 4-7; GPU NUMA ID N/A, so
    nvmlDeviceGetNumaNodeId has nothing to say), over the eight A100 above: another machine of the same shape."""
    nvml(query=recorded("nvidia-smi-a-a100-sxm4-40gb-x8-535.129.03-xuesongtap-blog.txt"),
         topology=recorded("topo-m-h100-x8-nv18-thunderkittens-167.txt"))
    devices, _ = nvidia.discover(replay({}), installed)
    assert [d.numa_node for d in devices] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert {d.link_domain for d in devices} == {"nvlink-0"}


def test_eight_busy_v100s_on_pcie_are_sampled_each(nvml):
    """A cloud VM's eight V100S-PCIE-32GB under load (`-q -x`, driver 460): no NVLink, each GPU its own use."""
    nvml(xml=recorded("nvidia-smi-q-x-v100s-pcie-32gb-x8-460.73.01-datakit.xml"))
    devices, notes = nvidia.discover(replay({}), installed)
    assert notes == [] and len(devices) == 8
    assert {(d.model, d.memory_mib, d.driver_version, d.runtime, d.interconnect, d.link_domain) for d in devices} == {
        ("Tesla V100S-PCIE-32GB", 32510, "460.73.01", "cuda 11.2", "pcie", None)}
    used = nvidia.sample(range(8), replay({}), installed)
    assert [u.index for u in used] == list(range(8)) and used[0] == DeviceUsage(0, 97.0, 31689.0)


def test_a_gpu_fallen_off_the_bus_is_listed_unreachable_and_the_others_discovered(nvml):
    """The eight A100 above, GPU 3's block replaced by what `nvidia-smi -a -i 0` printed of a GPU it could not
    reach (NVIDIA/nvidia-docker issue #1553): NVML answers that GPU's handle with the error, not the machine's."""
    lines = recorded("nvidia-smi-a-a100-sxm4-40gb-x8-535.129.03-xuesongtap-blog.txt").splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("GPU 0000")]
    lost = "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error"
    nvml(query="\n".join([*lines[:starts[3]], lost, *lines[starts[4]:]]),
         topology=recorded("topo-m-a100-sxm4-40gb-x8-nv12-xuesongtap-blog.txt"))
    devices, notes = nvidia.discover(replay({}), installed)
    assert notes == [] and len(devices) == 8
    assert [d.index for d in devices if d.health] == [3] and devices[3].health == "unreachable: Unknown Error"
    assert {d.link_domain for n, d in enumerate(devices) if n != 3} == {"nvlink-0"} and devices[3].link_domain is None
    accelerator, note = group_devices(devices)
    assert (accelerator.model, accelerator.count, accelerator.memory_mib, note) == ("A100-SXM4-40GB", 8, 40960, None)
    assert [d.index for d in accelerator.devices if not d.placeable] == [3]
    assert [u.index for u in nvidia.sample(range(8), replay({}), installed)] == [0, 1, 2, 4, 5, 6, 7]
