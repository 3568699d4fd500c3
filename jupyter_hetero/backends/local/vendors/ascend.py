"""Huawei Ascend NPUs through ``npu-smi``, across the Atlas generations' layouts of its tables.

What is read, and from which command:

- ``npu-smi info``: per chip its NPU (card) and chip id, logical device id (the ``Phy-ID``/``Device``
  column where a card has several chips, else the chip's place in the table: NPU ids may be card slots, 1 and 4
  on a recorded two-card machine, while the runtime counts devices from 0), model, health, PCI bus, AI-core use and HBM
  (or, on inference cards without HBM, device memory) in use / total. One call samples every device.
- ``npu-smi info -t board -i N``: driver (``Software Version``), firmware and whether they are compatible.
- ``npu-smi info -t memory -i N``: HBM capacity, where the table does not give it.
- ``npu-smi info -t usages -i N``: AI-core use and HBM use rate, where the table says ``NA``.
- ``npu-smi info -t topo``: which devices reach each other over HCCS (one domain per HCCS mesh).
- The CANN toolkit's ``ascend_toolkit_install.info`` (``version=``) or ``version.cfg``
  (``toolkit_running_version=[inner:version]``) under ``$ASCEND_TOOLKIT_HOME`` or the default install paths.
"""

from __future__ import annotations

import os
import platform
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import DeviceFacts, DeviceUsage, Runner, Which, failure
from .links import link_domains, numa_node_of, pci_bus_id

__all__ = ["NpuRow", "cann_version", "discover", "parse_board", "parse_info", "parse_keyed", "parse_topo", "sample"]

TOOL = "npu-smi"
# Where a CANN toolkit is, in the order the vendor's set_env.sh and installer would have it.
TOOLKIT_HOMES = ("/usr/local/Ascend/ascend-toolkit/latest", "/usr/local/Ascend/cann")
_HEALTHY = "OK"
_VERSION = re.compile(r"Version:\s*([0-9][\w.-]*)")
_PAIR = re.compile(r"(\d+)\s*/\s*(\d+)")
_VALUE = re.compile(r"\d+\s*/\s*\d+|\S+")  # a cell's values: "3396 / 65536" is one, "NA" another


@dataclass(frozen=True)
class NpuRow:
    """One chip as ``npu-smi info`` shows it (two table rows)."""

    npu: int
    chip: int
    device: int
    model: str
    health: str
    bus: str | None
    aicore_pct: float | None
    memory_used_mib: int | None
    memory_total_mib: int | None


def parse_info(text: str) -> tuple[str | None, list[NpuRow]]:
    """The driver version and every chip from ``npu-smi info``; the process table after it is ignored."""
    version = _VERSION.search(text)
    rows, columns = [], ["AICore(%)", "Memory-Usage(MB)", "HBM-Usage(MB)"]
    for line in text.splitlines():
        if "Process id" in line or "Process name" in line:
            break  # the process table: "| NPU Chip | Process id | ..." rows are not devices
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) >= 3 and cells[1] == "Bus-Id":
            columns = cells[2].split()  # the second row's columns, which differ between generations
        elif len(cells) >= 3 and cells[0][:1].isdigit():
            rows.append(cells)
    memory = "HBM-Usage(MB)" if "HBM-Usage(MB)" in columns else "Memory-Usage(MB)"
    chips = []
    for first, second in zip(rows[::2], rows[1::2]):
        npu, model = (first[0].split() + [""])[:2]
        ids = second[0].split()
        values = dict(zip(columns, _VALUE.findall(second[2])))
        pair = _PAIR.fullmatch(values.get(memory, ""))
        chips.append(NpuRow(
            npu=int(npu), chip=int(ids[0]), device=int(ids[1]) if len(ids) > 1 else len(chips),
            model=_model(model), health=first[1], bus=pci_bus_id(second[1]),
            aicore_pct=_number(values.get("AICore(%)")),
            memory_used_mib=int(pair.group(1)) if pair else None,
            memory_total_mib=int(pair.group(2)) or None if pair else None,
        ))
    return (version.group(1) if version else None), chips


def parse_keyed(text: str) -> list[dict[str, str]]:
    """``Key : value`` lines of ``npu-smi info -t ...``, one dict per chip (a ``Chip ID`` line starts one);
    what comes before the first chip (NPU ID, Chip Count, board facts) is in every chip's dict."""
    head: dict[str, str] = {}
    chips: list[dict[str, str]] = []
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if not colon:
            continue
        key, value = key.strip(), value.strip()
        if key == "Chip ID":
            chips.append({**head})
        (chips[-1] if chips else head)[key] = value
    return chips or ([head] if head else [])


def parse_board(text: str) -> tuple[str | None, str | None, str | None]:
    """(driver, firmware, compatibility) from ``npu-smi info -t board -i N``."""
    facts = parse_keyed(text)[0] if text.strip() else {}
    return facts.get("Software Version"), facts.get("Firmware Version"), facts.get("Compatibility")


def parse_topo(text: str) -> list[tuple[int, int]] | None:
    """Device pairs joined by HCCS from ``npu-smi info -t topo``; None when the device does not support it."""
    header: list[int] | None = None
    pairs = []
    for line in text.splitlines():
        tokens = line.split()
        if header is None and tokens and all(re.fullmatch(r"NPU\d+", t) for t in tokens[:2]):
            header = [int(t[3:]) for t in tokens if re.fullmatch(r"NPU\d+", t)]
        elif header is not None and tokens and re.fullmatch(r"NPU\d+", tokens[0]):
            row = int(tokens[0][3:])
            pairs += [(row, peer) for peer, link in zip(header, tokens[1:]) if link.upper().startswith("HCCS")]
    return pairs if header is not None else None


def cann_version(homes: Sequence[str] | None = None) -> str | None:
    """The CANN toolkit's version from its install record, or None where no toolkit is installed."""
    homes = homes or [home for home in (os.environ.get("ASCEND_TOOLKIT_HOME"), *TOOLKIT_HOMES) if home]
    for home in map(Path, homes):
        for info in (home / f"{platform.machine()}-linux" / "ascend_toolkit_install.info",
                     *home.glob("*-linux/ascend_toolkit_install.info")):
            version = _field(info, r"^version=(\S+)")
            if version:
                return version
        version = _field(home / "version.cfg", r"^toolkit_running_version=\[[^:\]]*:([^\]]+)\]")
        if version:
            return version
    return None


def discover(run: Runner, which: Which) -> tuple[list[DeviceFacts], list[str]]:
    """This machine's NPUs; ``([], [])`` without ``npu-smi``, a note when it fails or disagrees with itself."""
    if which(TOOL) is None:
        return [], []
    try:
        driver, chips = parse_info(run([TOOL, "info"]))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        return [], [f"{TOOL}: query failed ({failure(exc)})"]
    if not chips:
        return [], [f"{TOOL}: found no devices"]
    notes: list[str] = []
    boards = {npu: _board(npu, run, notes) for npu in sorted({chip.npu for chip in chips})}
    domains, topo_note = _hccs_domains(chips, run)
    notes += [topo_note] if topo_note else []
    runtime = cann_version()
    devices = []
    for chip in chips:
        board_driver, firmware, compatible = boards[chip.npu]
        health = None if chip.health.upper() == _HEALTHY else chip.health
        if compatible and compatible.upper() not in ("OK", "NA", "NOT SUPPORT"):
            health = health or f"driver/firmware compatibility {compatible}"
        devices.append(DeviceFacts(
            index=chip.device, vendor="ascend", model=chip.model,
            memory_mib=chip.memory_total_mib or _hbm_capacity(chip, run) or 0,
            driver_version=board_driver or driver, runtime=f"cann {runtime}" if runtime else None,
            firmware_version=firmware, interconnect="hccs" if chip.device in domains else "pcie",
            link_domain=domains.get(chip.device), numa_node=numa_node_of(chip.bus), pci_bus=chip.bus, health=health,
        ))
    if any(board[0] and driver and board[0] != driver for board in boards.values()):
        notes.append(f"{TOOL}: the driver the cards report differs from the tool's ({driver})")
    notes += [f"{TOOL}: NPU {d.index} is {d.health}" for d in devices if d.health]
    return devices, notes


def sample(indexes: Sequence[int], run: Runner, which: Which) -> list[DeviceUsage]:
    """AI-core use and HBM in use of these devices, from one ``npu-smi info``; [] when it does not answer."""
    if which(TOOL) is None:
        return []
    try:
        _driver, chips = parse_info(run([TOOL, "info"]))
    except (OSError, subprocess.SubprocessError, ValueError):
        return []
    by_device = {chip.device: chip for chip in chips}
    found = []
    for index in indexes:
        chip = by_device.get(index)
        if chip is None:
            continue
        util, used = chip.aicore_pct, chip.memory_used_mib
        if util is None or used is None:  # the table says NA on some cards: ask the chip's statistics
            asked_util, asked_used = _usages(chip, run)
            util, used = asked_util if util is None else util, asked_used if used is None else used
        found.append(DeviceUsage(index, util, used))
    return found


def _board(npu: int, run: Runner, notes: list[str]) -> tuple[str | None, str | None, str | None]:
    try:
        return parse_board(run([TOOL, "info", "-t", "board", "-i", str(npu)]))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        notes.append(f"{TOOL}: board of NPU {npu} not read ({failure(exc)})")
        return None, None, None


def _hccs_domains(chips: list[NpuRow], run: Runner) -> tuple[dict[int, str], str | None]:
    try:
        pairs = parse_topo(run([TOOL, "info", "-t", "topo"]))
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        pairs, failed = None, failure(exc)
    else:
        failed = None
    if pairs is not None:
        return link_domains(pairs, "hccs"), None
    # Without a topology the board's 910 chips are taken to share its HCCS mesh, as on every Atlas
    # training board; inference cards (310P) and anything else stay on PCIe.
    boards = [chip.device for chip in chips if chip.model.startswith("910")]
    assumed = link_domains([(boards[0], other) for other in boards], "hccs") if len(boards) > 1 else {}
    return assumed, (f"{TOOL}: no topology ({failed or 'not supported'})" + ("; the 910 chips are taken as one HCCS "
                                                                              "domain" if assumed else ""))


def _hbm_capacity(chip: NpuRow, run: Runner) -> int | None:
    try:
        facts = parse_keyed(run([TOOL, "info", "-t", "memory", "-i", str(chip.npu)]))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    mine = next((f for f in facts if f.get("Chip ID") in (None, str(chip.chip))), {})
    return _int(mine.get("HBM Capacity(MB)") or mine.get("Total Capacity(MB)") or mine.get("Capacity(MB)"))


def _usages(chip: NpuRow, run: Runner) -> tuple[float | None, int | None]:
    """(AI-core %, HBM in use MiB) from the chip's statistics, which give HBM only as a rate of its capacity."""
    try:
        facts = parse_keyed(run([TOOL, "info", "-t", "usages", "-i", str(chip.npu)]))
    except (OSError, subprocess.SubprocessError, ValueError):
        return None, None
    mine = next((f for f in facts if f.get("Chip ID") in (None, str(chip.chip))), {})
    rate, capacity = _number(mine.get("HBM Usage Rate(%)")), _int(mine.get("HBM Capacity(MB)"))
    return _number(mine.get("Aicore Usage Rate(%)")), round(capacity * rate / 100) if rate is not None and capacity else None


def _model(name: str) -> str:
    """``910B3``, ``310P3`` as printed; ``Ascend910`` (Atlas A3) as ``910``."""
    return name if name[:1].isdigit() else name.removeprefix("Ascend").strip() or name


def _field(path: Path, pattern: str) -> str | None:
    try:
        found = re.search(pattern, path.read_text(encoding="utf-8", errors="replace"), re.MULTILINE)
    except OSError:
        return None
    return found.group(1) if found else None


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text is not None else None
    except ValueError:
        return None  # "NA", "-"


def _int(text: str | None) -> int | None:
    number = _number(text)
    return int(number) if number is not None else None
