"""Template defaults fit the machine when it is the whole inventory: a newcomer's first job runs."""

from __future__ import annotations

import pytest

from jupyter_hetero.capability import NodeCapability
from jupyter_hetero.catalog import DEFAULT_CATALOG_PATH, load_catalog
from jupyter_hetero.catalog.fit import fit_to_machine
from jupyter_hetero.platform.workloads.resolve import resolve

LAPTOP = NodeCapability.model_validate({"name": "laptop", "cpu_milli": 2000, "memory_mib": 4096, "source": "local"})
WORKSTATION = NodeCapability.model_validate({
    "name": "ws", "cpu_milli": 16000, "memory_mib": 65536, "source": "local",
    "accelerator": {"vendor": "nvidia", "model": "RTX 4090", "count": 1, "memory_mib": 24564},
})


@pytest.fixture(scope="module")
def shipped():
    return load_catalog(DEFAULT_CATALOG_PATH)


def test_on_a_two_core_four_gib_laptop_every_default_takes_at_most_half(shipped):
    fitted = fit_to_machine(shipped, LAPTOP)
    for template in fitted.templates:
        resolved = resolve(template, {}, fitted)  # the defaults, as a submission without parameters gets them
        assert resolved.request.cpu_milli <= 1000, template.name
        assert resolved.request.memory_mib <= 2048, template.name
    prep = fitted.template("data-preprocessing")
    assert (prep.request.cpu_milli, prep.request.memory_mib) == (1000, 2048)  # was 4 CPU, 16 GiB


def test_parameter_defaults_follow_and_stay_within_their_bounds(shipped):
    fitted = fit_to_machine(shipped, LAPTOP)
    training = fitted.template("training")
    cpu, memory = training.parameter("cpu"), training.parameter("memory")
    assert cpu.default == 1.0 and cpu.min <= 1.0 <= cpu.max  # the shipped minimum was 2 CPU
    assert memory.default == 2048 and memory.min <= 2048
    assert fitted.template("data-preprocessing").parameter("memory").min == 1024  # already below: kept


def test_a_machine_with_a_gpu_caps_device_count_and_memory_but_not_below_what_it_has(shipped):
    fitted = fit_to_machine(shipped, WORKSTATION)
    fine_tuning = fitted.template("fine-tuning")
    assert fine_tuning.request.device_memory_mib == 24564  # the shipped 40 GiB would never fit a 24 GiB card
    assert fine_tuning.parameter("device_memory").default == 24564
    assert fitted.template("hpc").request.devices == 1
    assert isinstance(fitted.template("hpc").parameter("devices").default, int)
    assert fitted.template("interactive").request == shipped.template("interactive").request  # fits already


def test_without_an_accelerator_device_requests_are_left_alone(shipped):
    fitted = fit_to_machine(shipped, LAPTOP)
    assert fitted.template("training").request.devices == shipped.template("training").request.devices
    assert fitted.template("training").request.device_memory_mib == shipped.template("training").request.device_memory_mib


def test_a_share_outside_zero_to_one_is_refused(shipped):
    with pytest.raises(ValueError, match="share"):
        fit_to_machine(shipped, LAPTOP, share=1.5)
