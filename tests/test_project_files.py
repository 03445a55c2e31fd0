"""Packaging facts that keep installs and CI honest."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def _requirements() -> list[str]:
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_requirements_leave_torch_to_comfyui_and_use_headless_opencv():
    names = {_name(r) for r in _requirements()}
    assert not names & {"torch", "torchvision", "torchaudio"}
    assert "opencv-python" not in names and "opencv-contrib-python" not in names


def test_pyproject_mirrors_requirements_and_has_registry_fields():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    project = data["project"]
    assert project["name"] == "gameanim"
    assert sorted(project["dependencies"]) == sorted(_requirements())
    assert project["urls"]["Repository"]
    comfy = data["tool"]["comfy"]
    assert comfy["PublisherId"] and comfy["DisplayName"] and comfy["requires-comfyui"]
    from gameanim import api

    assert api.__version__ == project["version"]


def test_readme_test_command_is_what_ci_runs():
    """CI runs the README's command, adding only the report it lists the skips from (the last step)."""
    ci_lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    runs = [line for line in ci_lines if line.startswith("python -m pytest")]
    assert len(runs) == 1
    command = re.sub(r" --junitxml=\S+| \|\| status=\$\?", "", runs[0])
    assert f"\n{command}\n" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert [line for line in ci_lines if line][-2:] == [
        "python .ci/skips.py .ci-report.xml || status=$((status ? status : 1))",
        'exit "$status"',
    ]


def test_no_eval_or_exec_or_runtime_pip(python_files):
    offenders = []
    for path in python_files:
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("tests/"):
            continue
        text = path.read_text(encoding="utf-8")
        for pattern in (
            r"\beval\(",
            r"\bexec\(",
            r"[\"']-m[\"']\s*,\s*[\"']pip[\"']",
            r"[\"']pip[\"']\s*,\s*[\"']install[\"']",
        ):
            if re.search(pattern, text):
                offenders.append(f"{rel}: {pattern}")
    assert not offenders, offenders


def test_only_one_example_workflow_folder():
    """ComfyUI serves every one of these folders at the same URL; a second one would hide our templates."""
    names = ["example_workflows", "example", "examples", "workflow", "workflows"]
    present = [name for name in names if (ROOT / name).is_dir()]
    assert present == ["workflows"]
