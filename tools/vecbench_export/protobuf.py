"""A minimal protobuf wire-format reader for TF GraphDefs: the Const tensors and a few node
attributes of classify_image_graph_def.pb, with neither TensorFlow nor the protobuf package."""

from typing import Dict, Optional, Tuple

import numpy as np

DT_FLOAT = 1


def _read_varint(buf, pos: int, end: int) -> Tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= end:
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise ValueError("varint too long")


def _iter_fields(buf, start: int, end: int):
    """Yield (field_number, wire_type, value) for a message in buf[start:end].

    value: int for varints; (lo, hi) offsets for fixed64/fixed32/bytes."""
    pos = start
    while pos < end:
        key, pos = _read_varint(buf, pos, end)
        field, wt = key >> 3, key & 7
        if field == 0:
            raise ValueError(f"invalid field number 0 at offset {pos}")
        if wt == 0:
            v, pos = _read_varint(buf, pos, end)
            yield field, wt, v
        elif wt == 1:
            if pos + 8 > end:
                raise ValueError("truncated fixed64")
            yield field, wt, (pos, pos + 8)
            pos += 8
        elif wt == 2:
            n, pos = _read_varint(buf, pos, end)
            if pos + n > end:
                raise ValueError(f"length-delimited field {field} runs past its message")
            yield field, wt, (pos, pos + n)
            pos += n
        elif wt == 5:
            if pos + 4 > end:
                raise ValueError("truncated fixed32")
            yield field, wt, (pos, pos + 4)
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wt} (field {field}) at offset {pos}")
    if pos != end:
        raise ValueError("message overruns its length")


def _int64(v: int) -> int:
    return v - (1 << 64) if v >= (1 << 63) else v


class TFGraphConsts:
    """The Const tensors (lazily decoded) and a few node attrs of a GraphDef."""

    def __init__(self, data: bytes):
        self.buf = memoryview(data)
        self.consts: Dict[str, Tuple[int, int]] = {}   # name -> TensorProto range
        self.attrs: Dict[str, Dict[str, Tuple[int, int]]] = {}  # name -> attr -> AttrValue range
        self.ops: Dict[str, str] = {}
        n = len(self.buf)
        for field, wt, val in _iter_fields(self.buf, 0, n):
            if field == 1 and wt == 2:
                self._parse_node(*val)

    def _parse_node(self, lo: int, hi: int) -> None:
        buf = self.buf
        name, op = None, None
        attrs: Dict[str, Tuple[int, int]] = {}
        for field, wt, val in _iter_fields(buf, lo, hi):
            if wt != 2:
                continue
            if field == 1:
                name = bytes(buf[val[0]:val[1]]).decode("utf-8")
            elif field == 2:
                op = bytes(buf[val[0]:val[1]]).decode("utf-8")
            elif field == 5:  # map<string, AttrValue> entry
                key, value = None, None
                for f2, w2, v2 in _iter_fields(buf, *val):
                    if f2 == 1 and w2 == 2:
                        key = bytes(buf[v2[0]:v2[1]]).decode("utf-8")
                    elif f2 == 2 and w2 == 2:
                        value = v2
                if key is not None and value is not None:
                    attrs[key] = value
        if name is None:
            return
        self.ops[name] = op or ""
        self.attrs[name] = attrs
        if op == "Const" and "value" in attrs:
            for f3, w3, v3 in _iter_fields(buf, *attrs["value"]):
                if f3 == 8 and w3 == 2:  # AttrValue.tensor
                    self.consts[name] = v3

    def attr_float(self, node: str, key: str) -> Optional[float]:
        rng = self.attrs.get(node, {}).get(key)
        if rng is None:
            return None
        for f, wt, v in _iter_fields(self.buf, *rng):
            if f == 4 and wt == 5:  # AttrValue.f
                return float(np.frombuffer(self.buf[v[0]:v[1]], dtype="<f4")[0])
        return None

    def attr_bool(self, node: str, key: str) -> Optional[bool]:
        rng = self.attrs.get(node, {}).get(key)
        if rng is None:
            return None
        for f, wt, v in _iter_fields(self.buf, *rng):
            if f == 5 and wt == 0:  # AttrValue.b
                return bool(v)
        return False  # present but default (false) value

    def has(self, name: str) -> bool:
        return name in self.consts

    def tensor(self, name: str) -> np.ndarray:
        """Decode a DT_FLOAT Const as a numpy float32 array."""
        buf = self.buf
        dtype, shape, content, floats = 0, [], None, []
        for f, wt, v in _iter_fields(buf, *self.consts[name]):
            if f == 1 and wt == 0:
                dtype = v
            elif f == 2 and wt == 2:
                for f2, w2, v2 in _iter_fields(buf, *v):
                    if f2 == 2 and w2 == 2:  # dim
                        size = 0
                        for f3, w3, v3 in _iter_fields(buf, *v2):
                            if f3 == 1 and w3 == 0:
                                size = _int64(v3)
                        shape.append(size)
                    elif f2 == 3 and w2 == 0 and v2:
                        raise ValueError(f"Const {name!r} has unknown rank")
            elif f == 4 and wt == 2:
                content = v
            elif f == 5 and wt == 2:  # packed float_val
                floats.append(np.frombuffer(buf[v[0]:v[1]], dtype="<f4"))
            elif f == 5 and wt == 5:  # unpacked float_val
                floats.append(np.frombuffer(buf[v[0]:v[1]], dtype="<f4"))
        if dtype != DT_FLOAT:
            raise ValueError(f"Const {name!r} has dtype enum {dtype}, expected DT_FLOAT (1)")
        if any(d < 0 for d in shape):
            raise ValueError(f"Const {name!r} has an unknown dimension {shape}")
        count = int(np.prod(shape)) if shape else 1
        if content is not None and content[1] > content[0]:
            nbytes = content[1] - content[0]
            if nbytes != 4 * count:
                raise ValueError(f"Const {name!r}: tensor_content has {nbytes} bytes, "
                                 f"shape {shape} needs {4 * count}")
            arr = np.frombuffer(buf[content[0]:content[1]], dtype="<f4").copy()
        else:
            vals = np.concatenate(floats) if floats else np.zeros(0, np.float32)
            if vals.size > count:
                raise ValueError(f"Const {name!r}: {vals.size} float_val for shape {shape}")
            if vals.size == 0:
                arr = np.zeros(count, np.float32)
            elif vals.size < count:  # TF semantics: the last value repeats
                arr = np.concatenate([vals, np.full(count - vals.size, vals[-1], np.float32)])
            else:
                arr = vals.copy()
        return arr.astype(np.float32, copy=False).reshape(shape)
