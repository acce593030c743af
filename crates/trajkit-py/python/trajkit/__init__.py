"""trajkit: AI-agent trajectory data in Python, over the same Rust engine as the CLI.

Read every harness format (ATIF, NeMo Gym, SWE-agent, tau2, ToolBench, BFCL, Claude Code,
Codex, Inspect, OpenTelemetry traces, ...) into one canonical record; inspect, validate,
convert; build a library and query or export it. The GIL is released while the engine
works and Ctrl-C stops a long call within about a second, leaving no partial output.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Union

from trajkit import _native
from trajkit._native import (
    BuildError,
    InputError,
    RejectedRecordError,
    TrajkitError,
    UsageError,
)

__version__: str = _native.__version__

#: ``--max-record-mib``'s default: the largest record read, in MiB.
DEFAULT_MAX_RECORD_MIB: int = _native.DEFAULT_MAX_RECORD_MIB

PathLike = Union[str, "os.PathLike[str]"]
Paths = Union[PathLike, Sequence[PathLike]]

__all__ = [
    "read",
    "read_arrow",
    "inspect",
    "validate",
    "convert",
    "build",
    "Library",
    "Read",
    "Validation",
    "ARROW_SCHEMA_DOC",
    "DEFAULT_MAX_RECORD_MIB",
    "TrajkitError",
    "UsageError",
    "InputError",
    "RejectedRecordError",
    "BuildError",
]

ARROW_SCHEMA_DOC = "docs/python.md#arrow-schema"


def _paths(paths: Paths) -> List[str]:
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    return [os.fspath(p) for p in paths]


def _opt_path(p: Optional[PathLike]) -> Optional[str]:
    return None if p is None else os.fspath(p)


class Read:
    """An iterator of canonical records (dicts), streamed in bounded memory.

    After the iteration ends, ``reports`` holds the per-file figures (the objects of
    ``trajkit inspect --json``), ``rejections`` every rejected record (the objects of
    ``trajkit validate --json``) and ``exit_code`` the CLI's status for the same read.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def __iter__(self) -> "Read":
        return self

    def __next__(self) -> Dict[str, Any]:
        line = next(self._stream)
        return json.loads(line)

    @property
    def reports(self) -> List[Dict[str, Any]]:
        """Per-file reports (``inspect --json``); empty until the iteration has ended."""
        return [json.loads(r) for r in self._stream.reports_json()]

    @property
    def rejections(self) -> List[Dict[str, Any]]:
        """Rejected records so far, each with ``path``, ``line``, ``reason``, ``problems``."""
        return [json.loads(r) for r in self._stream.rejections_json()]

    @property
    def exit_code(self) -> Optional[int]:
        """0 all accepted, 1 some rejected or unreadable, 2 nothing read; None until the end."""
        return self._stream.exit_code()

    def close(self) -> None:
        """Stops reading (the worker threads end); the iterator is then exhausted."""
        self._stream.close()



def _stream(
    paths: Paths,
    mode: str,
    format: Optional[str],
    threads: Optional[int],
    outcomes: Optional[PathLike],
    strict: bool,
    max_record_mib: int,
) -> Any:
    """The engine's read driver on a worker thread: ``mode`` is records, arrow or reports."""
    return _native.read_stream(
        _paths(paths),
        mode,
        format=format,
        threads=threads,
        outcomes=_opt_path(outcomes),
        strict=strict,
        max_record_mib=max_record_mib,
    )

def read(
    paths: Paths,
    *,
    format: Optional[str] = None,
    threads: Optional[int] = None,
    outcomes: Optional[PathLike] = None,
    strict: bool = False,
    max_record_mib: int = DEFAULT_MAX_RECORD_MIB,
) -> Read:
    """Read trajectory files or directories into canonical records (dicts).

    Each record is exactly one line of ``trajkit convert`` (docs/record.md), in input
    order. Rejected records are not lost: the returned object's ``rejections`` and
    ``reports`` carry them with file, line, field and reason.

    Args:
        paths: files or directories (read recursively), or ``"-"`` for standard input.
        format: force a format name instead of detecting it per file.
        threads: worker threads (default: all cores).
        outcomes: a SWE-bench style report whose outcomes are joined by task id.
        strict: raise ``RejectedRecordError`` (with ``.path``, ``.line``, ``.field``) at
            the first rejected record.
        max_record_mib: largest record read, in MiB (a line, document or archive member,
            decompressed; at least 1): a larger one is rejected as ``record_too_large``
            with its file and line, and the rest of its file is read (``--max-record-mib``).

    Raises:
        InputError: nothing could be read. UsageError: an unknown format.
    """
    stream = _stream(paths, "records", format, threads, outcomes, strict, max_record_mib)
    return Read(stream)


def read_arrow(
    paths: Paths,
    *,
    format: Optional[str] = None,
    threads: Optional[int] = None,
    outcomes: Optional[PathLike] = None,
    strict: bool = False,
    max_record_mib: int = DEFAULT_MAX_RECORD_MIB,
) -> Any:
    """Read trajectories as a ``pyarrow.RecordBatchReader``: one row per trajectory.

    Columns (docs/python.md): id, format, source_path, source_line, task_key, task_id,
    environment, outcome, verification, reward, agent, model, steps, tool_calls, and
    ``record`` (the canonical record as a JSON string). Batches of up to 1024 rows cross
    from Rust through the Arrow C data interface; no per-row Python objects. The reader
    streams: DuckDB, Polars or ``read_all()`` consume it in bounded memory. Options as
    for ``read`` (``max_record_mib`` included).
    """
    import pyarrow as pa

    stream = _stream(paths, "arrow", format, threads, outcomes, strict, max_record_mib)
    return pa.RecordBatchReader.from_batches(arrow_schema(), iter(stream))


def arrow_schema() -> Any:
    """The ``pyarrow.Schema`` of ``read_arrow`` rows."""
    return _native.arrow_schema()


def inspect(
    paths: Paths,
    *,
    format: Optional[str] = None,
    threads: Optional[int] = None,
    outcomes: Optional[PathLike] = None,
    max_record_mib: int = DEFAULT_MAX_RECORD_MIB,
) -> List[Dict[str, Any]]:
    """Per-file figures: the objects ``trajkit inspect --json`` prints, one per file.

    Keys: path, format, records, trajectories, subagents, steps, tool_calls,
    duplicate_records, rejected, reasons, gaps (and part_of, error, guess when they apply).
    Options as for ``read`` (``max_record_mib`` included).
    """
    stream = _stream(paths, "reports", format, threads, outcomes, False, max_record_mib)
    stream.drain()
    return [json.loads(r) for r in stream.reports_json()]


class Validation:
    """What ``validate`` found: ``rejections`` (``validate --json`` objects), ``reports``
    (``inspect --json`` objects), ``missing`` paths and the CLI's ``exit_code``."""

    def __init__(self, stream: Any) -> None:
        self.rejections: List[Dict[str, Any]] = [json.loads(r) for r in stream.rejections_json()]
        self.reports: List[Dict[str, Any]] = [json.loads(r) for r in stream.reports_json()]
        self.missing: List[str] = stream.missing()
        self.exit_code: int = stream.exit_code()

    @property
    def ok(self) -> bool:
        """True when every record was accepted and every file read."""
        return self.exit_code == 0

    def __repr__(self) -> str:
        return f"Validation(exit_code={self.exit_code}, rejections={len(self.rejections)})"


def validate(
    paths: Paths,
    *,
    format: Optional[str] = None,
    threads: Optional[int] = None,
    outcomes: Optional[PathLike] = None,
    strict: bool = False,
    max_record_mib: int = DEFAULT_MAX_RECORD_MIB,
) -> Validation:
    """Check every record; every problem named with file, line, field and reason.

    With ``strict=True`` the first rejected record raises ``RejectedRecordError``.
    Options as for ``read`` (``max_record_mib`` included).
    """
    stream = _stream(paths, "reports", format, threads, outcomes, strict, max_record_mib)
    stream.drain()
    return Validation(stream)


def convert(
    paths: Paths,
    output: PathLike,
    *,
    format: Optional[str] = None,
    threads: Optional[int] = None,
    outcomes: Optional[PathLike] = None,
    max_record_mib: int = DEFAULT_MAX_RECORD_MIB,
) -> Dict[str, Any]:
    """``trajkit convert``: canonical JSON Lines at ``output`` (.gz/.zst by extension),
    written atomically, byte-identical to the CLI's. Options as for ``read``.

    Returns ``{"written", "rejected", "exit_code", "reports"}``. Raises ``InputError``
    when nothing could be read (then nothing is written).
    """
    written, reports, code = _native.convert(
        _paths(paths),
        os.fspath(output),
        format=format,
        threads=threads,
        outcomes=_opt_path(outcomes),
        max_record_mib=max_record_mib,
    )
    parsed = [json.loads(r) for r in reports]
    if written is None:
        raise InputError(f"nothing could be read; {os.fspath(output)} not written")
    return {
        "written": written,
        "rejected": sum(r["rejected"] for r in parsed),
        "exit_code": code,
        "reports": parsed,
    }


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _flags(options: Dict[str, Any]) -> List[str]:
    """Keyword options as CLI flags: ``True`` a bare flag, ``False``/``None`` left out,
    a list repeats the flag."""
    flags: List[str] = []
    for name, value in options.items():
        values = value if isinstance(value, (list, tuple)) else [value]
        for v in values:
            if v is True:
                flags.append(_flag(name))
            elif v is not False and v is not None:
                flags += [_flag(name), os.fspath(v) if isinstance(v, os.PathLike) else str(v)]
    return flags


def build(
    paths: Paths = (),
    out: PathLike = "library",
    *,
    registry: Optional[PathLike] = None,
    max_record_mib: int = DEFAULT_MAX_RECORD_MIB,
    **options: Any,
) -> Dict[str, Any]:
    """``trajkit build``: a library at ``out`` (replaced atomically), returning its summary.

    ``options`` are the CLI's flags with underscores: ``strict=True``, ``train=0.8``,
    ``validation=0.1``, ``test=0.1``, ``split_salt=...``, ``shard_mib=256``,
    ``format=...``, ``outcomes=...``, ``threads=N``, ``redact=True``, ``secrets=...``;
    ``max_record_mib`` as for ``read`` (a larger record is counted ``record_too_large``
    in the library's coverage). Raises ``RejectedRecordError`` when ``strict`` stopped the
    build (the old library stays), ``UsageError`` for bad options.
    """
    flags: List[str] = [*_paths(paths), "--output", os.fspath(out), "--quiet"]
    flags += ["--max-record-mib", str(max_record_mib)]
    if registry is not None:
        flags += ["--registry", os.fspath(registry)]
    return json.loads(_native.build(flags + _flags(options)))


class Library:
    """A library written by ``build`` (or ``trajkit build``)."""

    def __init__(self, path: PathLike) -> None:
        self.path = os.fspath(path)
        if not os.path.isfile(os.path.join(self.path, "build.json")):
            raise BuildError(f"{self.path}: not a trajkit library (no build.json)")

    def query(self, sql: str) -> Any:
        """Read-only SQL on the library's index (``trajkit query``) as a ``pyarrow.Table``."""
        return _native.query(self.path, sql)

    def trajectories(self, where: Optional[str] = None) -> Iterator[Dict[str, Any]]:
        """Canonical records (dicts) whose ``trajectories`` row matches the SQL condition
        ``where``, in library order, streamed: a few records are in memory at a time."""
        records = _native.trajectories(self.path, where)
        try:
            for line in records:
                yield json.loads(line)
        finally:
            records.close()

    def rows(self) -> Any:
        """The per-trajectory evaluation rows (``evaluation/per_trajectory.jsonl.gz``) as a ``pyarrow.Table``."""
        import gzip

        import pyarrow as pa
        import pyarrow.json as pj

        with gzip.open(os.path.join(self.path, "evaluation", "per_trajectory.jsonl.gz"), "rb") as f:
            data = f.read()
        if not data:
            return pa.table({})
        return pj.read_json(pa.BufferReader(data))

    def stats(self, dedup: Optional[str] = None) -> Dict[str, Any]:
        """Recorded-agent statistics recomputed from the index, with the contamination
        report's summary: exactly what ``trajkit stats --json [--dedup exact|near]`` prints."""
        return json.loads(_native.stats(self.path, dedup))

    def export(
        self,
        *,
        view: str,
        split: str,
        out: PathLike,
        format: Optional[str] = None,
        selection: str = "all",
        **options: Any,
    ) -> int:
        """``trajkit export`` of this library, written atomically with its dataset card;
        returns the CLI's exit status (0 rows written, 1 nothing matched). Options are the
        CLI's flags with underscores (``evaluation=True``, ``shard_size=N``,
        ``source=[...]``, ``redact=True``, ``chat_template=...``, ``threads=N``: a thread
        pool for this call only). Raises ``UsageError`` for a bad view, split, selection or
        format, ``BuildError`` when the library cannot be read or the export written.
        Ctrl-C stops it, leaving no output."""
        flags = [self.path, "--view", view, "--split", split, "--selection", selection, "-o", os.fspath(out)]
        if format is not None:
            flags += ["--format", format]
        return _native.export(flags + _flags(options))

    def __repr__(self) -> str:
        return f"Library({self.path!r})"
