"""Files in a run directory are created, never followed: a symlink planted there is refused.

A run directory may have been made, or shared, by someone else; a symlink placed
where the kit writes its samples or ``report.md`` would have it write, as
whoever runs it, wherever the link points. So a new file is opened with
``O_CREAT | O_EXCL | O_NOFOLLOW`` (any existing name, link or not, is refused),
and a file rewritten whole is written as a new file beside it and renamed over it
(a rename replaces a link; it never writes through one).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import IO

# New files: this process's user may read and write them, others read (as open() would).
NEW_FILE_MODE = 0o644
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def create(path: Path, binary: bool = False) -> IO:
    """``path`` opened for writing as a new file; FileExistsError if anything (a file, a
    directory, a symlink) is already there."""
    fd = os.open(path, _NEW, NEW_FILE_MODE)
    return os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", newline="")


def replace(path: Path, data: str | bytes) -> None:
    """Write ``data`` as the whole of ``path`` in one step (a reader never sees half of it),
    replacing whatever name is there, a symlink included, without following it."""
    partial = path.with_name(path.name + ".partial")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(partial)  # unlink removes a link itself, never its target
    with create(partial, binary=isinstance(data, bytes)) as out:
        out.write(data)
    os.replace(partial, path)
