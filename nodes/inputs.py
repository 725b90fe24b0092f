"""Run inputs that are not chat text: a file given when the flow runs (n8n's form upload)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.errors import NodeError
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.formats.n8n_table import BASE
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import NoInputs
from flowbuilder.portvalues import Text
from flowbuilder.registry import register_node
from flowbuilder.trust.pathguard import PathKind
from flowbuilder.trust.terminal import excerpt


class FileInputConfig(BaseModel):
    """Settings of ``input.file``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field("", description="The file to use when the run does not supply one (--input NODE=PATH).")


class PathOut(TypedDict):
    """The output ports of ``input.file``."""

    path: Annotated[Text, "Absolute path of the chosen file."]


@register_node
class FileInput(Node[FileInputConfig, NoInputs, PathOut]):
    """A file chosen at run time (like an upload form); outputs its path for a file loader."""

    type_name = "input.file"
    mappings: ClassVar[Mappings] = {
        "n8n": (
            Adapter(
                "input.file",
                BASE + "formTrigger",
                (2, 2.1, 2.2, 2.3, 2.5, 2.6),
                outputs={"path": "main"},
                hook="form",
                ignore=("formTitle", "formDescription", "formFields", "options", "responseMode"),
            ),
            Adapter(
                "input.file",
                BASE + "manualTrigger",
                (1,),
                also=(BASE + "scheduleTrigger",),
                outputs={"path": "main"},
                export=False,
                note="a manual trigger: give the file to ingest with --input {id}=PATH",
            ),
            Adapter(
                "input.file",
                BASE + "googleDriveTrigger",
                (1,),
                outputs={"path": "main"},
                export=False,
                hook="cloud_file",
                note="watched a Google Drive folder: download {what} and give it with --input {id}=PATH",
            ),
            Adapter(
                "input.file",
                BASE + "googleDrive",
                (1, 2, 3),
                outputs={"path": "main"},
                export=False,
                hook="cloud_file",
                note="downloaded {what} from Google Drive: download it yourself and give it with --input {id}=PATH",
            ),
            Adapter(
                "input.file",
                BASE + "localFileTrigger",
                (1,),
                outputs={"path": "main"},
                export=False,
                hook="cloud_file",
                note="watched the local path {what}: give the file with --input {id}=PATH",
            ),
            Adapter(
                "input.file",
                BASE + "readWriteFile",
                (1,),
                outputs={"path": "main"},
                export=False,
                hook="cloud_file",
                note="read the file {what}: give it with --input {id}=PATH",
            ),
        ),
    }

    capabilities = frozenset({Capability.FILE_INPUT, Capability.LOCAL_ONLY})
    display_name = "File Input"
    aliases = ("On form submission", "Form Trigger", "upload", "file upload")
    category = "Inputs"
    Config = FileInputConfig
    run_input = "file"

    @classmethod
    def config_paths(cls, config: FileInputConfig) -> list[tuple[str, str, PathKind]]:
        return [("path", config.path, "file")] if config.path.strip() else []

    def run(self, inputs: NoInputs, ctx: RunContext) -> PathOut:
        chosen = ctx.run_input or self.config.path
        if not chosen:
            raise NodeError(f"no file given: run with --input {ctx.node_id}=PATH or set the node's path")
        path = ctx.resolve_path(chosen)
        try:
            found = path.is_file()
        except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
            raise NodeError(f"{excerpt(path, 120)}: not a usable file name ({exc.__class__.__name__})") from None
        if not found:
            raise NodeError(f"{path}: no such file; give an existing file with --input {ctx.node_id}=PATH")
        return {"path": str(path)}

    def summarize(self, outputs: PathOut) -> str:
        return Path(outputs["path"]).name
