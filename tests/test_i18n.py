"""Translations: every user-visible string of the Python package and the panel has a current zh_CN
entry in the one catalog, the check says so (and fails on a broken copy), and messages read from it."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest

from jupyter_hetero.catalog.loader import load_catalog
from jupyter_hetero.engine.decisions import Lost
from jupyter_hetero.engine.explain import render
from jupyter_hetero.errors import Forbidden
from jupyter_hetero.i18n import LOCALE_DIR, N_, Message, locale_of, translate
from jupyter_hetero.platform.identity import resolve_identity

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = LOCALE_DIR / "zh_CN" / "LC_MESSAGES" / "jupyter_hetero.po"
PYTHON_STRING = "capacity: flavor {flavor} has {free} free, needs {need}"  # engine/explain.py
PANEL_STRING = "Why it waits"  # labextension/src/components/work/BlockerList.tsx, through props.trans


def _load_tool():
    spec = importlib.util.spec_from_file_location("hetero_i18n_tool", ROOT / "scripts" / "i18n.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


tool = _load_tool()


@pytest.fixture(scope="module")
def wanted():
    return tool.template()


@pytest.fixture
def copy(tmp_path):
    """A copy of the shipped catalog, compiled, for a test to break."""
    target = tmp_path / "zh_CN" / "LC_MESSAGES" / SHIPPED.name
    target.parent.mkdir(parents=True)
    shutil.copy(SHIPPED, target)
    tool.compile_all(tmp_path)
    return target


def _rewrite(path: Path, change) -> None:
    catalog = tool.read(path)
    change(catalog)
    path.write_bytes(tool._po_bytes(catalog))


def test_the_shipped_catalog_translates_every_string_of_both_sides_and_is_compiled(wanted):
    assert tool.check() == []
    assert wanted.get(PYTHON_STRING) is not None and wanted.get(PANEL_STRING) is not None


def test_extraction_finds_the_panel_strings_the_panel_test_finds_and_the_python_ones(wanted):
    ids = {message.id for message in wanted if message.id}
    panel = {m.id for m in wanted if any(path.startswith("labextension/") for path, _ in m.locations)}
    assert len(panel) > 150 and len(ids - panel) > 30
    assert N_("unknown workload credential") in ids - panel


def test_a_fresh_copy_passes(copy, wanted):
    assert tool.check([copy], wanted) == []


@pytest.mark.parametrize("msgid", [pytest.param(PYTHON_STRING, id="python string"),
                                   pytest.param(PANEL_STRING, id="panel string")])
def test_the_check_fails_on_a_catalog_missing_one_string(copy, wanted, msgid, capsys):
    _rewrite(copy, lambda catalog: catalog.delete(msgid))
    tool.compile_all(copy.parent.parent.parent)
    assert [p for p in tool.check([copy], wanted) if "missing" in p] == [f"{copy}: missing: \"{msgid}\""]
    assert tool.main(["check", str(copy)]) == 1
    assert msgid in capsys.readouterr().out


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        pytest.param(lambda c: c.add("a sentence no code says any more", "一句已无人使用的话"), "stale: ",
                     id="stale entry"),
        pytest.param(lambda c: c[PYTHON_STRING].flags.add("fuzzy"), "fuzzy: ", id="fuzzy entry"),
        pytest.param(lambda c: setattr(c[PYTHON_STRING], "string", ""), "untranslated: ", id="empty translation"),
        pytest.param(lambda c: setattr(c[PYTHON_STRING], "string", "容量：规格 {flavor} 空闲 {free}"),
                     "placeholders differ: ", id="lost placeholder"),
    ],
)
def test_the_check_fails_on_a_stale_fuzzy_or_broken_entry(copy, wanted, change, problem):
    _rewrite(copy, change)
    tool.compile_all(copy.parent.parent.parent)
    assert any(problem in found for found in tool.check([copy], wanted)), problem


def test_the_check_fails_when_the_compiled_catalog_is_older_than_the_po(copy, wanted):
    _rewrite(copy, lambda catalog: setattr(catalog[PYTHON_STRING], "string", "容量：规格 {flavor} 空闲 {free}，需 {need}"))
    assert [p.split(": ", 1)[1] for p in tool.check([copy], wanted)] == [
        "jupyter_hetero.mo is not compiled from it (run: python scripts/i18n.py compile)"]


@pytest.mark.parametrize("language", ["zh", "zh-CN", "zh_CN", "zh-Hans"])
def test_every_chinese_tag_reads_the_simplified_chinese_catalog(language):
    assert locale_of(language) == "zh_CN"
    assert translate("No tenant", language) == "无租户"


@pytest.mark.parametrize("language", ["en", "fr", "", "de-DE"])
def test_a_language_without_a_catalog_reads_english(language):
    assert translate("No tenant", language) == "No tenant"


def test_lost_work_renders_from_the_catalog_in_both_languages():
    lost = Lost(None, "", "node-gone", {"node": "gpu-3"})
    assert render(lost) == "node gpu-3 is no longer in the inventory"
    assert render(lost, "zh") == "节点 gpu-3 已不在资源清单中"


def test_an_error_raised_with_a_message_answers_in_both_languages():
    error = Forbidden(Message(N_("this credential was revoked: workload {workload} is {state}"),
                              workload=7, state="succeeded"), reason="credential-revoked")
    assert error.to_json() == {"message": "this credential was revoked: workload 7 is succeeded",
                               "message_zh": "该凭据已被吊销：工作负载 7 的状态为 succeeded",
                               "reason": "credential-revoked"}


def test_a_user_whose_groups_match_no_tenant_is_told_the_groups_in_chinese_too():
    # The Chinese sentence used to leave the groups out; both now come from one catalog entry.
    catalog = load_catalog(ROOT / "jupyter_hetero" / "catalog" / "default_catalog.yaml")
    with pytest.raises(Forbidden) as refused:
        resolve_identity(catalog, "dave", frozenset({"physics", "astro"}))
    answer = refused.value.to_json()
    assert "(groups: astro, physics)" in answer["message"]
    assert "（所在组：astro, physics）" in answer["message_zh"]


@pytest.mark.parametrize(
    ("source", "flagged"),
    [
        pytest.param('raise NotFound(f"workload {wid} does not exist")', True, id="f-string error"),
        pytest.param('raise Conflict("try again")', True, id="plain string error"),
        pytest.param('raise errors.InvalidRequest("a: " + str(x), field="a")', True, id="concatenated string"),
        pytest.param('self.access.deny(identity, "x", "t", f"tenant {t} may not")', True, id="plain denial"),
        pytest.param('raise NotFound(Message(N_("workload {w} does not exist"), w=1))', False, id="message"),
        pytest.param('raise Conflict(str(exc), reason="no-placement")', True, id="another error's English text"),
        pytest.param('raise Conflict(exc.message, reason="no-placement")', False, id="another error's Message"),
        pytest.param('raise ValueError(f"must be {x}")', False, id="not a client error"),
        pytest.param('raise NotFound(Message(f"workload {w} does not exist"))', True, id="a Message of an f-string"),
        pytest.param('raise Forbidden(Message("not yours"), reason="x")', True, id="a Message of an unmarked string"),
        pytest.param('raise InvalidRequest(Message(N_(f"bad {x}")), field="x")', True, id="N_ of an f-string"),
        pytest.param('raise InvalidRequest(message=f"bad {x}", field="x")', True, id="an f-string by keyword"),
        pytest.param('def f(x):\n    why = f"bad {x}"\n    raise InvalidRequest(why, field="x")', True,
                     id="a name bound to an f-string"),
        pytest.param('def f(x):\n    why = Message(N_("bad {x}"), x=x) if x else Message(N_("none"))\n'
                     '    raise InvalidRequest(why, field="x")', False, id="a name bound to messages"),
        pytest.param('def f(x):\n    why = "bad"\ndef g(why):\n    raise NotFound(why)', False,
                     id="a parameter of the same name elsewhere"),
        pytest.param('CHANGE = field(default_factory=lambda: Message(""))', True, id="an empty Message"),
        pytest.param('raise Conflict(Message(TEXTS[kind], kind=kind))', False, id="a message marked elsewhere"),
    ],
)
def test_the_check_finds_client_errors_raised_with_plain_strings(source, flagged):
    assert bool(tool.unmarked_errors_in(source, "m.py")) is flagged


def test_no_client_error_of_the_package_is_raised_with_a_plain_string():
    assert tool.unmarked_errors() == []


def test_a_message_parameter_that_is_a_message_reads_in_the_same_language():
    message = Message(N_("{field}: {problem}"), field="parameters.devices", problem=Message(N_("must be a whole number")))
    assert (message.text("en"), message.text("zh")) == ("parameters.devices: must be a whole number",
                                                        "parameters.devices：必须是整数")


def test_the_notebook_tables_speak_the_language_asked_for():
    from jupyter_hetero.notebook.display import queues_table, templates_table

    template = {"name": "t", "display": {"en": "Training", "zh": "训练"}, "flavors": ["a100-80g"], "queue": "batch",
                "kinds": ["job"], "request": {"cpu_milli": 4000, "memory_mib": 16384}}
    queue = {"name": "batch", "class": "batch", "priority": 10, "pending": 0, "running": 1, "max_wait_s": 3600,
             "preemption": {"may_preempt": []}, "failure": {"retries": 2}}
    english, chinese = templates_table([template]), templates_table([template], "zh")
    assert (english.title, english.columns[0], english.rows[0][1]) == ("Templates", "template", "Training")
    assert (chinese.title, chinese.columns[0], chinese.rows[0][1]) == ("模板", "模板", "训练")
    assert queues_table([queue], "zh").rows[0][5] == "60 分钟" and queues_table([queue]).rows[0][5] == "60 min"


@pytest.mark.parametrize(
    ("environ", "language"),
    [
        ({"JUPYTER_HETERO_LANG": "zh", "LANG": "en_US.UTF-8"}, "zh"),
        ({"JUPYTER_HETERO_LANG": "en", "LANG": "zh_CN.UTF-8"}, "en"),
        ({"LC_ALL": "zh_CN.UTF-8"}, "zh"),
        ({"LANG": "zh_TW.UTF-8"}, "zh"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({}, "en"),
    ],
)
def test_a_session_speaks_the_language_it_is_set_to(environ, language):
    from jupyter_hetero.i18n import session_language

    assert session_language(environ) == language
