"""files/atomic: an output is written under a hidden temporary name next to it and renamed into place on
success; a failure leaves neither a half-written file under the final name nor a temporary, and a failed write
is one line naming the final output. Temporaries of dead writers are cleared, live ones kept."""

import errno
import os
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import AtomicWriter, atomic_output, remove_temporaries, temporary_name, write_if_changed


def test_temporaries_of_dead_writers_are_cleared_and_live_ones_kept(tmp_path):
    zombie = subprocess.Popen(["true"])  # exits and stays unreaped (a killed writer's state) until wait()
    zombie_pid = zombie.pid
    deadline = time.monotonic() + 60  # however loaded the machine, wait until it has really exited
    while Path(f"/proc/{zombie_pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    final = tmp_path / "x.pbin"
    dead = tmp_path / f".x.pbin.tmp{zombie_pid}"
    live = tmp_path / f".x.pbin.tmp{os.getppid()}"
    dead.write_bytes(b"half")
    live.write_bytes(b"busy")
    assert temporary_name(final) == tmp_path / f".x.pbin.tmp{os.getpid()}"
    assert not dead.exists() and live.exists()
    zombie.wait()


def test_a_block_that_succeeds_renames_its_temporary_into_place_and_one_that_fails_leaves_the_old_file(tmp_path):
    final = tmp_path / "out" / "x.bin"  # the folder is made when the writer starts
    with atomic_output(final) as temporary:
        assert temporary.parent == final.parent and temporary.name.startswith(".x.bin.tmp")
        temporary.write_bytes(b"first")
    assert final.read_bytes() == b"first" and sorted(p.name for p in final.parent.iterdir()) == ["x.bin"]
    with pytest.raises(ValueError, match="stop"):
        with atomic_output(final) as temporary:
            temporary.write_bytes(b"half")
            raise ValueError("stop")
    assert final.read_bytes() == b"first" and sorted(p.name for p in final.parent.iterdir()) == ["x.bin"]


def test_a_failed_write_is_one_line_naming_the_final_output_and_nothing_is_left(tmp_path):
    final = tmp_path / "x.bin"
    with pytest.raises(TokenmillError, match=rf"^{final}: cannot write \(No space left on device\); nothing was "
                                             r"written$"):
        with atomic_output(final) as temporary:
            temporary.write_bytes(b"half")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert list(tmp_path.iterdir()) == []


class TwoFiles(AtomicWriter):
    """A writer of two outputs: both renamed in ``finish``, both deleted in ``abort``."""

    def __init__(self, folder: Path, fail_in_finish: bool = False):
        self.output_name = str(folder / "a")
        self.finals = [folder / "a", folder / "b"]
        self.temporaries = [temporary_name(final) for final in self.finals]
        self.handles = [open(temporary, "wb") for temporary in self.temporaries]
        self.fail_in_finish = fail_in_finish

    def finish(self) -> None:
        for handle in self.handles:
            handle.close()
        if self.fail_in_finish:
            raise OSError(errno.EFBIG, os.strerror(errno.EFBIG))
        for temporary, final in zip(self.temporaries, self.finals):
            os.replace(temporary, final)

    def abort(self) -> None:
        for handle in self.handles:
            handle.close()
        for temporary in self.temporaries:
            temporary.unlink(missing_ok=True)


def test_an_atomic_writer_finishes_on_success_and_aborts_on_an_error_or_a_failed_finish(tmp_path):
    with TwoFiles(tmp_path) as writer:
        writer.handles[0].write(b"1")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    for path in tmp_path.iterdir():
        path.unlink()
    with pytest.raises(KeyError):
        with TwoFiles(tmp_path):
            raise KeyError("x")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(TokenmillError, match=rf"^{tmp_path / 'a'}: cannot write \(File too large\)"):
        with TwoFiles(tmp_path, fail_in_finish=True):
            pass
    assert list(tmp_path.iterdir()) == []


def test_remove_temporaries_deletes_what_this_process_named_and_left(tmp_path):
    left = temporary_name(tmp_path / "x.bin")
    left.write_bytes(b"interrupted")
    remove_temporaries()
    assert not left.exists()


@settings(max_examples=25, deadline=None)
@given(first=st.binary(max_size=64), second=st.one_of(st.binary(max_size=64), st.text(max_size=32)))
def test_write_if_changed_keeps_a_file_that_holds_the_content_already_and_its_mtime(tmp_path_factory, first, second):
    path = tmp_path_factory.mktemp("w") / "f"
    write_if_changed(path, first)
    os.utime(path, ns=(1, 1))
    write_if_changed(path, second)
    expected = second.encode() if isinstance(second, str) else second
    assert path.read_bytes() == expected
    assert (path.stat().st_mtime_ns == 1) == (expected == first)
    assert sorted(p.name for p in path.parent.iterdir()) == ["f"]
