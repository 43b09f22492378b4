"""The one Jinja2 environment: shipped templates, an optional site override folder, strict undefined."""

from __future__ import annotations

import importlib.util
import json
import os
import posixpath
import sys
from functools import cache
from importlib.resources import files
from pathlib import Path
from typing import Any

import jinja2
import yaml

from ..inputs import MAX_FILE_BYTES, InputRefused, read_regular


def shipped_templates() -> Path:
    """Templates inside the installed wheel, or the repository's `templates/` in a source checkout."""
    packaged = Path(str(files("clusterforge"))) / "templates"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parents[2] / "templates"


def _to_yaml(value: Any) -> str:
    return yaml.safe_dump(value, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True).rstrip("\n")


def _to_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True)


FILTERS = {"to_yaml": _to_yaml, "to_json": _to_json}


class _CompiledTemplates(jinja2.FileSystemBytecodeCache):
    """Each template's compiled code kept beside this package's bytecode (`__pycache__`, or under
    PYTHONPYCACHEPREFIX), as Python keeps a module's: parsing and compiling the templates was a tenth of a
    small render. Jinja keys an entry by the template's file and checks it against a digest of its source (a
    changed template is compiled again); written only where Python writes bytecode, and a folder that cannot
    be written just means compiling each time."""

    def __init__(self) -> None:
        super().__init__(str(Path(importlib.util.cache_from_source(__file__)).parent), "template-%s.jinja2")

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except Exception:  # a damaged file: compile the template instead (and keep it again)
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        if sys.dont_write_bytecode:
            return
        try:
            Path(self.directory).mkdir(parents=True, exist_ok=True)
            super().dump_bytecode(bucket)
        except OSError:
            return


class _BoundedLoader(jinja2.FileSystemLoader):
    """Jinja2's file loader reading through `inputs.read_regular`: a site template that is a device, a FIFO
    or over 8 MiB is refused (as a syntax error of that template, which the render reports as the site's)
    before a byte of it is read."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:  # noqa: ARG002
        pieces = jinja2.loaders.split_template_path(template)
        for searchpath in self.searchpath:
            filename = posixpath.join(searchpath, *pieces)
            if os.path.lexists(filename) and not os.path.isdir(filename):
                break
        else:
            raise jinja2.TemplateNotFound(template)
        try:
            contents = read_regular(Path(filename), MAX_FILE_BYTES)[1].decode(self.encoding)
            mtime = os.path.getmtime(filename)
        except (InputRefused, OSError, UnicodeDecodeError) as exc:
            reason = (
                exc.strerror if isinstance(exc, OSError) else "not UTF-8 text" if isinstance(exc, ValueError) else exc
            )
            raise jinja2.TemplateSyntaxError(f"will not read it: {reason}", 1, template, filename) from None

        def uptodate() -> bool:
            try:
                return os.path.getmtime(filename) == mtime
            except OSError:
                return False

        return contents, os.path.normpath(filename), uptodate


@cache
def environment(override: Path | None = None) -> jinja2.Environment:
    """Templates from `override` first (a site's own), then the shipped ones."""
    loaders: list[jinja2.BaseLoader] = []
    if override is not None:
        loaders.append(_BoundedLoader(str(override)))
    loaders.append(jinja2.FileSystemLoader(str(shipped_templates())))
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
        bytecode_cache=_CompiledTemplates(),
    )
    env.filters.update(FILTERS)
    return env


def render_template(name: str, model: dict[str, Any], override: Path | None = None) -> str:
    return environment(override).get_template(name).render(**model)


def raised_in_site_template(exc: BaseException, override: Path | None) -> bool:
    """Whether `exc` comes from a template of the site's override folder (a syntax error in it, or a frame of
    its code: Jinja puts template files into tracebacks), not from clusterforge's own code or templates."""
    if override is None:
        return False
    root = override.resolve()

    def inside(name: str | None) -> bool:
        return name is not None and Path(name).resolve().is_relative_to(root)

    if isinstance(exc, jinja2.TemplateSyntaxError) and inside(exc.filename):
        return True
    tb = exc.__traceback__
    while tb is not None:
        if inside(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False
