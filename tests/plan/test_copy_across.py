"""A copy to another file system, atomic per file, for prune's moves that ``os.replace`` cannot make. (The moves
themselves, across a faked second file system, are tests/plan/test_prune.py's.)"""

import os
import shutil

import pytest

from tokenmill.plan.copy_across import copy_across, is_abandoned_copy


def test_a_folder_is_copied_whole_with_modes_times_and_links_then_removed(tmp_path):
    source = tmp_path / "disk1/cache"
    (source / "deep").mkdir(parents=True)
    (source / "deep/a.npy").write_bytes(b"\x93NUMPY")
    os.chmod(source / "deep/a.npy", 0o640)
    os.utime(source / "deep/a.npy", ns=(1_000_000_000, 2_000_000_000))
    (source / "link").symlink_to("/nowhere/at/all")  # never followed
    (tmp_path / "disk2").mkdir()
    target = tmp_path / "disk2/cache"
    copy_across(source, target)
    assert not source.exists()
    assert (target / "deep/a.npy").read_bytes() == b"\x93NUMPY"
    info = os.stat(target / "deep/a.npy")
    assert (info.st_mode & 0o777, info.st_mtime_ns) == (0o640, 2_000_000_000)
    assert os.readlink(target / "link") == "/nowhere/at/all"
    assert sorted(os.listdir(target)) == ["deep", "link"]  # no temporary left


def test_a_failed_copy_leaves_the_file_where_it_was_and_no_temporary(tmp_path, monkeypatch):
    (tmp_path / "a.pbin").write_bytes(b"tokens")
    (tmp_path / "stale").mkdir()

    def full_disk(source, target):
        with open(target, "wb") as half:
            half.write(b"tok")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(shutil, "copyfile", full_disk)
    with pytest.raises(OSError, match="No space left"):
        copy_across(tmp_path / "a.pbin", tmp_path / "stale/a.pbin")
    assert (tmp_path / "a.pbin").read_bytes() == b"tokens"
    assert os.listdir(tmp_path / "stale") == []


def test_only_the_temporary_of_a_gone_process_is_abandoned():
    assert is_abandoned_copy(".a.pbin.prune-copy999999999")  # no such process
    assert not is_abandoned_copy(f".a.pbin.prune-copy{os.getpid()}")  # a copy under way
    assert not is_abandoned_copy("a.pbin") and not is_abandoned_copy(".a.pbin.tmp999999999")
