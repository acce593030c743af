"""trajkit on Ray Data: read trajectories as a ``ray.data.Dataset`` and build a library
with Ray tasks, identical to ``trajkit build`` (docs/scale-out.md).

Thin: planning, partial builds and finalize are the engine's own functions
(``trajkit._native.plan``, ``build_partial``, ``RayBuild``); this module only schedules
them. Importing ``trajkit`` does not import Ray; importing ``trajkit.ray`` does.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any, Callable, Dict, Iterable, List, Optional

import pyarrow as pa
import ray
from ray.data.block import BlockMetadata
from ray.data.datasource import Datasource, ReadTask

from trajkit import _native, _opt_path, _paths, arrow_schema
from trajkit import Paths, PathLike

__all__ = ["read_trajectories", "read_rejections", "plan", "build", "TrajectoryDatasource"]

#: Bytes of input per read task or partial build when the caller names no figure.
DEFAULT_GROUP_BYTES = 64 << 20

#: The columns of ``read_rejections`` rows (the objects of ``trajkit validate --json``).
REJECTION_SCHEMA = pa.schema(
    [
        ("path", pa.string()),
        ("line", pa.int64()),
        ("document_index", pa.int64()),
        ("reason", pa.string()),
        ("field", pa.string()),
        ("message", pa.string()),
    ]
)


def _options(paths: Paths, out: Optional[PathLike] = None, **kw: Any) -> str:
    """The engine's build options as JSON; paths absolute so that workers in other
    directories (or on other nodes of a shared filesystem) find the same files."""
    opts: Dict[str, Any] = {
        "inputs": [os.path.abspath(p) for p in _paths(paths)] if paths else [],
        "output": os.path.abspath(os.fspath(out)) if out is not None else "",
    }
    for key in ("registry", "outcomes"):
        value = kw.pop(key, None)
        opts[key] = None if value is None else os.path.abspath(os.fspath(value))
    opts.update({k: v for k, v in kw.items() if v is not None})
    return json.dumps(opts)


def plan(
    paths: Paths = (),
    *,
    registry: Optional[PathLike] = None,
    format: Optional[str] = None,
    group_bytes: int = DEFAULT_GROUP_BYTES,
) -> Dict[str, Any]:
    """The build plan: files in build order, in groups of about ``group_bytes`` that keep
    files one record reads together (subagent files, side reports, trial directories) in
    one group. Keys: ``files``, ``bytes``, ``groups`` (``index``, ``first_file``,
    ``files``), ``warnings``."""
    return json.loads(_native.plan(_options(paths, registry=registry, format=format), int(group_bytes)))


def _read_group(files: List[str], format: Optional[str], what: str) -> Iterable[pa.Table]:
    """One read task: the group's files through the engine, as Arrow tables."""
    if what == "trajectories":
        stream = _native.read_stream(files, "arrow", format=format, threads=None, outcomes=None, strict=False)
        batches = list(stream)
        yield pa.Table.from_batches(batches, schema=arrow_schema())
        return
    stream = _native.read_stream(files, "reports", format=format, threads=None, outcomes=None, strict=False)
    for _ in stream:
        pass
    rows = [json.loads(r) for r in stream.rejections_json()]
    yield pa.Table.from_pylist(
        [{name: r.get(name) for name in REJECTION_SCHEMA.names} for r in rows], schema=REJECTION_SCHEMA
    )


class TrajectoryDatasource(Datasource):
    """A ``ray.data.Datasource`` over trajectory files: one read task per file group of
    the engine's plan (balanced by bytes; files read together stay together), each
    yielding Arrow blocks in the ``trajkit.read_arrow`` schema (``what="trajectories"``)
    or the group's rejections (``what="rejections"``)."""

    def __init__(
        self,
        paths: Paths,
        *,
        format: Optional[str] = None,
        group_bytes: int = DEFAULT_GROUP_BYTES,
        what: str = "trajectories",
    ) -> None:
        if what not in ("trajectories", "rejections"):
            raise ValueError(f"what must be 'trajectories' or 'rejections', not {what!r}")
        self._format = format
        self._what = what
        self._plan = plan(paths, format=format, group_bytes=group_bytes)

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return int(self._plan["bytes"])

    def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None, data_context: Any = None) -> List[ReadTask]:
        schema = arrow_schema() if self._what == "trajectories" else REJECTION_SCHEMA
        tasks = []
        for group in self._plan["groups"]:
            files = [f["path"] for f in group["files"]]
            size = sum(f["bytes"] for f in group["files"])
            meta = BlockMetadata(num_rows=None, size_bytes=size, exec_stats=None, input_files=files)
            fmt, what = self._format, self._what

            def read_fn(files: List[str] = files, fmt: Optional[str] = fmt, what: str = what) -> Iterable[pa.Table]:
                return _read_group(files, fmt, what)

            tasks.append(ReadTask(read_fn, meta, schema=schema))
        return tasks


def read_trajectories(
    paths: Paths,
    *,
    format: Optional[str] = None,
    group_bytes: int = DEFAULT_GROUP_BYTES,
    **read_args: Any,
) -> "ray.data.Dataset":
    """Trajectories as a ``ray.data.Dataset`` in the ``trajkit.read_arrow`` schema, one
    read task per file group. Rejected records are not dropped: ``read_rejections`` on
    the same paths gives them (path, line, document_index, reason, field, message)."""
    ds = TrajectoryDatasource(paths, format=format, group_bytes=group_bytes)
    return ray.data.read_datasource(ds, **read_args)


def read_rejections(
    paths: Paths,
    *,
    format: Optional[str] = None,
    group_bytes: int = DEFAULT_GROUP_BYTES,
    **read_args: Any,
) -> "ray.data.Dataset":
    """The rejected records of the same read as a ``ray.data.Dataset`` (the objects of
    ``trajkit validate --json``)."""
    ds = TrajectoryDatasource(paths, format=format, group_bytes=group_bytes, what="rejections")
    return ray.data.read_datasource(ds, **read_args)


def _partial(options: str, group: str, staging: str, hook: Optional[Callable[[Dict[str, Any]], None]]) -> Dict[str, Any]:
    """A Ray task: one group's partial build on whichever node runs it."""
    started = time.monotonic()
    if hook is not None:
        hook(json.loads(group))
    summary = json.loads(_native.build_partial(options, group, staging))
    summary["node"] = ray.get_runtime_context().get_node_id()
    summary["pid"] = os.getpid()
    summary["bytes"] = sum(f["bytes"] for f in json.loads(group)["files"])
    summary["seconds"] = time.monotonic() - started
    return summary


def build(
    paths: Paths = (),
    out: PathLike = "library",
    *,
    registry: Optional[PathLike] = None,
    format: Optional[str] = None,
    outcomes: Optional[PathLike] = None,
    strict: bool = False,
    shard_mib: Optional[int] = None,
    group_bytes: int = DEFAULT_GROUP_BYTES,
    num_cpus: float = 1,
    max_retries: int = 3,
    task_hook: Optional[Callable[[Dict[str, Any]], None]] = None,
    clusters: Optional[Dict[str, Any]] = None,
    contamination: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """``trajkit build`` on Ray: plan on the driver, one Ray task per file group writing
    its partial into the output's staging directory (which must be on storage every node
    sees), then finalize on the driver and swap the library into place. The library
    equals ``trajkit build``'s (docs/scale-out.md says what may differ: shard
    boundaries). Returns the build summary plus ``tasks`` (per task: group, node, pid,
    files, bytes of input, trajectories, seconds), ``phases`` (seconds of ``plan``,
    ``partials`` and ``finalize``) and ``finalize_stages`` (``[stage, seconds]`` in
    order). ``task_hook(group)`` runs in each task first (tests use it).
    ``clusters`` sets task clustering as ``trajkit build``'s flags of the same names do:
    ``{"instruction_similarity": 0.7, "boilerplate_fraction": 0.01,
    "boilerplate_min_instructions": 3, "generic_instruction_keys": 10,
    "trajectory_similarity": 0.8}``. ``contamination`` sets the contamination report as
    ``trajkit build``'s flags do: ``{"max_documents": 10, "min_ngrams": 1, "fail": False}``
    (``fail`` is ``--fail-on-contamination``: raises ``BuildError``, nothing written).
    """
    options = _options(
        paths,
        out,
        registry=registry,
        outcomes=outcomes,
        format=format,
        strict=strict,
        shard_bytes=None if shard_mib is None else int(shard_mib) << 20,
        clusters=clusters,
        contamination=contamination,
    )
    session = _native.RayBuild(options)
    clock = [time.monotonic()]
    try:
        the_plan = _native.plan(options, int(group_bytes))
        groups = json.loads(the_plan)["groups"]
        clock.append(time.monotonic())
        task = ray.remote(num_cpus=num_cpus, max_retries=max_retries, retry_exceptions=False)(_partial)
        refs = [task.remote(options, json.dumps(g), session.staging, task_hook) for g in groups]
        tasks = ray.get(refs)
        clock.append(time.monotonic())
        summary = json.loads(session.finish(the_plan))
        clock.append(time.monotonic())
    finally:
        session.abort()
    summary["tasks"] = tasks
    summary["phases"] = {name: b - a for name, a, b in zip(("plan", "partials", "finalize"), clock, clock[1:])}
    return summary
