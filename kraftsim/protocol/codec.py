"""The schema-driven message codec, compiled to Python per (struct, version).

Kafka generates Java classes from its JSON schemas; kraftsim generates small Python
functions from its own schemas at load time. Each version of each struct gets a decoder
`(buf, pos) -> (message, pos)` and an encoder `(message, out: bytearray) -> None`, with
consecutive fixed-width fields read or written by one `struct` call. Generated code is
several times faster than walking the schema for every record, and it is still plain,
inspectable Python (see `source_of`). When the C extension is built, `decoder` and
`encoder` return its drop-ins for these functions (fastpath.wrap_decoder / wrap_encoder:
same results, and the generated function runs whenever the C code gives up);
`pure_decoder` and `pure_encoder` return the generated functions themselves.

Semantics follow Kafka's generator (kafka-facts §4.2): compact strings, bytes and arrays
in flexible versions; a tagged-field section at the end of every struct; unknown tagged
fields kept and written back in tag order; tagged fields written only when they differ
from their default (a struct-typed one when it differs from a struct of defaults); and a
refusal to write a non-default field at a version that lacks it, unless the field is
ignorable, when the value is dropped. A string or bytes field may override the message's
flexible versions for its own length prefix (the request header's ClientId).
"""

from __future__ import annotations

import struct
from typing import Any, Callable

from kraftsim.errors import UnsupportedVersionException
from kraftsim.protocol import fastpath as _fastpath
from kraftsim.protocol.primitives import Uuid, VarintError, read_uvarint, uvarint_bytes
from kraftsim.protocol.schema import FieldSpec, StructSpec

Decoder = _fastpath.Decoder
Encoder = _fastpath.Encoder

_FIXED = {"bool": "?", "int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint16": "H", "uint32": "I", "float64": "d"}
_FIXED_SIZE = {"?": 1, "b": 1, "h": 2, "i": 4, "q": 8, "H": 2, "I": 4, "d": 8}


class DecodeError(ValueError):
    """The bytes do not hold a valid message; the caller adds where and which record."""


def _eof() -> DecodeError:
    return DecodeError("the message runs past the end of its data")


class _Gen:
    """Accumulates generated source lines with indentation."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0
        self.counter = 0

    def emit(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def tmp(self, base: str = "t") -> str:
        self.counter += 1
        return f"_{base}{self.counter}"

    def indent(self) -> "_Indent":
        return _Indent(self)


class _Indent:
    def __init__(self, g: _Gen) -> None:
        self.g = g

    def __enter__(self) -> None:
        self.g.depth += 1

    def __exit__(self, *exc: object) -> None:
        self.g.depth -= 1


class StructCodec:
    """Compiled decoders and encoders for one struct type, per version, built lazily."""

    def __init__(self, spec: StructSpec, cls: type, nested: dict[str, type], flexible: Callable[[int], bool]):
        self.spec = spec
        self.cls = cls
        self.nested = nested
        self.flexible = flexible
        self._decoders: dict[int, Decoder] = {}
        self._encoders: dict[int, Encoder] = {}
        self._pure_decoders: dict[int, Decoder] = {}
        self._pure_encoders: dict[int, Encoder] = {}
        self._sources: dict[tuple[str, int], str] = {}

    def decoder(self, version: int) -> Decoder:
        """The decoder of one version: the C fast path when available, this codec's own otherwise."""
        fn = self._decoders.get(version)
        if fn is None:
            fn = self._decoders[version] = _fastpath.wrap_decoder(self, version, self.pure_decoder(version))
        return fn

    def encoder(self, version: int) -> Encoder:
        """The encoder of one version: the C fast path when available, this codec's own otherwise."""
        fn = self._encoders.get(version)
        if fn is None:
            fn = self._encoders[version] = _fastpath.wrap_encoder(self, version, self.pure_encoder(version))
        return fn

    def pure_decoder(self, version: int) -> Decoder:
        """The generated Python decoder (what `decoder` falls back to, and the reference it is tested against)."""
        fn = self._pure_decoders.get(version)
        if fn is None:
            fn = self._pure_decoders[version] = self._compile("decode", version)
        return fn

    def pure_encoder(self, version: int) -> Encoder:
        """The generated Python encoder (what `encoder` falls back to)."""
        fn = self._pure_encoders.get(version)
        if fn is None:
            fn = self._pure_encoders[version] = self._compile("encode", version)
        return fn

    def source_of(self, direction: str, version: int) -> str:
        """The generated Python source, for debugging and review."""
        (self.pure_decoder if direction == "decode" else self.pure_encoder)(version)
        return self._sources[(direction, version)]

    def _compile(self, direction: str, version: int) -> Callable[..., Any]:
        env: dict[str, Any] = {
            "_unpack": struct.unpack_from,
            "_pack": struct.pack,
            "_Uuid": Uuid,
            "_uvarint": read_uvarint,
            "_uvb": uvarint_bytes,
            "_eof": _eof,
            "_DecodeError": DecodeError,
            "_Unsupported": UnsupportedVersionException,
            "_VarintError": VarintError,
        }
        g = _Gen()
        flexible = self.flexible(version)
        name = f"{direction}_{self.spec.name}_v{version}"
        if direction == "decode":
            _gen_decoder(g, self.spec, version, flexible, self.cls, self.nested, env, name)
        else:
            _gen_encoder(g, self.spec, version, flexible, self.nested, env, name)
        source = "\n".join(g.lines) + "\n"
        self._sources[(direction, version)] = source
        exec(compile(source, f"<kraftsim codec {name}>", "exec"), env)
        fn: Callable[..., object] = env[name]
        return fn


# ------------------------------------------------------------------------------ helpers


def _fixed_runs(fields: list[FieldSpec]) -> list[list[FieldSpec]]:
    """Group consecutive fixed-width primitive fields so one struct call handles a run."""
    runs: list[list[FieldSpec]] = []
    for f in fields:
        fixed = not f.is_array and f.type in _FIXED
        if fixed and runs and runs[-1] and runs[-1][0].type in _FIXED and not runs[-1][0].is_array:
            runs[-1].append(f)
        else:
            runs.append([f])
    return runs


def _register_nested(env: dict[str, object], f: FieldSpec, version: int, flexible: bool, nested: dict[str, type], direction: str) -> str:
    """Compile the codec of a nested struct into env and return its name there."""
    struct_spec = f.struct
    assert struct_spec is not None, f"{f.name} is not a struct field"
    name = f"_{direction}_{struct_spec.name}_v{version}"
    if name not in env:

        def same_flexibility(_version: int) -> bool:
            return flexible

        sub = StructCodec(struct_spec, nested[struct_spec.name], nested, same_flexibility)
        env[name] = sub.pure_decoder(version) if direction == "decode" else sub.pure_encoder(version)
    return name


# ------------------------------------------------------------------------------ decoding


def _gen_read_length(g: _Gen, var: str, flexible: bool, kind: str) -> None:
    """Read a length prefix into var; -1 means null."""
    if flexible:
        g.emit(f"{var} = buf[pos]")
        g.emit(f"if {var} < 128:")
        with g.indent():
            g.emit("pos += 1")
        g.emit("else:")
        with g.indent():
            g.emit(f"{var}, pos = _uvarint(buf, pos)")
        g.emit(f"{var} -= 1")
    else:
        fmt = ">h" if kind == "string" else ">i"
        g.emit(f"{var}, = _unpack('{fmt}', buf, pos)")
        g.emit(f"pos += {2 if kind == 'string' else 4}")


def _gen_null_check(g: _Gen, f: FieldSpec, version: int, n: str, target: str) -> None:
    g.emit(f"if {n} < 0:")
    with g.indent():
        if f.nullable_in(version):
            g.emit(f"{target} = None")
        else:
            g.emit(f"raise _DecodeError('non-nullable field {f.json_name} was serialized as null')")
    g.emit("else:")


def _gen_read_value(g: _Gen, f: FieldSpec, version: int, flexible: bool, target: str, nested: dict[str, type], env: dict[str, object]) -> None:
    """Emit code that reads field f at pos into `target`."""
    t = f.type
    if f.is_array:
        n = g.tmp("n")
        _gen_read_length(g, n, flexible, "array")
        _gen_null_check(g, f, version, n, target)
        with g.indent():
            # Kafka's check: no element takes less than a byte, so a count beyond the bytes
            # left is refused before anything is built (a tiny frame cannot ask for 2**31 items).
            g.emit(f"if {n} > len(buf) - pos: raise _DecodeError('Tried to allocate a collection of size ' + str({n}) "
                   "+ ', but there are only ' + str(len(buf) - pos) + ' bytes remaining.')")
            elem = f.element_type
            if elem in _FIXED:
                code = _FIXED[elem]
                size = _FIXED_SIZE[code]
                g.emit(f"{target} = list(_unpack('>%d{code}' % {n}, buf, pos))")
                g.emit(f"pos += {n} * {size}")
            elif elem == "uuid":
                g.emit(f"if pos + 16 * {n} > len(buf): raise _eof()")
                g.emit(f"{target} = [_Uuid(buf[p:p + 16]) for p in range(pos, pos + 16 * {n}, 16)]")
                g.emit(f"pos += 16 * {n}")
            elif elem in ("string", "bytes"):
                item = g.tmp("s")
                g.emit(f"{target} = []")
                g.emit(f"for _ in range({n}):")
                with g.indent():
                    _gen_read_scalar(g, elem, f, version, flexible, item, element=True)
                    g.emit(f"{target}.append({item})")
            else:
                sub = _register_nested(env, f, version, flexible, nested, "decode")
                item = g.tmp("e")
                g.emit(f"{target} = []")
                g.emit(f"for _ in range({n}):")
                with g.indent():
                    g.emit(f"{item}, pos = {sub}(buf, pos)")
                    g.emit(f"{target}.append({item})")
    elif f.struct is not None:
        sub = _register_nested(env, f, version, flexible, nested, "decode")
        if f.nullable_in(version):
            # Kafka writes a nullable struct after an int8 marker: -1 for null, 1 for present.
            g.emit("if pos >= len(buf): raise _eof()")
            g.emit("if buf[pos] >= 128:")
            with g.indent():
                g.emit(f"{target} = None")
                g.emit("pos += 1")
            g.emit("else:")
            with g.indent():
                g.emit(f"{target}, pos = {sub}(buf, pos + 1)")
        else:
            g.emit(f"{target}, pos = {sub}(buf, pos)")
    else:
        _gen_read_scalar(g, t, f, version, flexible, target)


def _gen_read_scalar(g: _Gen, t: str, f: FieldSpec, version: int, flexible: bool, target: str, element: bool = False) -> None:
    if t in _FIXED:
        code = _FIXED[t]
        g.emit(f"{target}, = _unpack('>{code}', buf, pos)")
        g.emit(f"pos += {_FIXED_SIZE[code]}")
    elif t == "uuid":
        g.emit(f"{target} = _Uuid(buf[pos:pos + 16])")
        g.emit("pos += 16")
    elif t in ("string", "bytes"):
        n = g.tmp("n")
        _gen_read_length(g, n, flexible if element else f.compact_in(version, flexible), t)
        if element:
            g.emit(f"if {n} < 0: raise _DecodeError('null element in array {f.json_name}')")
            g.emit("if True:")
        else:
            _gen_null_check(g, f, version, n, target)
        with g.indent():
            g.emit(f"if pos + {n} > len(buf): raise _eof()")
            if t == "string":
                g.emit(f"{target} = str(buf[pos:pos + {n}], 'utf-8')")
            else:
                g.emit(f"{target} = bytes(buf[pos:pos + {n}])")
            g.emit(f"pos += {n}")
    else:
        raise AssertionError(t)


def _gen_decoder(g: _Gen, spec: StructSpec, version: int, flexible: bool, cls: type, nested: dict[str, type], env: dict[str, object], name: str) -> None:
    env["_cls"] = cls
    untagged, tagged = spec.wire_fields(version, flexible)
    var = {f.name: f"v_{f.py_name}" for f in spec.fields}
    g.emit(f"def {name}(buf, pos):")
    with g.indent():
        for run in _fixed_runs(untagged):
            if run[0].type in _FIXED and not run[0].is_array:
                fmt = ">" + "".join(_FIXED[f.type] for f in run)
                names = ", ".join(var[f.name] for f in run)
                g.emit(f"{names}, = _unpack('{fmt}', buf, pos)")
                g.emit(f"pos += {struct.calcsize(fmt)}")
            else:
                _gen_read_value(g, run[0], version, flexible, var[run[0].name], nested, env)
        # Fields absent at this version, and tagged fields until seen, take their defaults.
        for f in spec.fields:
            if f in untagged:
                continue
            dname = f"_default_{f.py_name}"
            default = f.default_value()
            if isinstance(default, list) or f.struct is not None and not f.is_array and default is None:
                g.emit(f"{var[f.name]} = {dname}()")
                env[dname] = (lambda d=tuple(default): list(d)) if isinstance(default, list) else nested[f.struct.name]  # type: ignore[union-attr]
            else:
                env[dname] = default
                g.emit(f"{var[f.name]} = {dname}")
        g.emit("unknown = ()")
        if flexible:
            g.emit("if buf[pos] == 0:")
            with g.indent():
                g.emit("pos += 1")
            g.emit("else:")
            with g.indent():
                g.emit("ntags, pos = _uvarint(buf, pos)")
                g.emit("unknown = []")
                g.emit("for _ in range(ntags):")
                with g.indent():
                    g.emit("tag, pos = _uvarint(buf, pos)")
                    g.emit("size, pos = _uvarint(buf, pos)")
                    g.emit("end = pos + size")
                    g.emit("if end > len(buf): raise _eof()")
                    first = True
                    for f in tagged:
                        g.emit(f"{'if' if first else 'elif'} tag == {f.tag}:")
                        first = False
                        with g.indent():
                            _gen_read_value(g, f, version, flexible, var[f.name], nested, env)
                            g.emit(f"if pos != end: raise _DecodeError('tagged field {f.json_name} has size ' + str(size) + ' but its value used ' + str(size + pos - end))")
                    if tagged:
                        g.emit("else:")
                    else:
                        g.emit("if True:")
                    with g.indent():
                        g.emit("unknown.append((tag, bytes(buf[pos:end])))")
                        g.emit("pos = end")
                g.emit("unknown = tuple(unknown)")
        args = ", ".join([var[f.name] for f in spec.fields] + ["unknown"])
        g.emit(f"return _cls({args}), pos")


# ------------------------------------------------------------------------------ encoding


def _gen_write_length(g: _Gen, expr: str, flexible: bool, kind: str) -> None:
    if flexible:
        g.emit(f"out += _uvb({expr} + 1)")
    else:
        g.emit(f"out += _pack('{'>h' if kind == 'string' else '>i'}', {expr})")


def _gen_write_value(g: _Gen, f: FieldSpec, version: int, flexible: bool, value: str, nested: dict[str, type], env: dict[str, object]) -> None:
    """Emit code appending value (an expression) of field f to `out`."""
    nullable = f.nullable_in(version)
    if f.is_array or f.type in ("string", "bytes"):
        g.emit(f"if {value} is None:")
        with g.indent():
            if nullable:
                compact = flexible if f.is_array else f.compact_in(version, flexible)
                _gen_write_length(g, "-1", compact, "string" if f.type == "string" else "array")
            else:
                g.emit(f"raise _Unsupported('non-nullable field {f.json_name} was set to null')")
        g.emit("else:")
        g.depth += 1
    if f.is_array:
        elem = f.element_type
        _gen_write_length(g, f"len({value})", flexible, "array")
        if elem in _FIXED:
            g.emit(f"out += _pack('>%d{_FIXED[elem]}' % len({value}), *{value})")
        elif elem == "uuid":
            g.emit(f"for _u in {value}: out += _u")
        elif elem in ("string", "bytes"):
            item = g.tmp("s")
            g.emit(f"for {item} in {value}:")
            with g.indent():
                _gen_write_scalar(g, elem, flexible, item)
        else:
            sub = _register_nested(env, f, version, flexible, nested, "encode")
            item = g.tmp("e")
            g.emit(f"for {item} in {value}:")
            with g.indent():
                g.emit(f"{sub}({item}, out)")
    elif f.struct is not None:
        sub = _register_nested(env, f, version, flexible, nested, "encode")
        if nullable:  # Kafka's int8 marker: -1 for null, 1 for present
            g.emit(f"if {value} is None: out += b'\\xff'")
            g.emit(f"else: out += b'\\x01'; {sub}({value}, out)")
        else:
            g.emit(f"{sub}({value}, out)")
    else:
        _gen_write_scalar(g, f.type, f.compact_in(version, flexible), value)
    if f.is_array or f.type in ("string", "bytes"):
        g.depth -= 1


def _gen_write_scalar(g: _Gen, t: str, flexible: bool, value: str) -> None:
    if t in _FIXED:
        g.emit(f"out += _pack('>{_FIXED[t]}', {value})")
    elif t == "uuid":
        g.emit(f"out += {value}")
    elif t == "string":
        b = g.tmp("b")
        g.emit(f"{b} = {value}.encode('utf-8')")
        _gen_write_length(g, f"len({b})", flexible, "string")
        g.emit(f"out += {b}")
    elif t == "bytes":
        _gen_write_length(g, f"len({value})", flexible, "bytes")
        g.emit(f"out += {value}")
    else:
        raise AssertionError(t)


def _gen_encoder(g: _Gen, spec: StructSpec, version: int, flexible: bool, nested: dict[str, type], env: dict[str, object], name: str) -> None:
    absent = [f for f in spec.fields if not f.present_in(version) and not f.ignorable]
    untagged, tagged = spec.wire_fields(version, flexible)
    g.emit(f"def {name}(m, out):")
    with g.indent():
        for f in absent:
            dname = f"_default_{f.py_name}"
            env[dname] = f.default_value()
            g.emit(f"if m.{f.py_name} != {dname}:")
            with g.indent():
                g.emit(f"raise _Unsupported('Attempted to write a non-default {f.json_name} at version {version}')")
        for run in _fixed_runs(untagged):
            if run[0].type in _FIXED and not run[0].is_array:
                fmt = ">" + "".join(_FIXED[f.type] for f in run)
                g.emit(f"out += _pack('{fmt}', {', '.join('m.' + f.py_name for f in run)})")
            else:
                _gen_write_value(g, run[0], version, flexible, f"m.{run[0].py_name}", nested, env)
        if not flexible:
            g.emit("return")  # also the whole body of a version with nothing to write
            return
        if not tagged:
            g.emit("if not m._unknown:")
            with g.indent():
                g.emit("out.append(0)")
                g.emit("return")
            g.emit("tags = list(m._unknown)")
        else:
            g.emit("tags = list(m._unknown) if m._unknown else []")
            for f in tagged:
                dname = f"_default_{f.py_name}"
                single_struct = f.struct is not None and not f.is_array
                env[dname] = nested[f.struct.name]() if single_struct else f.default_value()  # type: ignore[union-attr]
                cond = f"m.{f.py_name} is not None" if f.null_default else f"m.{f.py_name} != {dname}"
                g.emit(f"if {cond}:")
                with g.indent():
                    g.emit("outer = out")
                    g.emit("out = bytearray()")
                    _gen_write_value(g, f, version, flexible, f"m.{f.py_name}", nested, env)
                    g.emit(f"tags.append(({f.tag}, bytes(out)))")
                    g.emit("out = outer")
            g.emit("if not tags:")
            with g.indent():
                g.emit("out.append(0)")
                g.emit("return")
            g.emit("tags.sort(key=lambda kv: kv[0])")
        g.emit("out += _uvb(len(tags))")
        g.emit("for tag, payload in tags:")
        with g.indent():
            g.emit("out += _uvb(tag)")
            g.emit("out += _uvb(len(payload))")
            g.emit("out += payload")
