"""The Jinja2 environments: shipped templates, an optional site override folder, strict undefined.

A site's templates are trusted to print, not to run code: every template renders in Jinja's immutable sandbox
(no attribute starting with `_`, no Python internals, no mutating calls), and a site folder's templates are
read by `SiteLoader`, which refuses symbolic links, anything that is not a regular file and files over
MAX_TEMPLATE_BYTES."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import sys
from collections.abc import Callable
from functools import cache
from importlib.resources import files
from pathlib import Path
from types import TracebackType
from typing import Any

import jinja2
import yaml
from jinja2.loaders import split_template_path
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..errors import SourceLocation, display_name

MAX_TEMPLATE_BYTES = 1024 * 1024
"""Largest site template read: the largest shipped one is under 3 KiB."""
_NO_LINK = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


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
        # Named apart from what an unsandboxed environment kept (`template-*.jinja2`, before the sandbox): the
        # sandbox compiles each call through its checks, and Jinja's digest covers the source only.
        pattern = "template-sandboxed-%s.jinja2"
        super().__init__(str(Path(importlib.util.cache_from_source(__file__)).parent), pattern)

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


class TemplateRefused(jinja2.TemplateError):
    """A template of the site's folder that clusterforge will not read; the message says why."""

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(f"{display_name(path)}: {why}")
        self.path = path


class SiteLoader(jinja2.BaseLoader):
    """The site's template folder: regular files inside it, reached without following a symbolic link (each
    part of the path is opened relative to its folder, refusing links), of at most MAX_TEMPLATE_BYTES. A
    template the folder does not hold falls through to the shipped ones; one it holds but may not be read is
    a TemplateRefused."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def get_source(
        self,
        environment: jinja2.Environment,  # noqa: ARG002 (Jinja's signature)
        template: str,
    ) -> tuple[str, str, Callable[[], bool] | None]:
        parts = split_template_path(template)  # refuses '..'
        path = self.root.joinpath(*parts)
        try:
            folder = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise TemplateRefused(self.root, f"the template folder cannot be read: {exc.strerror or exc}") from None
        try:
            for part in parts[:-1]:
                if not stat.S_ISDIR(_kind(folder, part, path, template)):
                    raise jinja2.TemplateNotFound(template)
                inner = os.open(part, _NO_LINK | os.O_DIRECTORY, dir_fd=folder)
                os.close(folder)
                folder = inner
            if not stat.S_ISREG(_kind(folder, parts[-1], path, template)):
                raise TemplateRefused(path, "it is not a regular file")
            fd = os.open(parts[-1], _NO_LINK | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=folder)
        except jinja2.TemplateNotFound:  # an OSError too
            raise
        except OSError as exc:  # changed between the look and the open
            raise TemplateRefused(path, f"it cannot be read: {exc.strerror or exc}") from None
        finally:
            os.close(folder)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TEMPLATE_BYTES:
                raise TemplateRefused(path, f"it is not a regular file of at most {MAX_TEMPLATE_BYTES:,} bytes")
            data = handle.read(MAX_TEMPLATE_BYTES + 1)
        if len(data) > MAX_TEMPLATE_BYTES:
            raise TemplateRefused(path, f"it is larger than {MAX_TEMPLATE_BYTES:,} bytes")
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            raise TemplateRefused(path, "it is not UTF-8 text") from None

        def uptodate() -> bool:
            try:
                return os.stat(path, follow_symlinks=False).st_mtime_ns == info.st_mtime_ns
            except OSError:
                return False

        return source, str(path), uptodate


def _kind(folder: int, part: str, path: Path, template: str) -> int:
    """The file type of `part` in the open `folder`, not following a link: a link is refused, a missing
    part means the site's folder does not hold the template."""
    try:
        mode = os.stat(part, dir_fd=folder, follow_symlinks=False).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise jinja2.TemplateNotFound(template) from None
    if stat.S_ISLNK(mode):
        raise TemplateRefused(path, "it is, or lies under, a symbolic link; site templates are read as files only")
    return mode


@cache
def environment(override: Path | None = None) -> jinja2.Environment:
    """Templates from `override` first (a site's own), then the shipped ones, all in the sandbox (it costs the
    shipped templates nothing measurable: they print values worked out in Python)."""
    loaders: list[jinja2.BaseLoader] = []
    if override is not None:
        loaders.append(SiteLoader(override))
    loaders.append(jinja2.FileSystemLoader(str(shipped_templates())))
    env = ImmutableSandboxedEnvironment(
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


def site_template_location(exc: BaseException, override: Path | None) -> SourceLocation | None:
    """Where in the site's override folder `exc` comes from (a template refused, a syntax error in one, or the
    innermost frame of its code: Jinja puts template files and lines into tracebacks), or None when it comes
    from clusterforge's own code or templates."""
    if override is None:
        return None
    if isinstance(exc, TemplateRefused):
        return SourceLocation(display_name(exc.path), 0, 0)
    root = override.resolve()

    def inside(name: str | None) -> bool:
        return name is not None and Path(name).resolve().is_relative_to(root)

    if isinstance(exc, jinja2.TemplateSyntaxError) and exc.filename is not None and inside(exc.filename):
        return SourceLocation(display_name(Path(exc.filename)), exc.lineno, 1)
    found: TracebackType | None = None
    tb = exc.__traceback__
    while tb is not None:
        if inside(tb.tb_frame.f_code.co_filename):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    return SourceLocation(display_name(Path(found.tb_frame.f_code.co_filename)), found.tb_lineno, 1)
