"""The table and bucket a command block works on (keys, import, pulse): the AWS stack's, a running
local server's, or a data dir's backend started for the block.

Shared by the CLI's commands and the importer, apart from both so neither imports the other.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def backend_context(args: argparse.Namespace) -> Iterator[str]:
    """Point this process at the table and bucket for the block (keys, import, pulse); yields where.

    Locally that is the backend of a server running on the data dir (so the write is journaled
    by it), or else the data dir's backend started here for the block.
    """
    from expconsole_tools.local.backend import (
        DataDirBusy,
        EmbeddedBackend,
        aws_resources,
        running_backend,
        use_backend,
    )

    if args.aws:
        table, bucket = aws_resources(args.stack_name)
        restore = use_backend(None, table, bucket)
        try:
            yield f"table {table}"
        finally:
            restore()
        return
    from expconsole_tools.local.server import DEFAULT_DATA_DIR

    data_dir = Path(args.data_dir or DEFAULT_DATA_DIR)
    backend = EmbeddedBackend(data_dir)
    try:
        backend.start()
    except DataDirBusy:
        info = running_backend(data_dir)
        if info is None:
            raise
        restore = use_backend(info["endpoint"], info["tableName"], info["eventsBucket"])
        try:
            yield f"the server running on {data_dir} (pid {info['pid']})"
        finally:
            restore()
        return
    try:
        yield str(data_dir)
    finally:
        backend.stop()
