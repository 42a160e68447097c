"""grammarc.diskstore's container: exact round trips, and every malformed or damaged file
refused with a `StoreError` (never another exception, never wrong data)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from grammarc import diskstore
from grammarc.diskstore import MAGIC, StoreError

DTYPES = ["|b1", "|i1", "|u1", "<i2", ">i2", "<u4", ">i4", "<i8", ">u8", "<f4", ">f8"]


@st.composite
def arrays(draw):
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    shape = tuple(draw(st.lists(st.integers(0, 4), max_size=3)))
    raw = draw(st.binary(min_size=dtype.itemsize * int(np.prod(shape)), max_size=dtype.itemsize * int(np.prod(shape))))
    array = np.frombuffer(raw, dtype=dtype).reshape(shape) if raw or not shape or 0 in shape else np.zeros(shape, dtype)
    return array.astype(bool) if dtype.kind == "b" else array


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.from_regex(r"[a-z]{1,6}", fullmatch=True), arrays(), max_size=5),
       st.dictionaries(st.sampled_from(["version", "key", "rows"]), st.integers(-5, 5) | st.text(max_size=4)))
def test_unpack_gives_back_what_was_packed(stored, meta):
    data = diskstore.pack(meta, stored)
    got_meta, got = diskstore.unpack(data)
    assert got_meta == meta and list(got) == list(stored)
    for name, array in stored.items():
        assert got[name].dtype == array.dtype.newbyteorder("<") and got[name].shape == array.shape
        assert np.array_equal(got[name], array, equal_nan=array.dtype.kind == "f")
        assert not got[name].flags.writeable  # views of the file's bytes
    assert len(data) % 8 == 0


def _container(header: bytes, tail: bytes = b"") -> bytes:
    return MAGIC + len(header).to_bytes(8, "little") + header + bytes(-len(header) % 8) + tail


def _with(entries, tail: bytes = b"") -> bytes:
    return _container(json.dumps({"arrays": entries}).encode(), tail)


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "not a grammarc cache file (wrong magic)"),
        (b"PK\x03\x04" + bytes(60), "not a grammarc cache file (wrong magic)"),
        (MAGIC + (10**9).to_bytes(8, "little") + b"{}", "truncated header"),
        (_container(b"\xff\xfe"), "unreadable header: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte"),
        (_container(b"{"), "unreadable header: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"),
        (_container(b"[]"), "the header is not a JSON object with an array list"),
        (_container(b'{"arrays": 3}'), "the header is not a JSON object with an array list"),
        (_with([["x", "|O", [1]]], bytes(8)), "bad array entry ['x', '|O', [1]]"),
        (_with([["x", "<V8", [1]]], bytes(8)), "bad array entry ['x', '<V8', [1]]"),
        (_with([["x", ">i4", [1]]], bytes(8)), "bad array entry ['x', '>i4', [1]]"),
        (_with([["x", "nonsense", [1]]], bytes(8)), "bad array entry ['x', 'nonsense', [1]]"),
        (_with([["x", "<i4", [-1]]]), "bad array entry ['x', '<i4', [-1]]"),
        (_with([["x", "<i4", [1.0]]], bytes(8)), "bad array entry ['x', '<i4', [1.0]]"),
        (_with([["x", "<i4", [True]]], bytes(8)), "bad array entry ['x', '<i4', [True]]"),
        (_with([["x", "<i4"]]), "bad array entry ['x', '<i4']"),
        (_with([[1, "<i4", [1]]], bytes(8)), "bad array entry [1, '<i4', [1]]"),
        (_with([["x", "<i8", [1 << 39, 1 << 39]]]), "array 'x' overruns the file or repeats"),
        (_with([["x", "<i8", [2]]], bytes(8)), "array 'x' overruns the file or repeats"),
        (_with([["x", "<i4", [1]], ["x", "<i4", [1]]], bytes(16)), "array 'x' overruns the file or repeats"),
        (_with([["x", "<i4", [1]]], bytes(16)), "8 bytes after the last array"),
    ],
)
def test_malformed_containers_are_refused_with_a_reason(data, message):
    with pytest.raises(StoreError) as caught:
        diskstore.unpack(data)
    assert str(caught.value) == message


def test_pack_refuses_what_unpack_would_not_read():
    with pytest.raises(TypeError, match=r"^cannot store dtype object \(only bool, integer and float arrays\)$"):
        diskstore.pack({}, {"x": np.array([{"a": 1}], dtype=object)})


@pytest.fixture
def stored(tmp_path):
    path = tmp_path / "entry.scans"
    arrays = {"rows": np.arange(7, dtype=np.int32), "flags": np.array([True, False, True]),
              "table": np.arange(6, dtype=np.int64).reshape(2, 3)}
    diskstore.write(path, {"version": 1, "key": "k"}, arrays)
    return path, arrays


def test_read_checks_the_header_fields_and_the_arrays_asked_for(stored):
    path, arrays = stored
    meta, got = diskstore.read(path, {"version": 1, "key": "k"}, ["rows", "table"])
    assert list(got) == ["rows", "table"] and all(np.array_equal(got[n], arrays[n]) for n in got)
    with pytest.raises(StoreError, match=r"^header \{'version': 1, 'key': 'k'\} does not match \{'version': 2, 'key': 'k'\}$"):
        diskstore.read(path, {"version": 2, "key": "k"}, ["rows"])
    with pytest.raises(StoreError, match=r"^arrays \['other'\] are missing$"):
        diskstore.read(path, {"version": 1}, ["rows", "other"])


def test_every_truncation_and_every_flipped_byte_is_refused_or_harmless(stored):
    path, arrays = stored
    original = path.read_bytes()
    expected = {"version": 1, "key": "k"}
    for cut in range(len(original)):
        path.write_bytes(original[:cut])
        with pytest.raises(StoreError):
            diskstore.read(path, expected, arrays)
    for offset in range(len(original)):
        damaged = bytearray(original)
        damaged[offset] ^= 0x10
        path.write_bytes(bytes(damaged))
        try:
            _, got = diskstore.read(path, expected, arrays)
        except StoreError:
            continue
        # only alignment padding is not covered by the checksum: the data read is intact
        assert all(np.array_equal(got[n], arrays[n]) for n in arrays), offset


def test_arrays_of_any_byte_order_read_back_as_written(tmp_path):
    # the checksum is over the arrays as stored (little-endian): a big-endian array written
    # used to come back as "checksum mismatch"
    path = tmp_path / "entry.scans"
    arrays = {"big": np.arange(5, dtype=">i4"), "little": np.arange(3, dtype="<u8"), "flags": np.array([True])}
    diskstore.write(path, {"version": 1}, arrays)
    _, got = diskstore.read(path, {"version": 1}, arrays)
    assert all(np.array_equal(got[n], arrays[n]) and got[n].dtype == arrays[n].dtype.newbyteorder("<") for n in arrays)


def test_cache_dir_follows_the_environment_at_every_call(monkeypatch, tmp_path):
    """The directory is kept per environment (`cache_dir` is asked for every store a new
    schema opens), never past a change of it."""
    from pathlib import Path

    monkeypatch.setenv("GRAMMARC_CACHE_DIR", str(tmp_path / "a"))
    assert diskstore.cache_dir() == tmp_path / "a"
    monkeypatch.setenv("GRAMMARC_CACHE_DIR", " OFF ")
    assert diskstore.cache_dir() is None
    monkeypatch.delenv("GRAMMARC_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert diskstore.cache_dir() == tmp_path / "xdg" / "grammarc"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert diskstore.cache_dir() == tmp_path / "home" / ".cache" / "grammarc"
    monkeypatch.setenv("HOME", str(tmp_path / "other"))
    assert diskstore.cache_dir() == tmp_path / "other" / ".cache" / "grammarc"
    assert diskstore.subdirectory(Path("/x"), "v5", "vocab") == Path("/x/v5/vocab")
