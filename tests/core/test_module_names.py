"""No module sits beside a folder of its own name: ``expectations.py`` beside ``expectations/`` once made one import
path name two things, the loader and its YAML files, and which one an import finds depended on Python's lookup order."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pytest_infer"


def modules_beside_their_folder(root: Path) -> list[str]:
    return sorted(
        str(module.relative_to(root))
        for module in root.rglob("*.py")
        if "__pycache__" not in module.parts and module.with_suffix("").is_dir()
    )


def test_no_module_shares_its_name_with_a_folder():
    assert modules_beside_their_folder(PACKAGE) == []


def test_a_module_beside_its_folder_is_found(tmp_path):
    (tmp_path / "suite" / "expectations").mkdir(parents=True)
    (tmp_path / "suite" / "expectations.py").write_text("")
    (tmp_path / "suite" / "declarations.py").write_text("")
    assert modules_beside_their_folder(tmp_path) == ["suite/expectations.py"]
