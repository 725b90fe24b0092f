"""The llama.cpp build options of the `local` extra (scripts/test.sh and the builder's install button use them)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flowbuilder.nodes.llms import local_runtime
from flowbuilder.nodes.llms.local_runtime import build_cmake_args, install_env


def include_of(args: str) -> Path:
    [include] = [a for a in args.split(" ") if a.startswith("-DCMAKE_PROJECT_INCLUDE=")]
    return Path(include.split("=", 1)[1])


def test_the_build_leaves_out_llama_cpp_common_library() -> None:
    args = build_cmake_args()
    # scikit-build-core splits CMAKE_ARGS at spaces: every piece must be a whole -D option
    assert all(piece.startswith("-D") for piece in args.split(" ")), args
    assert "-DGGML_NATIVE=OFF" in args and "-DLLAMA_BUILD_TESTS=OFF" in args
    text = include_of(args).read_text(encoding="utf-8")
    assert "set(LLAMA_BUILD_COMMON OFF)" in [line.strip() for line in text.splitlines()]


def test_an_include_under_a_folder_with_a_space_is_copied_to_one_without(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spaced = tmp_path / "my folder" / "llama_lean.cmake"
    spaced.parent.mkdir()
    shutil.copyfile(local_runtime.LEAN_CMAKE, spaced)
    monkeypatch.setattr(local_runtime, "LEAN_CMAKE", spaced)
    include = include_of(build_cmake_args())
    assert " " not in str(include) and include.read_text() == spaced.read_text()


def test_the_install_uses_them_unless_the_user_set_cmake_args(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CMAKE_ARGS", raising=False)
    assert include_of(install_env()["CMAKE_ARGS"]) == include_of(build_cmake_args())
    monkeypatch.setenv("CMAKE_ARGS", "-DGGML_CUDA=ON")
    assert install_env()["CMAKE_ARGS"] == "-DGGML_CUDA=ON"
