"""A blocker's words of ours (the resource it is short of, a state, no limit, a count of devices) are said in the
reader's language, so a Chinese sentence carries no English word but the names, ids and units it quotes; its stored
parameters stay English, and English reads as it always did."""

from __future__ import annotations

import re

import pytest

from jupyter_hetero.engine import Blocker, render
from jupyter_hetero.engine.explain import STATE_WORDS

QUOTA = {"tenant": "vision", "queue": "training", "used": "2", "nominal": "4"}
# What a sentence may quote as it is: the names above, flavors, and units.
QUOTED = re.compile(r"vision|training|inference|a100-80g|cpu-standard|GiB|CPU")


def _english(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]+", QUOTED.sub(" ", text))


@pytest.mark.parametrize(
    ("blocker", "english"),
    [
        pytest.param(Blocker("quota", "a100-80g", {**QUOTA, "resource": "devices", "borrowing_limit": "unlimited"}),
                     "quota: tenant vision uses 2/4 devices of flavor a100-80g in queue training (borrowing limit "
                     "unlimited)", id="devices, no borrowing limit"),
        pytest.param(Blocker("quota", "cpu-standard", {**QUOTA, "resource": "CPU", "borrowing_limit": "0"}),
                     "quota: tenant vision uses 2/4 CPU of flavor cpu-standard in queue training (borrowing limit 0)",
                     id="CPU"),
        pytest.param(Blocker("quota-not-preemptible", "a100-80g", {**QUOTA, "resource": "GiB memory"}),
                     "quota: tenant vision uses 2/4 GiB memory of flavor a100-80g; queue training is never preempted, "
                     "so it does not borrow quota that would have to be given back", id="memory"),
        pytest.param(Blocker("capacity", "a100-80g", {"free": "1 devices", "need": "2 devices"}),
                     "capacity: flavor a100-80g has 1 devices free, needs 2 devices", id="a count of devices"),
        pytest.param(Blocker("capacity", "cpu-standard", {"free": "0.5 CPU", "need": "4 CPU"}),
                     "capacity: flavor cpu-standard has 0.5 CPU free, needs 4 CPU", id="cores"),
        pytest.param(Blocker("reservation", "a100-80g", {"reserved": "2 devices", "owner": "inference"}),
                     "reserved for inference: 2 devices of flavor a100-80g are kept for queue inference",
                     id="reserved devices"),
        pytest.param(Blocker("exceeds-quota", "a100-80g", {**QUOTA, "resource": "devices", "need": "8",
                                                          "borrowable": "0", "ceiling": "4"}),
                     "request exceeds the tenant's quota: it can never run as asked (it asks 8 devices of flavor "
                     "a100-80g; tenant vision has a quota of 4 and could borrow 0 more)", id="beyond the quota"),
        *(pytest.param(Blocker("after-ok", None, {"workload": 12, "state": state}),
                       f"dependency: waits for workload 12 ({state}) to succeed", id=f"awaiting a {state} workload")
          for state in STATE_WORDS),
    ],
)
def test_a_blockers_words_read_in_chinese_and_its_english_is_unchanged(blocker, english):
    stored = dict(blocker.params)
    assert render(blocker) == english
    chinese = render(blocker, "zh")
    assert re.search(r"[\u4e00-\u9fff]", chinese) and _english(chinese) == [], chinese
    assert blocker.params == stored  # as its events keep it
