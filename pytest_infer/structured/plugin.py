"""pytest glue of the structured-output suite: its options, fixtures and the keyword matrix
summary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ..session import session_key, tests_a_server
from .options import REQUEST_PATHS, StructuredOptions

# the machinery (hypothesis, jsonschema, httpx) loads when a structured test needs it
if TYPE_CHECKING:
    from .explore import ExploreSettings
    from .judge import Support
    from .runner import RequestPath, StructuredRunner
    from .store import ReproducerStore

EXAMPLES = "--structured-examples"
SEED = "--structured-seed"
KEYWORDS_OPTION = "--structured-keywords"
TIMEOUT = "--structured-timeout"
SHRINK_SECONDS = "--structured-shrink-seconds"
TOKENIZER = "--structured-tokenizer"
DEFAULT_EXAMPLES = 200
DEFAULT_SEED = 0
DEFAULT_TIMEOUT = 60.0
DEFAULT_SHRINK_SECONDS = 90.0
HYPOTHESIS_DIR = "hypothesis-structured"


structured_key = pytest.StashKey["StructuredOptions"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("infer")
    group.addoption(
        EXAMPLES,
        dest="structured_examples",
        metavar="N",
        default=None,
        help="generated schemas per request path in the structured suite (default "
        f"{DEFAULT_EXAMPLES}).",
    )
    group.addoption(
        SEED,
        dest="structured_seed",
        metavar="N",
        default=None,
        help="seed of the schema generator and of the sampling: same seed, same schemas (default "
        f"{DEFAULT_SEED}).",
    )
    group.addoption(
        KEYWORDS_OPTION,
        dest="structured_keywords",
        metavar="LIST",
        default=None,
        help=(
            "only generate schemas with these JSON-Schema keywords (comma-separated), e.g. the "
            "ones a framework claims."
        ),
    )
    group.addoption(
        TIMEOUT,
        dest="structured_timeout",
        metavar="S",
        default=None,
        help="seconds one structured request may take before it counts as a hang (default "
        f"{DEFAULT_TIMEOUT:g}).",
    )
    group.addoption(
        SHRINK_SECONDS,
        dest="structured_shrink_seconds",
        metavar="S",
        default=None,
        help=(
            "time budget per request path for shrinking failures to minimal schemas (default"
            f" {DEFAULT_SHRINK_SECONDS:g})."
        ),
    )
    group.addoption(
        TOKENIZER,
        dest="structured_tokenizer",
        metavar="PATH",
        default=None,
        help="the served model's tokenizer.json (or its folder), for the grammar "
        "probes on servers "
        "without a tokenize route (default: the model folder of a launched "
        "server).",
    )


def _int(option: str, text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise pytest.UsageError(f"{option}: {text!r} is not a whole number") from None
    if value < low:
        raise pytest.UsageError(f"{option}: must be at least {low}, got {value}")
    return value


def _seconds(option: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise pytest.UsageError(f"{option}: {text!r} is not a number of seconds") from None
    if value < 0:
        raise pytest.UsageError(f"{option}: must not be negative, got {text!r}")
    return value


def parse_keywords(text: str) -> frozenset[str]:
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .strategies import KEYWORDS

    names = frozenset(k.strip() for k in text.split(",") if k.strip())
    if unknown := names - KEYWORDS:
        raise pytest.UsageError(
            f"{KEYWORDS_OPTION}: unknown keyword(s) {', '.join(sorted(unknown))}; known: "
            f"{', '.join(sorted(KEYWORDS))}"
        )
    if not names & {"type", "enum", "const"}:
        raise pytest.UsageError(f"{KEYWORDS_OPTION}: needs at least one of type, enum, const")
    return names


def parse(config: pytest.Config) -> StructuredOptions:
    get = config.getoption
    keywords = get("structured_keywords")
    return StructuredOptions(
        examples=_int(EXAMPLES, get("structured_examples"), 1)
        if get("structured_examples")
        else DEFAULT_EXAMPLES,
        seed=_int(SEED, get("structured_seed"), 0) if get("structured_seed") else DEFAULT_SEED,
        keywords=parse_keywords(keywords) if keywords else None,
        timeout=_seconds(TIMEOUT, get("structured_timeout"))
        if get("structured_timeout")
        else DEFAULT_TIMEOUT,
        shrink_seconds=(
            _seconds(SHRINK_SECONDS, get("structured_shrink_seconds"))
            if get("structured_shrink_seconds")
            else DEFAULT_SHRINK_SECONDS
        ),
        tokenizer=_tokenizer(get("structured_tokenizer")),
    )


def _tokenizer(text: str | None) -> Path | None:
    if text is None:
        return None
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .probes import tokenizer_file

    path = Path(text).expanduser()
    if not tokenizer_file(path).is_file():
        raise pytest.UsageError(
            f"{TOKENIZER}: {text!r} is neither a tokenizer.json file nor a folder holding one"
        )
    return path


# structured_*: each option's dest
DESTS = ("examples", "seed", "keywords", "timeout", "shrink_seconds", "tokenizer")


def pytest_configure(config: pytest.Config) -> None:
    """Reads and checks the suite's options; a run that tests no server and names none of them reads
    nothing.
    """
    if not tests_a_server(config) and not any(config.getoption(f"structured_{d}") for d in DESTS):
        return
    config.stash[structured_key] = parse(config)


@pytest.fixture(scope="session")
def structured_options(pytestconfig: pytest.Config) -> StructuredOptions:
    return pytestconfig.stash[structured_key]


@pytest.fixture(scope="session")
def structured_explore_settings(
    structured_options: StructuredOptions, infer_session
) -> ExploreSettings:
    """How the generated-schema sweep runs: the options, and the example database in the report
    dir.
    """
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .explore import ExploreSettings

    return ExploreSettings(
        examples=structured_options.examples,
        seed=structured_options.seed,
        keywords=structured_options.keywords,
        shrink_seconds=structured_options.shrink_seconds,
        database_dir=infer_session.options.report_dir / HYPOTHESIS_DIR,
    )


@pytest.fixture(scope="session")
def structured_store(infer_session) -> ReproducerStore:
    """Failures found so far (``structured-reproducers.json`` in the report dir), replayed first."""
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .store import ReproducerStore

    return ReproducerStore.in_dir(infer_session.options.report_dir)


@pytest.fixture
def structured_runner(
    infer_live_server, infer_endpoint, structured_options: StructuredOptions
) -> Iterator[StructuredRunner]:
    """Sends schemas to the server under test and classifies the answers (seeded sampling); a
    failing answer of a launched server keeps the lines the server logged while it ran."""
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from ..client.http import InferClient
    from .runner import Sampling, StructuredRunner

    with InferClient(infer_endpoint, timeout=structured_options.timeout) as client:
        yield StructuredRunner(
            client,
            sampling=Sampling(seed=1234 + structured_options.seed),
            timeout=structured_options.timeout,
            alive=infer_live_server.alive,
            server_log=infer_live_server if infer_live_server.log_path else None,
        )


@pytest.fixture(scope="session")
def structured_tokenizer(infer_server, structured_options: StructuredOptions) -> Path | None:
    """Where the grammar probes read token ids when the server has no tokenize route: the option,
    else the model folder of a launched server where it holds a tokenizer.json; ``None`` when
    neither is there."""
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .probes import tokenizer_file

    if structured_options.tokenizer is not None:
        return structured_options.tokenizer
    folder = Path(infer_server.model_path) if infer_server.model_path else None
    return (
        folder
        if folder is not None and folder.is_dir() and tokenizer_file(folder).is_file()
        else None
    )


@pytest.fixture(params=REQUEST_PATHS)
def structured_request_path(request: pytest.FixtureRequest, infer_live_server) -> RequestPath:
    """Every way the framework takes a schema: response_format, streamed, and its own extra
    field.
    """
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .runner import RESPONSE_FORMAT, RESPONSE_FORMAT_STREAM, native_path

    if request.param == "native":
        native = native_path(infer_live_server.adapter)
        if native is None:
            pytest.skip(
                f"{infer_live_server.framework} has no schema field of its own besides "
                "response_format"
            )
        return native
    return RESPONSE_FORMAT if request.param == "response_format" else RESPONSE_FORMAT_STREAM


@pytest.fixture(scope="session")
def structured_supports() -> dict[tuple[str, str], Support]:
    """Each target's and route's probed support, kept for the session."""
    return {}


@pytest.fixture
def structured_support(
    structured_runner, infer_target, structured_supports
) -> Callable[[RequestPath], Support]:
    """``structured_support(path)``: what the server does with a schema on ``path`` (honoured,
    ignored, refused...), probed once per target and route: the support test judges it, and a route
    that applies no schema is not re-proved by every schema test after it (on a slow engine each
    would spend minutes saying the same)."""
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .judge import probe_support

    def support(path: RequestPath) -> Support:
        key = (infer_target.id, path.name)
        if key not in structured_supports:
            structured_supports[key] = probe_support(structured_runner.separate(), path)
        return structured_supports[key]

    return support


@pytest.fixture
def structured_applied(structured_request_path, structured_support) -> RequestPath:
    """The route, once the server is seen to apply a schema on it at all; else the test is not
    exercised.
    """
    structured_support(structured_request_path).require_applied(structured_request_path)
    return structured_request_path


@pytest.fixture
def structured_record(infer_session, infer_target):
    """``structured_record(attempt, case=None)``: count an attempt in the keyword x outcome matrix
    of this target, and in the row of its corpus ``case`` when it has one (the gate compares a
    case's valid share)."""

    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .classify import matrix_cells
    from .strategies import keywords_of
    from .table import case_row

    table = infer_session.results.table("structured")

    def record(attempt, case: str | None = None) -> None:
        for row, column in matrix_cells(keywords_of(attempt.schema), attempt.verdict.outcome):
            table.count(infer_target.id, row, column)
        if case is not None:
            table.count(infer_target.id, case_row(case), attempt.verdict.outcome.matrix_class)

    return record


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> None:
    """A passing test that sent its schemas through ``structured_runner`` records what it sent and
    what came back (the results file's ``extra.evidence``), before the report is made; a test that
    names its own evidence keeps it."""
    runner = getattr(item, "funcargs", {}).get("structured_runner")
    if call.when != "call" or call.excinfo is not None or runner is None:
        return
    if (evidence := runner.evidence()) and not any(
        name == "infer_evidence" for name, _ in item.user_properties
    ):
        item.user_properties.append(("infer_evidence", evidence))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    if not tests_a_server(config):
        return
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .table import StructuredTable

    session = config.stash[session_key]
    table = session.results.tables.get("structured")
    if not isinstance(table, StructuredTable) or not table:
        return
    terminalreporter.write_sep("-", "structured output: JSON-Schema keyword x outcome (requests)")
    for target, rows in table.counts.items():
        record = session.results.targets.get(target)
        title = f"{target} ({record.framework} {record.version or 'unknown'})" if record else target
        terminalreporter.write_line(title)
        for line in render_matrix(rows):
            terminalreporter.write_line("  " + line)


def render_matrix(rows: dict[str, dict[str, int]]) -> list[str]:
    """A keyword x outcome-class table of counts, the "all" row first."""
    # lazy: this plugin loads in every pytest run; its machinery only in a structured session
    from .classify import MATRIX_CLASSES

    columns = list(MATRIX_CLASSES) + sorted(
        {c for cells in rows.values() for c in cells} - set(MATRIX_CLASSES)
    )
    order = sorted(rows, key=lambda r: (r != "all", r))
    width = max(len("keyword"), *(len(r) for r in rows)) + 2
    lines = ["keyword".ljust(width) + "".join(c.rjust(11) for c in columns)]
    for row in order:
        lines.append(
            row.ljust(width) + "".join(str(rows[row].get(c, 0) or "-").rjust(11) for c in columns)
        )
    return lines
