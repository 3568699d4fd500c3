"""Every client mistake answers in English (``message``) and Simplified Chinese (``message_zh``), both
from the one translation catalog; before, most errors had no Chinese at all."""

from __future__ import annotations

import pytest

SUBMIT = {"kind": "job", "template": "data-preprocessing", "command": ["true"]}


@pytest.mark.parametrize(
    ("route", "method", "body", "status", "english", "chinese"),
    [
        pytest.param("templates/no-such-thing", "GET", None, 404, "no template named 'no-such-thing'",
                     "没有名为 'no-such-thing' 的模板", id="unknown template"),
        pytest.param("workloads/987654", "GET", None, 404, "workload 987654 does not exist",
                     "工作负载 987654 不存在", id="unknown workload"),
        pytest.param("workloads", "POST", {**SUBMIT, "queue": "nowhere"}, 404, "queue 'nowhere' does not exist",
                     "队列 'nowhere' 不存在", id="unknown queue"),
        pytest.param("workloads", "POST", {**SUBMIT, "env": {"1BAD": "x"}}, 400,
                     "env: '1BAD' is not a valid variable name", "env：'1BAD' 不是有效的变量名", id="bad env name"),
        pytest.param("workloads", "POST", {**SUBMIT, "parameters": {"cpu": 1000}}, 400,
                     "parameters.cpu: 1000 is outside template data-preprocessing's bounds [1, 64]",
                     "parameters.cpu：1000 超出模板 data-preprocessing 允许的范围 [1, 64]", id="parameter out of bounds"),
        pytest.param("workloads", "POST", {**SUBMIT, "parameters": {"cpu": 2.5, "memory": "lots"}}, 400, None, None,
                     id="unit parser's reason"),
        pytest.param("previews", "POST", {"template": "fine-tuning", "parameters": {"devices": 1.5}}, 400,
                     "parameters.devices: must be a whole number", "parameters.devices：必须是整数",
                     id="our own reason, translated inside the sentence"),
        pytest.param("workloads", "POST", {**SUBMIT, "colour": "red"}, 400, "field 'colour': unknown field",
                     "字段 'colour'：未知字段", id="unknown body field"),
    ],
)
async def test_a_client_mistake_is_explained_in_both_languages(api_error, route, method, body, status, english,
                                                               chinese):
    got, error = await api_error(route, method, body)
    if english is None:  # a unit parser's reason has no Chinese: it follows the translated name as is
        problem = error["message"].split(": ", 1)[1]
        assert (got, error["message_zh"]) == (status, f"{error['field']}：{problem}"), error
        return
    assert (got, error["message"], error["message_zh"]) == (status, english, chinese)


async def test_a_bad_query_value_is_named_in_both_languages_with_the_parsers_own_words(api_error):
    status, error = await api_error("templates", task_type="mining")
    assert status == 400 and error["field"] == "task_type"
    problem = error["message"].removeprefix("query parameter 'task_type': ")
    assert problem != error["message"]  # pydantic's wording, which has no Chinese, follows the name in both
    assert error["message_zh"] == f"查询参数 'task_type'：{problem}"
