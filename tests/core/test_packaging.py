"""The wheel ships the plugin entry point, the suites and the SLO profiles."""

from __future__ import annotations

import subprocess
import sys
import zipfile

import pytest

from pytest_infer.paths import bundled


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    out = tmp_path_factory.mktemp("wheel")
    root = bundled("suites").parent
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(root),
        ],
        check=True,
        capture_output=True,
    )
    (path,) = out.glob("pytest_infer-*.whl")
    return zipfile.ZipFile(path)


def test_wheel_has_the_pytest11_entry_point(wheel):
    (entry_points,) = [n for n in wheel.namelist() if n.endswith("entry_points.txt")]
    text = wheel.read(entry_points).decode()
    assert "[pytest11]\ninfer = pytest_infer.plugin" in text
    assert "pytest-infer = pytest_infer.cli:main" in text


def test_wheel_ships_suites_and_profiles(wheel, tmp_path):
    names = set(wheel.namelist())
    suites = {p.relative_to(bundled("suites")).as_posix() for p in bundled("suites").rglob("*.py")}
    profiles = {p.name for p in bundled("slo").glob("*.yaml")}
    assert suites and profiles
    assert {f"pytest_infer/_bundled/suites/{s}" for s in suites} <= names
    assert {f"pytest_infer/_bundled/slo/{p}" for p in profiles} <= names
    assert "pytest_infer/models/tiny_build.py" in names


def test_installed_layout_finds_the_bundled_folders(wheel, tmp_path):
    wheel.extractall(tmp_path)
    probe = (
        "from pytest_infer.paths import bundled; print(bundled('suites')); print(bundled('slo'))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert out.stdout.split() == [
        str(tmp_path / "pytest_infer/_bundled/suites"),
        str(tmp_path / "pytest_infer/_bundled/slo"),
    ]


def test_cli_prints_where_the_installed_suites_are(wheel, tmp_path):
    wheel.extractall(tmp_path)
    probe = "import sys; from pytest_infer.cli import main; sys.exit(main(['path', 'suites']))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert out.stdout.strip() == str(tmp_path / "pytest_infer/_bundled/suites")
