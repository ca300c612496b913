"""Where kraftsim may write: names made safe as file names, symlinks refused, outputs checked.

Names from files (a scenario's `name`, a topic) become file and directory names in a few
places; one function makes them safe, so `../x`, an absolute path or a control character
can never lead a write outside the directory the user named. Directories kraftsim writes
into (cluster directories, metadata logs) are refused when they hold a symbolic link: a
link planted there would have recovery truncate, or a writer append to, a file elsewhere.
An output that is, holds or lies inside an input, and an output directory that cannot be
written, are refused before any long work starts. A new cluster's directory is made by
`new_directory`, which takes back what it made when the making fails or is interrupted.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kraftsim.errors import UsageError
from kraftsim.storage import dirlock

#: OS errors that say the disk could not take a write (main reports them as such), not that
#: the path named is wrong.
_WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})

#: Longest file name made (most file systems allow 255 bytes).
MAX_NAME_BYTES = 120
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_file_name(name: str) -> str:
    """`name` as one plain file name: only ASCII letters, digits, `.`, `_` and `-`, never
    `.`, `..` or hidden, at most MAX_NAME_BYTES. A name that had to change gets a short hash
    of the original, so two names never map to one file."""
    cleaned = _UNSAFE.sub("_", name).lstrip(".")[:MAX_NAME_BYTES - 9]
    if cleaned == name and name:
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{cleaned}-{digest}" if cleaned else f"_{digest}"


class SymlinkRefused(UsageError):
    """A symbolic link where kraftsim writes."""

    def __init__(self, path: Path):
        self.path = path
        super().__init__(f"{path}: is a symbolic link; kraftsim does not follow links in a directory it writes "
                         "(replace it with the file itself)")


def refuse_symlinks(directory: Path | str, *, recursive: bool = True) -> None:
    """SymlinkRefused naming the first symbolic link inside `directory` (links are looked
    at, never followed; the directory itself may be reached through one, as the user named it)."""
    d = Path(directory)
    if not d.is_dir():
        return
    for root, dirs, files in os.walk(d, followlinks=False):
        for name in sorted(dirs + files):
            p = Path(root) / name
            if p.is_symlink():
                raise SymlinkRefused(p)
        if not recursive:
            return


def _inside(path: Path, other: Path) -> bool:
    return path == other or other in path.parents


def check_output(output: Path | str, inputs: Iterable[Path | str], *, flag: str = "output",
                 directory: bool = False) -> Path:
    """Refuse (UsageError, exit 2) an output that is an input, lies inside one, or holds one
    (replacing it would destroy what is read), or whose folder cannot be written; before
    any work. `directory`: the output is a folder that will be made. Returns the output."""
    out = Path(output)
    real_out = Path(os.path.realpath(out))
    for item in inputs:
        real_in = Path(os.path.realpath(item))
        if _inside(real_out, real_in):
            raise UsageError(f"{flag} {out}: is or lies inside the input {item}; write it elsewhere")
        if _inside(real_in, real_out):
            raise UsageError(f"{flag} {out}: holds the input {item}; write it elsewhere")
    check_writable(out, flag=flag, directory=directory)
    return out


def check_output_file(output: Path | str, inputs: Iterable[Path | str], *, flag: str = "output") -> Path:
    """`check_output` for a file written later in the run (a recording, a ready file, a
    timeline): refuse (UsageError) before any work a directory, or a missing folder, where
    the write would fail only after the work was done."""
    out = Path(output)
    try:
        os.stat(out)
    except (FileNotFoundError, NotADirectoryError):  # (a missing folder is said below)
        pass
    except OSError as e:  # a name too long, a symlink loop: no write there can succeed
        raise UsageError(f"{flag} {out}: {e.strerror or e}") from None
    if out.is_dir():
        raise UsageError(f"{flag} {out}: is a directory; expected a file to write")
    if not out.parent.is_dir():
        raise UsageError(f"{flag} {out}: {out.parent}: no such directory")
    return check_output(out, inputs, flag=flag)


def check_writable(output: Path | str, *, flag: str = "output", directory: bool = False) -> None:
    """Refuse (UsageError) an output whose nearest existing folder cannot be written."""
    out = Path(output)
    target = out if directory and out.is_dir() else out.parent
    while not target.exists() and target != target.parent:
        target = target.parent
    if not target.is_dir():
        raise UsageError(f"{flag} {out}: {target} is not a directory")
    if not os.access(target, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {out}: cannot write in {target} (permission denied or read-only)")
    if out.exists() and not out.is_dir() and not os.access(out, os.W_OK) and not directory:
        raise UsageError(f"{flag} {out}: the file cannot be written (permission denied or read-only)")
    if not (directory and out.exists() and not out.is_dir()):  # (a file named as a folder: its command says so)
        _try_an_entry(out if directory else out.parent, out, flag)


def _try_an_entry(folder: Path, out: Path, flag: str) -> None:
    """Make (and at once remove) an empty entry in `folder`, and the missing folders above it:
    permission bits do not tell everything (root may write anywhere by them, yet nothing can
    be made under /proc), and what cannot be made now would fail only once the work is done.
    Nothing stays: the folders made are removed again, empty."""
    made = [f for f in (folder, *folder.parents) if not f.exists()]  # deepest first
    probe = folder / f".kraftsim-probe-{os.getpid()}"
    try:
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"{flag} {out}: cannot create the folder {folder}: {e.strerror or e}") from None
        try:
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(probe)
        except FileExistsError:
            pass  # (a probe of this process's: the folder takes new entries)
        except OSError as e:
            raise UsageError(f"{flag} {out}: cannot write in {folder}: {e.strerror or e}") from None
    finally:
        for f in made:
            try:
                f.rmdir()
            except OSError:
                pass


@contextmanager
def new_directory(directory: Path | str, *, locked: bool = False) -> Iterator[Path]:
    """`with new_directory(d):` make `d` (and missing folders above it) for the block to fill.
    When the block raises, an interrupt (Ctrl-C, SIGTERM) too, what was made is removed, so
    that the same command can be run again: the folders made, or, in a directory that was
    there, only the entries the block added (what it held before is never touched). The
    block closes what it opened first (it can only be removed closed). `locked`: the block
    runs holding the directory's lock, taken only if the directory is still new once it is
    held (dirlock.acquire_new); else nothing is taken back (it is another command's)."""
    d = Path(directory)
    made = [folder for folder in (d, *d.parents) if not folder.exists()]  # deepest first
    before = set() if made else set(os.listdir(d))
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        # A path through a file or a symlink loop, a name too long, a place no folder can be
        # made (under /proc): bad input, said as such. A full or failing disk stays what it is.
        _remove_empty(made)  # (only empty folders go: what was there is never touched)
        if e.errno in _WRITE_FAILURES:
            raise
        raise UsageError(f"{d}: cannot create the directory: {e.strerror or e}") from None
    token = None
    if locked:
        try:
            token = dirlock.acquire_new(d)
        except BaseException:
            _remove_empty(made)
            raise
    try:
        yield d
    except BaseException:
        _take_back(d, made, before)
        raise
    finally:
        dirlock.release(token)


def _remove_empty(folders: list[Path]) -> None:
    """Remove those of `folders` (deepest first) that are empty: what is in one is another's."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass


def _take_back(d: Path, made: list[Path], before: set[str]) -> None:
    """Remove what `new_directory` made: `d` itself when it was made (then the folders above
    it that it made, while empty), else the entries of `d` not in `before`."""
    if not made:
        for name in sorted(set(os.listdir(d)) - before):
            p = d / name
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
        return
    shutil.rmtree(d, ignore_errors=True)
    for folder in made[1:]:
        try:
            folder.rmdir()
        except OSError:  # (something else put there meanwhile: left as it is)
            return
