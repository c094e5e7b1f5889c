import pytest
from hypothesis import given, strategies as st

from kvcalc.errors import KvcalcError
from kvcalc.units import fmt_bytes, fmt_iec, fmt_si, parse_rate, parse_size, parse_tokens


@pytest.mark.parametrize(
    "text,expected",
    [
        ("85031714816", 85031714816),
        ("85031714816B", 85031714816),
        ("80GB", 80 * 10**9),
        ("80 GB", 80 * 10**9),
        ("79.2GiB", round(79.2 * 2**30)),
        ("1.5TiB", 3 * 2**39),
        ("512MiB", 512 * 2**20),
        ("16KB", 16_000),
        ("16KiB", 16_384),
        ("2TB", 2 * 10**12),
        ("1e9B", 10**9),
        ("0", 0),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "GB", "80XB", "-5GB", "1.5B", "eighty", "80 G B", "nan", "inf"])
def test_parse_size_rejects(text):
    with pytest.raises(KvcalcError) as e:
        parse_size(text, "--weights")
    assert "--weights" in e.value.line()
    assert "\n" not in e.value.line()


@pytest.mark.parametrize(
    "text,expected",
    [("4096", 4096), ("4k", 4096), ("4K", 4096), ("32K", 32768), ("128k", 131072), ("1M", 1048576), ("1.5k", 1536)],
)
def test_parse_tokens(text, expected):
    assert parse_tokens(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "1.3", "4kb", "4G", "", "abc", "1.0001k"])
def test_parse_tokens_rejects(text):
    with pytest.raises(KvcalcError):
        parse_tokens(text, "--seq")


def test_parse_rate():
    assert parse_rate("3.35TB/s") == 3_350_000_000_000
    assert parse_rate("2039GB/s") == 2_039_000_000_000
    assert parse_rate("900 GB/s") == 900 * 10**9


def test_format_names_both_units():
    # 42,949,672,960 B = 42.95 GB = 40 GiB exactly.
    assert fmt_si(42_949_672_960) == "42.95 GB"
    assert fmt_iec(42_949_672_960) == "40.00 GiB"
    assert fmt_bytes(524_288) == "524,288 B (524.29 KB, 512.00 KiB)"


@given(st.integers(min_value=0, max_value=2**60))
def test_plain_byte_counts_round_trip(n):
    assert parse_size(str(n)) == n
    assert parse_size(f"{n}B") == n


@given(st.integers(min_value=2**60 + 1, max_value=10**400))
def test_sizes_past_an_exbibyte_are_refused_in_one_line(n):
    with pytest.raises(KvcalcError) as e:
        parse_size(str(n))
    assert "over the limit" in e.value.line() and len(e.value.line()) < 300


def test_counts_are_plain_whole_numbers():
    from kvcalc.units import parse_count, parse_count_list

    assert parse_count("1000", "--batch") == 1000
    assert parse_count("1_000", "--batch") == 1000
    with pytest.raises(KvcalcError, match="not a token length"):
        parse_count("1k", "--batch")
    with pytest.raises(KvcalcError, match="too small"):
        parse_count("0", "--batch")
    with pytest.raises(KvcalcError, match="too large"):
        parse_count("9" * 400, "--batch")
    assert parse_count_list("1..8") == [1, 2, 4, 8]
    with pytest.raises(KvcalcError):
        parse_count_list("1k,2k")


@given(st.integers(min_value=1, max_value=10**6))
def test_k_suffix_is_1024(n):
    assert parse_tokens(f"{n}k") == n * 1024
    assert parse_tokens(f"{n}K") == n * 1024
