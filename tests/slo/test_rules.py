"""``--infer-fail-on`` rules: parsed at parse time, bad values are usage errors that say what is valid."""

from __future__ import annotations

import pytest

from pytest_infer.options import BASELINE
from pytest_infer.slo.metrics.catalogue import parse
from pytest_infer.slo.plugin import FAIL_ON
from pytest_infer.slo.rules import (
    Rule,
    RuleError,
    higher_is_better,
    parse_rule,
    parse_rules,
    rule_for,
)


def test_parses_relative_and_absolute_rules():
    rules = parse_rules("ttft_p99:10%, output_tps:5%,e2e_p99_ms:250ms")
    assert rules == (
        Rule("ttft_p99", 10.0, True, "ttft_p99:10%"),
        Rule("output_tps", 5.0, True, "output_tps:5%"),
        Rule("e2e_p99_ms", 250.0, False, "e2e_p99_ms:250ms"),
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ttft_p99", "not METRIC:THRESHOLD"),
        (":10%", "not METRIC:THRESHOLD"),
        ("ttft_p99:ten%", "not a non-negative number"),
        ("ttft_p99:-5%", "not a non-negative number"),
        ("ttft_p99:10ms", "needs a metric named *_ms"),
        ("ttft_p99:10%,ttft_p99:20%", "more than one threshold"),
        (",", "no rules given"),
    ],
)
def test_bad_rules_say_what_is_wrong(text, message):
    with pytest.raises(RuleError, match=message.replace("*", r"\*")):
        parse_rules(text)


def test_a_rule_matches_the_metric_with_a_unit_suffix_or_a_pattern():
    assert parse_rule("ttft_p99:10%").matches(parse("ttft_p99_ms"))
    assert parse_rule("ttft_p99:10%").matches(parse("ttft_p99"))
    assert not parse_rule("ttft_p99:10%").matches(parse("ttft_p99_9_ms"))
    assert not parse_rule("ttft_p9:10%").matches(parse("ttft_p99_ms"))
    assert parse_rule("ttft_*:10%").matches(parse("ttft_p50_ms"))
    rules = parse_rules("ttft_p99:10%,ttft_*:30%")
    assert (
        rule_for(rules, parse("ttft_p99_ms")).threshold == 10
        and rule_for(rules, parse("ttft_p50_ms")).threshold == 30
    )
    assert rule_for(rules, parse("output_tps")) is None
    assert parse_rule("output_tps:5%").matches(
        parse("output_tokens_per_s")
    )  # the SLO suite's name for it
    assert parse_rule("output_tokens_per_s:5%").matches(parse("throughput")) and parse_rule(
        "goodput:5%"
    ).matches(parse("goodput_rps"))


def test_names_match_through_the_catalogue_and_patterns_skip_counts():
    assert parse_rule("ttft_p99_ms:25").matches(parse("ttft_p99_ms")) and not parse_rule(
        "ttft_p99_ms:25"
    ).matches(parse("ttft_p99_s"))  # absolute: same unit
    assert parse_rule("ttft_p99:10%").matches(parse("ttft_p99_s"))  # relative: any unit
    assert parse_rule("*:10%").matches(parse("ttft_p50_ms")) and parse_rule("output_*:5%").matches(
        parse("tps")
    )
    assert not any(
        parse_rule("*:10%").matches(parse(m))
        for m in ("requests", "window_s", "server_pid", "ttft_n")
    )  # no direction
    assert parse_rule("lag_p99:10%").matches(parse("lag_p99_ms")) and parse_rule(
        "*_p99:10%"
    ).matches(parse("lag_p99_ms"))  # names it does not know


def test_direction_follows_the_name():
    assert (
        higher_is_better("output_tps")
        and higher_is_better("goodput_rps")
        and higher_is_better("throughput")
    )
    assert not higher_is_better("ttft_p99_ms") and not higher_is_better("peak_gpu_memory_mib")
    rule = parse_rule("output_tps:5%")
    assert rule.exceeded(parse("output_tps"), 100, 94) and not rule.exceeded(
        parse("output_tps"), 100, 96
    )
    assert not rule.exceeded(parse("output_tps"), 100, 150)  # more throughput is never a regression
    latency = parse_rule("ttft_p99:10%")
    assert latency.exceeded(parse("ttft_p99_ms"), 100, 111) and not latency.exceeded(
        parse("ttft_p99_ms"), 100, 50
    )
    assert parse_rule("e2e_p99_ms:50").exceeded(parse("e2e_p99_ms"), 100, 151)


def test_fail_on_is_a_usage_error_at_parse_time(pytester: pytest.Pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"{FAIL_ON}=ttft_p99:lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [f"ERROR: {FAIL_ON}: 'ttft_p99:lots': threshold 'lots' is not a non-negative number*"]
    )


def test_fail_on_without_a_baseline_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"{FAIL_ON}=ttft_p99:10%")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {FAIL_ON} needs {BASELINE}=FILE*"])


def test_a_missing_baseline_is_a_usage_error(pytester: pytest.Pytester):
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest(f"{BASELINE}=nowhere.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {BASELINE}: nowhere.json: No such file or directory"])
