"""kraftsim.javacompat against Java's own values and against a step-by-step model of a
java.util.HashMap (puts, resizes that split buckets in order, iteration by bucket)."""

from __future__ import annotations

import base64
import random

from hypothesis import given, settings, strategies as st

from kraftsim.javacompat import (
    RESERVED_UUIDS, concurrent_hash_map_order, date_to_string, hash_map_capacity, hash_map_order, hash_pmap_order,
    int_hash, int_set_order, parse_int, random_uuid, scala_immutable_hash_map_order, signed32, string_hash, string_hash_order,
    string_split, url_base64_decode, uuid_from_string, uuid_hash,
)
from kraftsim.protocol.primitives import Uuid


def test_hash_codes_are_javas() -> None:
    # values String.hashCode / Uuid.hashCode return in a JVM
    assert signed32(string_hash("")) == 0
    assert signed32(string_hash("hello")) == 99162322
    assert signed32(string_hash("polygenelubricants")) == -(2**31)  # Integer.MIN_VALUE, a known Java fact
    assert string_hash("Aa") == string_hash("BB") == 2112  # Java's classic collision
    assert string_hash("\U0001F600") == 31 * 0xD83D + 0xDE00  # a surrogate pair is two code units
    assert signed32(int_hash(-1)) == -1
    assert uuid_hash(Uuid.from_longs(0, 1)) == 1
    assert signed32(uuid_hash(Uuid.from_longs(-1, 0))) == 0  # (int)(h >> 32) ^ (int)h of -1


class JavaHashMapModel:
    """java.util.HashMap's table, put and resize, step by step (no trees: small tables)."""

    def __init__(self, initial: int) -> None:
        self.table: list[list[object]] = [[] for _ in range(initial)]
        self.size = 0

    def _index(self, h: int, n: int) -> int:
        return (h ^ (h >> 16)) & (n - 1)

    def put(self, key: object, h: int) -> None:
        bucket = self.table[self._index(h, len(self.table))]
        if any(k == key for k, _ in bucket):
            return
        bucket.append((key, h))
        self.size += 1
        if self.size > int(len(self.table) * 0.75):
            old, n = self.table, len(self.table) * 2
            self.table = [[] for _ in range(n)]
            for b in old:  # each bucket splits into lo and hi, keeping its order
                for k, kh in b:
                    self.table[self._index(kh, n)].append((k, kh))

    def keys(self) -> list[object]:
        return [k for b in self.table for k, _ in b]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=6), max_size=40), st.sampled_from([1, 2, 4, 16, 64]))
def test_hash_map_order_is_the_order_a_hash_map_iterates_in(keys: list[str], initial: int) -> None:
    model = JavaHashMapModel(initial)
    for k in keys:
        model.put(k, string_hash(k))
    distinct = list(dict.fromkeys(keys))
    assert string_hash_order(distinct, initial=initial) == model.keys()
    assert len(model.table) == hash_map_capacity(len(distinct), initial)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=30), st.lists(st.integers(0, 100), max_size=10))
def test_int_set_order_is_a_copied_hash_set_added_to(first: list[int], later: list[int]) -> None:
    cap = 16  # new HashSet<>(c) sizes its table by c.size(), duplicates included
    while cap < int(len(first) / 0.75) + 1:
        cap *= 2
    model = JavaHashMapModel(cap)  # max(c.size()/.75 + 1, 16), rounded up to a power of 2
    for v in [*first, *later]:
        model.put(v, int_hash(v))
    assert int_set_order(first, later) == model.keys()


def test_persistent_map_order_is_by_signed_hash() -> None:
    keys = ["a", "b", "polygenelubricants", "zz"]  # the third's hash code is Integer.MIN_VALUE
    assert hash_pmap_order(keys, string_hash) == ["polygenelubricants", "a", "b", "zz"]


def test_persistent_map_puts_colliding_keys_newest_first() -> None:
    # pcollections 4.0.2, the jar Kafka 4.2 ships: HashTreePMap.empty().plus(first).plus(other)
    # .plus(second).plus(third), with hash codes 7, 3, 7, 7, iterates [other, third, second, first]
    # (probed with javac/java against ~/.cache/kraftsim/kafka/4.2.0/jars; Kafka's ImmutableMap
    # wraps the same map, and a put of a key already there moves it to the front).
    hashes = {"first": 7, "other": 3, "second": 7, "third": 7}
    assert hash_pmap_order(["first", "other", "second", "third"], hashes.__getitem__) == [
        "other", "third", "second", "first"]
    assert hash_pmap_order(["second", "first"], hashes.__getitem__) == ["first", "second"]


def test_scala_immutable_hash_map_order_is_the_champ_tries() -> None:
    # probed with javac/java against scala-library 2.13.18 (Kafka 4.4's): the keys put, in this order, into
    # scala.collection.immutable.HashMap.empty, then its keysIterator
    keys = ("orders payments nope t auto1 __consumer_offsets a b c d e f g h i j k l m n o p q r s u v w x y z "
            "aa bb cc dd ee ff gg").split()
    assert " ".join(scala_immutable_hash_map_order(keys, string_hash)) == (
        "e n t a m __consumer_offsets v p orders w k s x payments j y u f i nope q b g l cc c h aa r bb ee auto1 ff o "
        "z dd gg d")
    assert scala_immutable_hash_map_order(["a", "b", "a"], string_hash) == ["a", "b"]


def test_properties_order_of_meta_properties_keys() -> None:
    # as written by Properties.store on Java 17 (tests/storage checks real files)
    assert concurrent_hash_map_order(["version", "cluster.id", "node.id"]) == ["node.id", "version", "cluster.id"]


def test_random_uuid_is_a_version_4_uuid_and_never_reserved() -> None:
    rng = random.Random(7)
    for _ in range(500):
        u = random_uuid(rng)
        assert u not in RESERVED_UUIDS and not str(u).startswith("-")
        assert u[6] >> 4 == 4 and u[8] >> 6 == 0b10
    assert random_uuid(random.Random(1)) == random_uuid(random.Random(1))


def test_hash_map_order_needs_no_hash_of_its_own() -> None:
    assert hash_map_order([17, 1, 33], int_hash) == [17, 1, 33]  # one bucket: insertion order
    assert hash_map_order([17, 1, 33], int_hash, initial=64) == [1, 17, 33]


def test_jdk_parsers_and_texts() -> None:
    assert [parse_int(t) for t in ["+7", "-0", "2147483647", "-2147483648"]] == [7, 0, 2**31 - 1, -(2**31)]
    assert [parse_int(t) for t in ["2147483648", "", "1_0", " 1", "0x1"]] == [None] * 5  # parseInt throws
    # digits of any script, as Character.digit reads them (jshell, JDK 17); a superscript is no digit
    assert [parse_int(t) for t in ["\u0661\u0662\u0663", "+\uff17", "\u00b2"]] == [123, 7, None]
    # String.split: trailing empty strings dropped, leading kept; no match gives the text itself
    assert string_split("a,,", ",") == ["a"] and string_split(",a", ",") == ["", "a"]
    assert string_split(",,", ",") == [] and string_split("", ",") == [""]
    assert date_to_string(0) == "Thu Jan 01 00:00:00 UTC 1970"


#: Base64.getUrlDecoder().decode(s) in a JDK 17 (jshell): the length it decodes, or its message.
JDK_URL_DECODES = {
    "bad": 2, "": 0, "ab==": 1, "abc=": 2,
    "a": "Input byte[] should at least have 2 bytes for base64 bytes",
    "=": "Input byte[] should at least have 2 bytes for base64 bytes",
    "AAAAAAAAAAAAAAAAAAAAAQ=": "Input byte array has wrong 4-byte ending unit",
    "ab=c": "Input byte array has wrong 4-byte ending unit",
    "abcd=": "Input byte array has wrong 4-byte ending unit",
    "ab=": "Input byte array has wrong 4-byte ending unit",
    "a+bc": "Illegal base64 character 2b",
    "AAAAAAAAAAAAAAAAAAAAAQ\u00e9": "Illegal base64 character -17",  # (a Latin-1 byte, signed)
    "ab\u20ac": "Illegal base64 character 3f",  # (not Latin-1: read as '?')
    "ab==x": "Input byte array has incorrect ending byte at 4",
    "abcde": "Last unit does not have enough valid bits",
    "a=": "Last unit does not have enough valid bits",
}


def test_url_base64_decode_is_the_jdks() -> None:
    for text, expected in JDK_URL_DECODES.items():
        try:
            got: int | str = len(url_base64_decode(text))
        except ValueError as e:
            got = str(e)
        assert got == expected, text


@given(st.binary(max_size=40), st.booleans())
def test_url_base64_decode_reads_what_python_encodes(raw: bytes, padded: bool) -> None:
    text = base64.urlsafe_b64encode(raw).decode()
    assert url_base64_decode(text if padded else text.rstrip("=")) == raw


def test_uuid_from_string_is_kafkas() -> None:
    u = random_uuid(random.Random(7))
    assert uuid_from_string(str(u)) == uuid_from_string(f"{u}==") == u
    assert uuid_from_string("AAAAAAAAAAAAAAAAAAAAAA") == Uuid.ZERO
    for text, message in [
        ("x" * 25, "Input string with prefix `xxxxxxxxxxxxxxxxxxxxxxxx` is too long to be decoded as a base64 UUID"),
        ("bad", "Input string `bad` decoded as 2 bytes, which is not equal to the expected 16 bytes of a "
                "base64-encoded UUID"),
    ]:
        try:
            uuid_from_string(text)
        except ValueError as e:
            assert str(e) == message
        else:
            raise AssertionError(text)
