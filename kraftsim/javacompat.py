"""What kraftsim copies from the JVM, in one place: Java's hash codes, the iteration order of
java.util.HashMap / HashSet / ConcurrentHashMap, of Scala's hash maps and of the persistent hash
map behind Kafka's images, Kafka's Uuid.randomUuid, and the JDK's texts and parsers Kafka's tools rely on
(Date.toString, Integer.parseInt, String.split, Uuid.fromString).

Kafka writes records by iterating hash maps (registration listeners and features, finalized
features, configs, topics), so the order of a record's list, or of records in a snapshot,
is a function of the keys' Java hash codes and of how the map was built. The functions here
take the keys in the order they were put and return the order Java iterates them in.
"""

from __future__ import annotations

import datetime as _dt
import random
import re
from functools import lru_cache
from typing import Callable, Hashable, Iterable, Sequence, TypeVar

from kraftsim.protocol.primitives import Uuid

K = TypeVar("K", bound=Hashable)

_MASK32 = 0xFFFFFFFF

# ------------------------------------------------------------------------------ hash codes


@lru_cache(maxsize=1 << 16)  # the same names (config keys, features, listeners) come back all the time
def string_hash(s: str) -> int:
    """String.hashCode over UTF-16 code units, as its 32 bits (unsigned)."""
    h = 0
    data = s.encode("utf-16-be")
    for k in range(0, len(data), 2):
        h = (31 * h + ((data[k] << 8) | data[k + 1])) & _MASK32
    return h


def topic_partition_hash(tp: tuple[str, int]) -> int:
    """org.apache.kafka.common.TopicPartition.hashCode of (topic, partition), as its 32 bits."""
    return (31 * (31 + tp[1]) + string_hash(tp[0])) & _MASK32


def java_int_division(a: int, b: int) -> int:
    """Java's integer division of ints and longs: the quotient rounded towards zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_hash(i: int) -> int:
    """Integer.hashCode (the value itself), as its 32 bits (unsigned)."""
    return i & _MASK32


def int_list_hash(values: Iterable[int]) -> int:
    """java.util.List<Integer>.hashCode, as its 32 bits (unsigned)."""
    h = 1
    for v in values:
        h = (31 * h + v) & _MASK32
    return h


def uuid_hash(u: Uuid) -> int:
    """org.apache.kafka.common.Uuid.hashCode: the two halves of msb ^ lsb xor-ed, as 32 bits."""
    h = (u.msb ^ u.lsb) & 0xFFFFFFFFFFFFFFFF
    return ((h >> 32) ^ h) & _MASK32


def signed32(h: int) -> int:
    """32 hash bits as the Java int they are."""
    return h - (1 << 32) if h & 0x80000000 else h


# ------------------------------------------------------------------------------ java.util.HashMap


def _spread(h: int) -> int:
    return h ^ (h >> 16)


def table_size_for(c: int) -> int:
    """HashMap.tableSizeFor: the smallest power of two >= c (1 for c <= 1)."""
    n = 1
    while n < c:
        n *= 2
    return n


def hash_map_capacity(size: int, initial: int = 16) -> int:
    """The table size of a HashMap that started with `initial` buckets and then had `size` keys
    put into it (it doubles whenever it holds more than 0.75 of its table)."""
    cap = initial
    while size > int(cap * 0.75):
        cap *= 2
    return cap


def sized_capacity(expected: int) -> int:
    """The first table size of `new HashMap<>(expected)`."""
    return table_size_for(expected)


def copy_capacity(copied: int) -> int:
    """The first table size of `new HashMap<>(m)` for an m of `copied` keys (16 when m is empty)."""
    return table_size_for(int(copied / 0.75 + 1.0)) if copied > 0 else 16


def hash_set_copy_capacity(copied: int) -> int:
    """The first table size of `new HashSet<>(c)` for a c of `copied` elements."""
    return table_size_for(max(int(copied / 0.75) + 1, 16))


def hash_map_order(keys: Sequence[K], hash_of: Callable[[K], int], *, initial: int = 16) -> list[K]:
    """The iteration order of a java.util.HashMap (or HashSet) whose distinct keys were put in
    the order of `keys` into a table of `initial` buckets: by bucket of the final table, then
    by insertion (a resize keeps the relative order of the keys that share a bucket)."""
    if len(keys) < 2:
        return list(keys)
    cap = hash_map_capacity(len(keys), initial)
    return [k for _, _, k in sorted((_spread(hash_of(k)) & (cap - 1), i, k) for i, k in enumerate(keys))]


def string_hash_order(keys: Sequence[str], *, initial: int = 16) -> list[str]:
    """hash_map_order for String keys."""
    return hash_map_order(keys, string_hash, initial=initial)


def compute_if_absent_order(keys: Sequence[K], hash_of: Callable[[K], int], *, initial: int = 16) -> list[K]:
    """The iteration order of a java.util.HashMap whose distinct keys were added, in the order
    of `keys`, with `computeIfAbsent`: unlike `put`, it links a new key at the head of its
    bucket (so a bucket lists its keys newest first) and grows the table before an insert,
    once the map already holds more than 0.75 of it."""
    cap, size = initial, 0
    for _ in keys:
        if size > int(cap * 0.75):
            cap *= 2
        size += 1
    return [k for _, _, k in sorted((_spread(hash_of(k)) & (cap - 1), -i, k) for i, k in enumerate(keys))]


def scala_hash_map_order(keys: Sequence[K], hash_of: Callable[[K], int], *, initial: int = 16) -> list[K]:
    """The iteration order of a Scala 2.13 `mutable.HashMap` whose distinct keys were put in
    the order of `keys` (Kafka's tools written in Scala): by bucket of the final table (the
    same spread hash as Java's, but the table doubles before the insert that would reach
    0.75 of it), and within a bucket by the spread hash as a signed int, then by insertion."""
    cap, size = table_size_for(initial), 0
    for _ in keys:
        if size + 1 >= int(cap * 0.75):
            cap *= 2
        size += 1
    spread = [signed32(_spread(hash_of(k))) for k in keys]
    return [k for _, _, _, k in sorted((h & (cap - 1), h, i, k) for i, (h, k) in enumerate(zip(spread, keys)))]


def _scala_improve(h: int) -> int:
    """scala.collection.Hashing.improve: the bits Scala 2.13's immutable HashMap files a key by."""
    h = (h + (~(h << 9) & _MASK32)) & _MASK32
    h ^= h >> 14
    h = (h + (h << 4)) & _MASK32
    return h ^ (h >> 10)


def scala_immutable_hash_map_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of a Scala 2.13 `immutable.HashMap` (a CHAMP trie; what `groupBy`
    returns) whose distinct keys were put in the order of `keys`: each node of the trie,
    filed by 5 bits of the improved hash at a time from the lowest, lists first the keys
    alone in their 5 bits, then the nodes of the keys that share them, each by those bits
    ascending; keys whose 32 bits are all equal come in the order they were put."""

    def walk(entries: list[tuple[int, K]], shift: int) -> list[K]:
        if shift >= 32:
            return [k for _, k in entries]
        slots: dict[int, list[tuple[int, K]]] = {}
        for h, k in entries:
            slots.setdefault((h >> shift) & 31, []).append((h, k))
        ordered = sorted(slots.items(), key=lambda item: item[0])
        return [s[0][1] for _, s in ordered if len(s) == 1] + \
            [k for _, s in ordered if len(s) > 1 for k in walk(s, shift + 5)]

    return walk([(_scala_improve(hash_of(k)), k) for k in dict.fromkeys(keys)], 0)


def int_set_order(*groups: Iterable[int]) -> list[int]:
    """The iteration order of a HashSet<Integer> copied from `groups[0]` (`new HashSet<>(c)`)
    and then added to from each later group."""
    first = list(groups[0]) if groups else []
    seen = dict.fromkeys(first)
    for group in groups[1:]:
        seen.update(dict.fromkeys(v for v in group if v not in seen))
    return hash_map_order(list(seen), int_hash, initial=hash_set_copy_capacity(len(first)))


# ------------------------------------------------------------------------------ ConcurrentHashMap

#: ConcurrentHashMap(8), as java.util.Properties creates it, has 16 bins until it holds 12 keys.
CHM_PROPERTIES_BINS = 16
CHM_PROPERTIES_MAX_KEYS = 11


def concurrent_hash_map_order(keys: Sequence[str]) -> list[str]:
    """The iteration order of the ConcurrentHashMap inside java.util.Properties, for up to
    CHM_PROPERTIES_MAX_KEYS String keys put in the order of `keys` (insertion order in a bin)."""
    if len(keys) > CHM_PROPERTIES_MAX_KEYS:
        raise ValueError(f"hash order is only reproduced for up to {CHM_PROPERTIES_MAX_KEYS} keys, not {len(keys)}")

    return [k for _, _, k in sorted((concurrent_hash_map_bin(k), i, k) for i, k in enumerate(keys))]


def concurrent_hash_map_known_order(keys: Sequence[str]) -> list[str] | None:
    """The iteration order of a ConcurrentHashMap of 16 bins (`new ConcurrentHashMap<>()`, or
    a Properties') holding String `keys`, or None where it depends on the order they were put
    in: two in one bin, or more than the bins hold before the map grows."""
    bins = [concurrent_hash_map_bin(k) for k in keys]
    if len(keys) > CHM_PROPERTIES_MAX_KEYS or len(set(bins)) < len(bins):
        return None
    return concurrent_hash_map_order(list(keys))


def concurrent_hash_map_bin(key: str) -> int:
    """The bin of a String key in a ConcurrentHashMap of CHM_PROPERTIES_BINS bins: keys of one bin
    keep the order they were put in, so their order is known only when that order is."""
    return (_spread(string_hash(key)) & 0x7FFFFFFF) & (CHM_PROPERTIES_BINS - 1)


# ------------------------------------------------------------------------------ timeline TimelineHashMap

#: Knuth's multiplicative constant, as the signed long Kafka's timeline hash tables multiply by.
_FIBONACCI = -7046029254386353131
_MASK64 = (1 << 64) - 1


def timeline_capacity(size: int) -> int:
    """The slots of Kafka's timeline hash table (org.apache.kafka.timeline, behind
    TimelineHashMap) created for 0 expected entries once `size` entries were put: 2, doubled
    whenever one more entry would fill more than three quarters."""
    slots = 2
    for held in range(1, size + 1):
        if held * 0.75 > slots:
            slots *= 2
    return slots


def timeline_hash_order(keys: Sequence[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of a TimelineHashMap (created for 0 expected entries, as each
    resource's configs on Kafka's controller) whose keys were put in the order of `keys`:
    by slot (the top bits of the hash code times Knuth's constant, as 64-bit longs), and in
    a slot newest first (its iterator takes a slot's entries from the end). A table never
    shrinks: a map that once held more keys than now has more slots, and its order is the one
    of that larger table; this gives the order of a map that never held more."""
    if len(keys) < 2:
        return list(keys)
    shift = 65 - timeline_capacity(len(keys)).bit_length()

    def slot(k: K) -> int:
        return ((signed32(hash_of(k)) * _FIBONACCI) & _MASK64) >> shift

    return [k for _, _, k in sorted((slot(k), -i, k) for i, k in enumerate(keys))]


# ------------------------------------------------------------------------------ pcollections HashPMap


def hash_pmap_order(keys: Iterable[K], hash_of: Callable[[K], int]) -> list[K]:
    """The iteration order of the persistent map behind Kafka's images (pcollections'
    HashTreePMap): by the keys' hash codes as signed ints, ascending; keys whose hash codes
    collide share one stack that a put pushes onto (a put of a key already there removes it
    first), so they come newest first. `keys` are given oldest first (the order they were
    last put in); checked against pcollections 4.0.2 as Kafka 4.2 ships it."""
    return [k for _, _, k in sorted((signed32(hash_of(k)), -i, k) for i, k in enumerate(keys))]


# ------------------------------------------------------------------------------ Uuid.randomUuid

#: Uuid.ZERO_UUID and Uuid.ONE_UUID (= the metadata topic's id), which randomUuid never returns.
RESERVED_UUIDS = (Uuid.from_longs(0, 0), Uuid.from_longs(0, 1))


def random_uuid(rng: random.Random | None = None) -> Uuid:
    """Kafka's Uuid.randomUuid(): a java.util.UUID.randomUUID (version 4), never reserved,
    never printed with a leading '-'. Seeded by `rng`; the system's randomness without one."""
    rng = rng or random.SystemRandom()
    while True:
        raw = bytearray(rng.getrandbits(128).to_bytes(16, "big"))
        raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
        raw[8] = (raw[8] & 0x3F) | 0x80  # IETF variant
        u = Uuid(bytes(raw))
        if u not in RESERVED_UUIDS and not str(u).startswith("-"):
            return u


# ------------------------------------------------------------------------------ texts and parsers

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def date_to_string(when: _dt.datetime | int | float) -> str:
    """`java.util.Date.toString()`: `EEE MMM dd HH:mm:ss zzz yyyy`, e.g. `Fri Apr 19 13:20:44 UTC 2024`.

    A number is seconds since the epoch, shown in UTC; an aware datetime is shown in its
    own zone, named by its tzname().
    """
    if isinstance(when, (int, float)):
        when = _dt.datetime.fromtimestamp(when, _dt.timezone.utc)
    if when.tzinfo is None:
        raise ValueError("date_to_string needs a timezone-aware datetime (or seconds since the epoch)")
    zone = when.tzname() or "UTC"
    if zone == "UTC+00:00":
        zone = "UTC"
    return (f"{_DAYS[when.weekday()]} {_MONTHS[when.month - 1]} {when.day:02d} "
            f"{when.hour:02d}:{when.minute:02d}:{when.second:02d} {zone} {when.year}")


#: An optional sign and decimal digits of any script (Character.digit's, Unicode category Nd:
#: Integer.parseInt("\u0661\u0662\u0663") is 123), without the underscores Python's int() allows.
_JAVA_INT = re.compile(r"[+-]?\d+")


def parse_int(text: str, bits: int = 32) -> int | None:
    """Integer.parseInt (an optional sign, decimal digits, within int32), or None where it would
    throw; `bits` 16 or 64 for Short.parseShort or Long.parseLong."""
    if not _JAVA_INT.fullmatch(text):
        return None
    v = int(text)
    return v if -(2 ** (bits - 1)) <= v < 2 ** (bits - 1) else None


def java_trim(text: str) -> str:
    """String.trim: every character up to U+0020 off both ends."""
    return _TRIMMED.sub("", text)


_TRIMMED = re.compile(r"^[\x00-\x20]+|[\x00-\x20]+$")


def string_split(text: str, sep: str) -> list[str]:
    """String.split(sep) for a literal separator: without a match, [text]; otherwise
    trailing empty strings are dropped."""
    parts = text.split(sep)
    if len(parts) == 1:
        return parts
    while parts and parts[-1] == "":
        parts.pop()
    return parts


_URL_BASE64 = {c: i for i, c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")}


def url_base64_decode(text: str) -> bytes:
    """Base64.getUrlDecoder().decode(String): RFC 4648's URL-safe alphabet, padding optional
    but checked; the text is read as ISO-8859-1 bytes (other characters become '?'). Raises
    ValueError with the JDK's text where it throws IllegalArgumentException."""
    src = text.encode("latin-1", "replace")
    if len(src) == 1:
        raise ValueError("Input byte[] should at least have 2 bytes for base64 bytes")
    out, bits, shift, pos = bytearray(), 0, 18, 0
    while pos < len(src):
        ch = src[pos]
        pos += 1
        value = _URL_BASE64.get(ch)
        if value is None:
            if ch == ord("="):  # padding: only as the end of a unit of 2 or 3 characters
                if shift == 18 or (shift == 6 and (pos == len(src) or src[(pos := pos + 1) - 1] != ord("="))):
                    raise ValueError("Input byte array has wrong 4-byte ending unit")
                break
            signed = ch - 256 if ch > 127 else ch  # (the JDK prints the byte, signed, in hex)
            raise ValueError(f"Illegal base64 character {'-' if signed < 0 else ''}{abs(signed):x}")
        bits |= value << shift
        shift -= 6
        if shift < 0:
            out += (bits & 0xFFFFFF).to_bytes(3, "big")
            bits, shift = 0, 18
    if shift == 12:
        raise ValueError("Last unit does not have enough valid bits")
    out += (bits >> 8 & 0xFFFF).to_bytes(2, "big")[:{6: 1, 0: 2}.get(shift, 0)]
    if pos < len(src):
        raise ValueError(f"Input byte array has incorrect ending byte at {pos}")
    return bytes(out)


def uuid_from_string(text: str) -> Uuid:
    """Kafka's Uuid.fromString: at most 24 characters of URL-safe Base64 that decode to 16
    bytes. Raises ValueError with the text of Kafka's (or the JDK's) IllegalArgumentException."""
    if len(text) > 24:
        raise ValueError(f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID")
    raw = url_base64_decode(text)
    if len(raw) != 16:
        raise ValueError(f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the expected "
                         "16 bytes of a base64-encoded UUID")
    return Uuid(raw)


def double_to_string(x: float) -> str:
    """Double.toString (JDK 19 on: the shortest digits that read back): plain decimal with at
    least one fraction digit for 1e-3 <= |x| < 1e7, else `d.dddE±n`; NaN, Infinity."""
    if x != x:
        return "NaN"
    if x in (float("inf"), float("-inf")):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if str(x).startswith("-") else "0.0"
    sign = "-" if x < 0 else ""
    digits, exponent = _shortest_digits(abs(x))
    if 1e-3 <= abs(x) < 1e7:
        point = exponent + 1
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{exponent}"


def _shortest_digits(x: float) -> tuple[str, int]:
    """The shortest decimal digits of a positive finite double and the power of ten of the first."""
    mantissa, _, exp = f"{x!r}".partition("e")
    whole, _, frac = mantissa.partition(".")
    if frac == "0":
        frac = ""
    digits = (whole + frac).lstrip("0")
    exponent = (int(exp) if exp else 0) + len(whole.lstrip("0") or "") - 1
    if not whole.strip("0"):  # 0.00123: the exponent comes from the leading zeros of the fraction
        exponent = (int(exp) if exp else 0) - (len(frac) - len(frac.lstrip("0"))) - 1
    return digits.rstrip("0") or "0", exponent
