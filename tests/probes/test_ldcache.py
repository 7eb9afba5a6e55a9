"""The ld.so.cache reader against glibc's own reader, `ldconfig -p` (run read-only, as the oracle)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.helpers.elf_fixtures import ldconfig_print, write_ld_cache

from fadoctor.probes.ldcache import LD_CACHE, cache_index, read_ld_cache

LDCONFIG = shutil.which("ldconfig") or next(
    (p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if Path(p).exists()), None)
requires_ldconfig = pytest.mark.skipif(LDCONFIG is None, reason="needs glibc's ldconfig")

ENTRIES = [("libzeta.so.1", "/opt/z/libzeta.so.1"), ("libalpha.so.2", "/opt/a/libalpha.so.2"),
           ("libalpha.so.2", "/usr/lib/libalpha.so.2")]


@requires_ldconfig
@pytest.mark.skipif(not Path(LD_CACHE).exists(), reason="no /etc/ld.so.cache here")
def test_this_machines_cache_matches_ldconfig() -> None:
    assert LDCONFIG is not None
    expected = ldconfig_print(LDCONFIG)
    entries = read_ld_cache(LD_CACHE)
    assert len(entries) > 10
    assert [(e.name, e.path) for e in entries] == expected


@requires_ldconfig
@pytest.mark.parametrize("layout", ["old", "new", "compat"])
def test_each_layout_reads_as_glibc_reads_it(tmp_path: Path, layout: str) -> None:
    assert LDCONFIG is not None
    cache = write_ld_cache(tmp_path / f"ld.so.cache.{layout}", ENTRIES, layout)
    assert ldconfig_print(LDCONFIG, cache) == ENTRIES  # the file is valid to glibc's reader
    assert [(e.name, e.path) for e in read_ld_cache(cache)] == ENTRIES


def test_index_keeps_file_order_and_puts_hwcaps_entries_last(tmp_path: Path) -> None:
    entries = [("libx.so.1", "/usr/lib/glibc-hwcaps/x86-64-v3/libx.so.1"),
               ("libx.so.1", "/usr/lib/libx.so.1")]
    # glibc marks an entry for a glibc-hwcaps subdirectory with bit 62 of its hwcap field.
    cache = write_ld_cache(tmp_path / "ld.so.cache", entries, "new", hwcaps=[1 << 62, 0])
    assert [e.hwcap >> 62 for e in read_ld_cache(cache)] == [1, 0]
    assert cache_index(str(cache))["libx.so.1"] == ("/usr/lib/libx.so.1", entries[0][1])


def test_missing_or_corrupt_cache_is_no_cache(tmp_path: Path) -> None:
    corrupt = tmp_path / "ld.so.cache"
    corrupt.write_bytes(b"glibc-ld.so.cache1.1" + b"\xff" * 30)
    assert cache_index(str(corrupt)) == {}
    assert cache_index(str(tmp_path / "absent")) == {}
    assert cache_index(None) == {}
    text = tmp_path / "not-a-cache"
    text.write_text("hello\n")
    with pytest.raises(ValueError):
        read_ld_cache(text)


def test_index_sees_a_rewritten_cache(tmp_path: Path) -> None:
    cache = write_ld_cache(tmp_path / "ld.so.cache", ENTRIES[:1], "new")
    assert set(cache_index(str(cache))) == {"libzeta.so.1"}
    write_ld_cache(cache, ENTRIES, "compat")
    assert set(cache_index(str(cache))) == {"libzeta.so.1", "libalpha.so.2"}
