"""Writing a result file atomically, with the permissions ``open()`` would give it.

``tempfile.mkstemp`` creates its file with mode 0600 whatever the umask, so a file renamed from
it would be unreadable to anyone else (a campaign directory shared on a cluster file system, a
model handed to a colleague). :func:`write_atomically` gives the file the mode a new file gets
from ``open()``, ``0666`` less the process's umask, before the rename.
"""

from __future__ import annotations

import contextlib
import os
import tempfile


def umask() -> int:
    """The process's umask: read where Linux reports it (``/proc/self/status``), elsewhere set
    and restored at once."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_atomically(path: str, data: bytes, prefix: str = ".tmp-") -> None:
    """Writes ``data`` to ``path`` so that a reader (or a process killed at any instant) sees
    the old file or the whole new one: a temporary file beside it, with ``open()``'s mode,
    written, flushed to disk, renamed onto ``path``, and the directory flushed."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=prefix, dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~umask())
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
