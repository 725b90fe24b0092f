"""Turning records into labelled text: the row labeller and the stringify parser.

Templates use ``{Column Name}`` placeholders (spaces allowed) and ``{{``/``}}`` for literal braces,
the same surface as LangFlow's Parser (``str.format``), but they are read with a regex and filled by
lookup only: user data is never passed to ``str.format`` and nothing is ever evaluated.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from flowbuilder.capabilities import Capability
from flowbuilder.data import Document, Hit
from flowbuilder.errors import NodeError
from flowbuilder.formats import flowise_table as FW
from flowbuilder.formats import langflow_table as LF
from flowbuilder.formats.adapters import Adapter, Mappings
from flowbuilder.node import Node, RunContext
from flowbuilder.nodes.io import RecordsIn, RecordsOut
from flowbuilder.portvalues import AnyValue, Text
from flowbuilder.registry import register_node

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}|[{}]")


class TemplateSyntaxError(ValueError):
    """A template with a stray brace or an empty ``{}``."""


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text and placeholder names, alternating."""

    parts: tuple[str | tuple[str], ...]

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(part[0] for part in self.parts if isinstance(part, tuple)))

    def render(self, lookup: Callable[[str], str]) -> str:
        return "".join(part if isinstance(part, str) else lookup(part[0]) for part in self.parts)


def parse_template(template: str) -> Template:
    """Split a template into literals and ``{name}`` placeholders; raises :class:`TemplateSyntaxError`."""
    parts: list[str | tuple[str]] = []
    position = 0
    for match in _TOKEN.finditer(template):
        literal = template[position : match.start()]
        token = match.group()
        position = match.end()
        if token in ("{{", "}}"):
            parts.append(literal + token[0])
            continue
        if match.group(1) is None:
            column = match.start() + 1
            raise TemplateSyntaxError(
                f"unmatched '{token}' at character {column}; write {{{{ or }}}} for a literal brace"
            )
        name = match.group(1)
        if not name.strip():
            where = match.start() + 1
            raise TemplateSyntaxError(f"empty placeholder '{{}}' at character {where}; put a column name inside")
        parts.extend([literal, (name,)])
    parts.append(template[position:])
    return Template(tuple(p for p in parts if p != ""))


def _lookup_name(name: str, available: Mapping[str, Any]) -> str | None:
    """The key ``name`` refers to: exact, else ignoring surrounding spaces (``{ Name }``)."""
    if name in available:
        return name
    stripped = name.strip()
    return stripped if stripped in available else None


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def _parse_or_fail(template: str, what: str) -> Template:
    try:
        return parse_template(template)
    except TemplateSyntaxError as exc:
        raise NodeError(f"{what} template: {exc}.") from exc


def _template_problems(template: str) -> list[tuple[str | None, str]]:
    """A template's syntax error as a config problem, so validation reports it before any run."""
    try:
        parse_template(template)
    except TemplateSyntaxError as exc:
        return [(None, f"template: {exc}")]
    return []


class RowLabellerConfig(BaseModel):
    """Settings of ``labeller.row``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(
        "",
        description="How to render each record: {Column Name} placeholders ({{ }} for literal braces). "
        "Empty: label every non-empty column as 'Column: value' lines.",
        json_schema_extra={"multiline": True},
    )
    join: bool = Field(
        False, description="Output ONE document of all rendered records joined by the separator (LangFlow's Parser)."
    )
    separator: str = Field("\n", description="Placed between records when join is on.")
    meta_columns: list[str] = Field(
        default_factory=list,
        description="Columns also copied into each record's metadata as top-level fields (filterable in stores), "
        "like the course CLI's --meta-cols.",
    )


@register_node
class RowLabeller(Node[RowLabellerConfig, RecordsIn, RecordsOut]):
    """Render each record's columns as labelled text so every chunk says what its values mean."""

    type_name = "labeller.row"
    mappings: ClassVar[Mappings] = {
        "langflow": (
            # One LangFlow Parser is either a row labeller (a pattern over table rows) or a stringifier: the
            # "parser" hook decides from the pattern and what feeds it.
            Adapter(
                "labeller.row",
                "ParserComponent",
                also=("parser", "ParseData"),
                inputs={"records": "input_data"},
                outputs={"records": "parsed_text"},
                in_aliases={"data": "records"},
                out_aliases={"text": "records"},
                **LF.PARSER,
            ),
        ),
        "flowise": (
            FW.fold(
                "row labeller: Flowise's CSV loader writes each row's columns as 'column: value' lines (every "
                "column; the template is not carried)"
            ),
        ),
    }

    capabilities = frozenset({Capability.LABELS_ROWS, Capability.LOCAL_ONLY})
    display_name = "Label Rows"
    aliases = ("Parser", "row template", "format rows")
    category = "Transform"
    Config = RowLabellerConfig
    stream_in = "records"
    stream_out = "records"

    @classmethod
    def can_stream(cls, config: BaseModel) -> bool:
        assert isinstance(config, RowLabellerConfig)
        return not config.join  # one document of every record needs them all

    @classmethod
    def config_problems(cls, config: RowLabellerConfig) -> list[tuple[str | None, str]]:
        return _template_problems(config.template)

    def run(self, inputs: RecordsIn, ctx: RunContext) -> RecordsOut:
        records = inputs["records"]
        template = _parse_or_fail(self.config.template, "labeller") if self.config.template else None
        rendered: list[Document] = []
        for index, record in enumerate(records):
            if index % 1000 == 0:
                ctx.progress(index, len(records))
            text = render_record(record, template)
            metadata = {k: v for k, v in record.metadata.items() if k != "record_spans"}
            if self.config.meta_columns:
                metadata.update(_meta_columns(record, self.config.meta_columns))
            rendered.append(Document(text=text, metadata=metadata))
        ctx.progress(len(records), len(records))
        if rendered:
            ctx.details["first_record"] = rendered[0].text
        if not self.config.join:
            return {"records": rendered}
        return {"records": [join_records(rendered, self.config.separator)]}

    def summarize(self, outputs: RecordsOut) -> str:
        records = outputs["records"]
        if self.config.join and len(records) == 1:
            return f"1 document ({len(records[0].metadata.get('record_spans', []))} records)"
        return f"{len(records)} records"


def _meta_columns(record: Document, names: list[str]) -> dict[str, Any]:
    columns = record.metadata.get("columns")
    columns = columns if isinstance(columns, dict) else {}
    missing = [name for name in names if name not in columns]
    if missing:
        raise NodeError(
            f"meta_columns {', '.join(missing)} not in record {record.record_id or '?'} "
            f"({record.source or 'unknown source'}); columns: {', '.join(columns)}"
        )
    return {name: columns[name] for name in names}


def render_record(record: Document, template: Template | None) -> str:
    """A record rendered with ``template`` from its columns (then metadata, then ``text``)."""
    columns = record.metadata.get("columns")
    if not isinstance(columns, dict):
        columns = {}
    if template is None:
        if not columns:
            return record.text
        return "\n".join(f"{name}: {_text(value)}" for name, value in columns.items() if _text(value).strip())
    available: dict[str, Any] = {"text": record.text, **record.metadata, **columns}
    available.pop("columns", None)

    def lookup(name: str) -> str:
        key = _lookup_name(name, available)
        if key is None:
            real = list(columns) or [k for k in available if k != "text"]
            raise NodeError(
                f"template column '{{{name}}}' is not in record {record.record_id or '?'} "
                f"({record.source or 'unknown source'}); columns: {', '.join(real)}"
            )
        return _text(available[key])

    return template.render(lookup)


def join_records(records: list[Document], separator: str) -> Document:
    """One document of all records, with ``record_spans`` saying where each record lies in it."""
    spans: list[list[Any]] = []
    position = 0
    for number, record in enumerate(records, 1):
        record_id = record.record_id or f"{record.source}#row{number}"
        spans.append([record_id, position, position + len(record.text)])
        position += len(record.text) + len(separator)
    sources = list(dict.fromkeys(r.source for r in records if r.source))
    metadata: dict[str, Any] = {"source": ", ".join(sources), "record_spans": spans}
    return Document(text=separator.join(r.text for r in records), metadata=metadata)


class StringifyConfig(BaseModel):
    """Settings of ``parser.stringify``: the saved config, and the inspector's form."""

    model_config = ConfigDict(extra="forbid")

    template: str = Field(
        "{text}",
        description="How to render each item: {text}, metadata keys, and for hits {score} and {rank}.",
        json_schema_extra={"multiline": True},
    )
    separator: str = Field("\n", description="Placed between items.")


class ItemsIn(TypedDict):
    """The input ports of ``parser.stringify``."""

    items: AnyValue


class TextOut(TypedDict):
    """The output ports of ``parser.stringify``."""

    text: Text


@register_node
class Stringify(Node[StringifyConfig, ItemsIn, TextOut]):
    """Render records, chunks or search hits into one text (LangFlow's Parser 'Text: {text}')."""

    type_name = "parser.stringify"
    mappings: ClassVar[Mappings] = {
        "langflow": (
            Adapter(
                "parser.stringify",
                "ParserComponent",
                imports=False,
                inputs={"items": "input_data"},
                outputs={"text": "parsed_text"},
                in_aliases={"data": "items"},
                out_aliases={"text": "text"},
                **LF.PARSER,
            ),
        ),
    }

    capabilities = frozenset({Capability.STRINGIFIES})
    display_name = "Parser (to text)"
    aliases = ("Parser", "Parse Data", "Data to Message", "combine", "to text")
    category = "Transform"
    Config = StringifyConfig

    @classmethod
    def config_problems(cls, config: StringifyConfig) -> list[tuple[str | None, str]]:
        return _template_problems(config.template)

    def run(self, inputs: ItemsIn, ctx: RunContext) -> TextOut:
        template = _parse_or_fail(self.config.template, "stringify")
        items = inputs.get("items")
        values = [_item_values(item) for item in (items if isinstance(items, list) else [items]) if item is not None]
        known = {key for value in values for key in value}
        unknown = [name for name in template.names if _lookup_name(name, dict.fromkeys(known)) is None]
        if values and unknown:
            raise NodeError(
                f"template names {', '.join('{' + n + '}' for n in unknown)} but the items have: "
                f"{', '.join(sorted(known))}"
            )

        def render(value: dict[str, Any]) -> str:
            def lookup(name: str) -> str:
                key = _lookup_name(name, value)
                return _text(value[key]) if key is not None else ""

            return template.render(lookup)

        text = self.config.separator.join(render(value) for value in values)
        ctx.details["items"] = len(values)
        return {"text": text}

    def summarize(self, outputs: TextOut) -> str:
        return f"{len(outputs['text'])} chars"


def _item_values(item: Any) -> dict[str, Any]:
    """The names a template may use for one item."""
    if isinstance(item, Hit):
        columns = item.document.metadata.get("columns")
        extra = columns if isinstance(columns, dict) else {}
        return {**extra, **item.document.metadata, "text": item.document.text, "score": item.score, "rank": item.rank}
    if isinstance(item, Document):
        columns = item.metadata.get("columns")
        extra = columns if isinstance(columns, dict) else {}
        return {**extra, **item.metadata, "text": item.text}
    if isinstance(item, Mapping):
        return {"text": item.get("text", ""), **{str(k): v for k, v in item.items()}}
    return {"text": _text(item)}
