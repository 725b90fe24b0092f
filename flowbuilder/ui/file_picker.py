"""A picker for file fields (a loader's ``path``): upload a file into the workspace, or choose one of the
sample files or folders in ``data/`` or earlier uploads. It lists the types the file loader reads. The chosen
path is written relative to the flow's folder when it lies under it (so a saved flow keeps working when the
folder moves), else absolute."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from nicegui import events, ui

from flowbuilder.examples import data_dir
from flowbuilder.ui.files import safe_file_name
from flowbuilder.ui.widgets import notify

UPLOADS = "uploads"


def loader_types() -> tuple[str, ...]:
    """The extensions the file loader reads (asked of the registered node, so a new reader shows up here)."""
    from flowbuilder.capabilities import Capability
    from flowbuilder.registry import default_registry

    return tuple(getattr(default_registry().the(Capability.LOADS_FILES), "file_types", ()))


PICKABLE = {*loader_types(), ".jsonl"}


def is_file_field(name: str) -> bool:
    return name == "path" or name.endswith("_file")


MODEL_FIELDS = {"model_file"}
"""Fields that take a model (llm.local's GGUF) rather than data."""


def suffixes_for(name: str) -> set[str]:
    return {".gguf"} if name in MODEL_FIELDS else PICKABLE


def folders(workspace: Path, suffixes: set[str]) -> list[Path]:
    """Folders of sample data (and the uploads folder) holding files of these types: a loader reads a folder whole."""
    if ".gguf" in suffixes:
        return []
    suffixes = set(loader_types())  # what a folder load reads (question files are .jsonl, say: not documents)
    candidates = sorted(p for p in data_dir().iterdir() if p.is_dir()) if data_dir().is_dir() else []
    candidates += [workspace / UPLOADS] if (workspace / UPLOADS).is_dir() else []
    return [f for f in candidates if any(p.suffix.lower() in suffixes for p in f.iterdir() if p.is_file())]


def choices(workspace: Path, suffixes: set[str] = PICKABLE, bundled: Sequence[Path] = ()) -> list[Path]:
    """Files shipped with the node's runtime (the bundled GGUF), sample data files and this workspace's uploads,
    sorted by folder then name."""
    found: list[Path] = [path for path in bundled if path.suffix.lower() in suffixes]
    for folder in (data_dir(), workspace / UPLOADS):
        if folder.is_dir():
            found += sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in suffixes)
    return found


def as_config_path(path: Path, base_dir: Path) -> str:
    path, base_dir = path.resolve(), base_dir.resolve()
    if path.is_relative_to(base_dir):
        return path.relative_to(base_dir).as_posix()
    return str(path)


def pick_file(
    workspace: Path,
    base_dir: Path,
    on_pick: Callable[[str], None],
    suffixes: set[str] = PICKABLE,
    bundled: Sequence[Path] = (),
) -> None:
    with ui.dialog() as dialog, ui.card().classes("w-[34rem] fb-file-picker"):
        ui.label("Choose a file").classes("text-h6")

        async def uploaded(e: events.UploadEventArguments) -> None:
            target = workspace / UPLOADS / safe_file_name(e.file.name, Path(e.file.name).suffix or ".txt")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(await e.file.read())
            dialog.close()
            on_pick(as_config_path(target, base_dir))
            notify(f"Uploaded {target.name} into {target.parent}", type="positive")

        def choose(path: Path) -> None:
            dialog.close()
            on_pick(as_config_path(path, base_dir))

        ui.label("Upload into the workspace").classes("text-subtitle2")
        ui.upload(
            label="Drop a file here, or click +", on_upload=uploaded, auto_upload=True, max_file_size=200_000_000
        ).props(f'accept="{",".join(sorted(suffixes))}"').classes("w-full fb-file-upload")
        if suffixes == PICKABLE:
            ui.label("Reads " + ", ".join(loader_types()) + "; or a folder of them.").classes(
                "text-caption text-grey-8 fb-file-types"
            )
        tree = folders(workspace, suffixes)
        if tree:
            ui.label("Or a folder (every file in it)").classes("text-subtitle2")
            with ui.row().classes("w-full gap-1"):
                for folder in tree:
                    count = sum(1 for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
                    ui.button(f"{folder.name}{os.sep}  ·  {count} files", on_click=lambda p=folder: choose(p)).props(
                        "flat dense no-caps icon=folder"
                    ).classes("fb-folder-choice").mark(f"pick-folder-{folder.name}")
        files = choices(workspace, suffixes, bundled)
        if files:
            ui.label("Or choose one").classes("text-subtitle2")
            with ui.column().classes("w-full gap-0").style("max-height: 40vh; overflow-y: auto"):
                for path in files:
                    size = path.stat().st_size
                    ui.button(
                        f"{path.parent.name}{os.sep}{path.name}  ·  {size / 1024:.0f} KB",
                        on_click=lambda p=path: choose(p),
                    ).props("flat dense no-caps align=left").classes("w-full fb-file-choice").mark(f"pick-{path.name}")
        ui.button("Cancel", on_click=dialog.close).props("flat")
    dialog.open()
