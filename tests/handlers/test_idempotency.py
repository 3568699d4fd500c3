"""A submission named by an Idempotency-Key is stored once however many times it is sent: a second try answers with
the workload the first stored. The key is the submitter's own; a key reused for other work, or a malformed one, is
refused naming the header."""

from __future__ import annotations

JOB = {"kind": "job", "template": "data-preprocessing", "queue": "batch", "command": ["python", "-c", "print(1)"]}
KEY = {"Idempotency-Key": "7b0c6f0e-submission-1"}


async def test_a_submission_sent_twice_with_its_key_is_stored_once(api):
    first = await api("workloads", "POST", JOB, headers=KEY)
    again = await api("workloads", "POST", JOB, headers=KEY)
    assert again["id"] == first["id"]
    events = await api(f"workloads/{first['id']}/events")
    assert [event["type"] for event in events].count("submitted") == 1
    other = await api("workloads", "POST", JOB, headers={"Idempotency-Key": "7b0c6f0e-submission-2"})
    keyless = [await api("workloads", "POST", JOB) for _ in range(2)]
    assert len({first["id"], other["id"], *(job["id"] for job in keyless)}) == 4


async def test_keys_are_each_submitters_own(team, api):
    alice = await api("workloads", "POST", JOB, headers=KEY, as_user="alice")
    bob = await api("workloads", "POST", JOB, headers=KEY, as_user="bob")
    assert alice["id"] != bob["id"] and (alice["user"], bob["user"]) == ("alice", "bob")
    assert (await api("workloads", "POST", JOB, headers=KEY, as_user="alice"))["id"] == alice["id"]


async def test_a_key_reused_for_other_work_is_a_conflict_and_stores_nothing(api, api_error):
    first = await api("workloads", "POST", JOB, headers=KEY)
    before = len(await api("workloads"))
    status, error = await api_error("workloads", "POST", {**JOB, "command": ["python", "-c", "print(2)"]}, headers=KEY)
    assert status == 409 and error["field"] == "Idempotency-Key", error
    assert str(first["id"]) in error["message"] and error["message_zh"] != error["message"]
    assert len(await api("workloads")) == before


async def test_a_malformed_key_is_a_400_naming_the_header(api, api_error):
    for bad in ("", "has space", "x" * 129):
        status, error = await api_error("workloads", "POST", JOB, headers={"Idempotency-Key": bad})
        assert (status, error["field"]) == (400, "Idempotency-Key"), (bad, error)
    assert await api("workloads") == []
