"""Work done in a forked child process beside the parent's own, on a second CPU.

The child starts with the parent's memory, copy on write: what the parent worked out before the fork (an
expanded topology of millions of objects) is neither sent over nor worked out again. The child sends back a
small result, short notes while it works, or its exception, which the parent raises as its own.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import tempfile
import traceback
from collections.abc import Callable, Iterator
from multiprocessing.connection import Connection, Pipe
from typing import IO, Generic, TypeVar

from ..errors import ClusterforgeError

T = TypeVar("T")
Note = Callable[[object], None]


def cpus_usable() -> int:
    """CPUs this process may run on (its affinity, which a container or `taskset` narrows), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether a forked child would run beside the parent: the system forks, and a second CPU is usable."""
    return hasattr(os, "fork") and cpus_usable() > 1


class ChildDied(RuntimeError):
    """The child ended without a result or an exception (killed, out of memory)."""


class _Failure:
    """The child's exception in a form that crosses the pipe: itself when it pickles and comes back the same
    (ClusterforgeError does not: it is rebuilt from its findings), else its type's name and message."""

    def __init__(self, exc: BaseException) -> None:
        self.findings = list(exc.findings) if isinstance(exc, ClusterforgeError) else None
        self.kind = type(exc) if isinstance(exc, ClusterforgeError) else None
        self.exc: BaseException | None = None
        if self.findings is None:
            with contextlib.suppress(Exception):
                if str(pickle.loads(pickle.dumps(exc))) == str(exc):
                    self.exc = exc
        self.name = type(exc).__name__
        self.message = str(exc)
        self.traceback = "".join(traceback.format_exception(exc))

    def error(self) -> BaseException:
        if self.kind is not None and self.findings is not None:
            exc: BaseException = self.kind(self.findings)
        elif self.exc is not None:
            exc = self.exc
        else:
            exc = ChildDied(f"{self.name}: {self.message}")
        exc.add_note(f"raised in a forked render process:\n{self.traceback}")
        return exc


class Forked(Generic[T]):
    """`work(note)` running in a child process; `note(message)` sends the parent a small message while it
    works. Use as a context manager: leaving the block before `join` kills the child."""

    def __init__(self, work: Callable[[Note], T]) -> None:
        reader, writer = Pipe(duplex=False)
        # the result goes through a file, so the child ends as soon as it is done instead of waiting (with
        # all its memory) until the parent reads a result larger than the pipe holds
        self._result_file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by __exit__)
        # objects made so far go to a generation the collector never walks (for good: they are the render's
        # long-lived data): its walks would write to their pages in either process and so copy them
        gc.freeze()
        self.pid = os.fork()
        if self.pid == 0:  # the child: never returns
            reader.close()
            _run_child(work, writer, self._result_file)
        writer.close()
        self._reader = reader
        self._result: tuple[T] | None = None

    def __enter__(self) -> Forked[T]:
        return self

    def __exit__(self, *_exc: object) -> None:
        if self._result is None and self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            self._reap()
        self._reader.close()
        self._result_file.close()

    def notes(self, wait: bool = False) -> Iterator[object]:
        """The notes the child sent so far (with `wait`: until its result came); the result is kept for
        `join`."""
        while self._result is None and (wait or self._reader.poll()):
            try:
                kind, value = self._reader.recv()
            except EOFError:
                status = self._reap()
                raise ChildDied(f"the forked render process ended without its result ({status})") from None
            if kind == "note":
                yield value
            elif kind == "failed":
                self._reap()
                raise value.error()
            else:
                self._reap()
                self._result_file.seek(0)
                self._result = (pickle.load(self._result_file),)

    def join(self) -> T:
        """The child's result once it is done (its notes not yet read are dropped); raises its exception."""
        for _ in self.notes(wait=True):
            pass
        assert self._result is not None
        return self._result[0]

    def _reap(self) -> str:
        if not self.pid:
            return "reaped"
        _, status = os.waitpid(self.pid, 0)
        self.pid = 0
        if os.WIFSIGNALED(status):
            return f"signal {signal.Signals(os.WTERMSIG(status)).name}"
        return f"exit {os.waitstatus_to_exitcode(status)}"


def _run_child(work: Callable[[Note], T], writer: Connection, result_file: IO[bytes]) -> None:
    """Run `work`, write its result into `result_file` and say so, or send its exception; end the process
    without unwinding the parent's stack (its `finally` blocks and exit handlers belong to the parent: they
    would remove the parent's files)."""
    code = 0
    try:
        try:
            result = work(lambda message: writer.send(("note", message)))
            pickle.dump(result, result_file, protocol=pickle.HIGHEST_PROTOCOL)
            result_file.flush()
            writer.send(("done", None))
        except BaseException as exc:  # every failure goes to the parent
            writer.send(("failed", _Failure(exc)))
        writer.close()
    except BaseException:  # the pipe is gone: the parent sees the child end without a result
        code = 70
    finally:
        os._exit(code)
