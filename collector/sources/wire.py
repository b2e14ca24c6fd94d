"""Find where a protobuf payload breaks, for error messages only.

The protobuf runtime says no more than "Error parsing message". When a parse fails, this walks the
wire format again against the message's descriptor and reports the byte offset, the field path and
what is wrong there (a truncated varint, a length running past the end, invalid UTF-8 in a string,
messages nested deeper than the runtime allows). It runs only after a failure, so it is written for
clarity, not speed; it stops at the runtime's depth limit, so a request nested thousands of levels
deep is described rather than exhausting Python's recursion limit.
"""

from __future__ import annotations

from typing import Any

__all__ = ["MAX_NESTING", "locate_decode_error"]

MAX_NESTING = 100
"""Messages nested below the top-level one that the protobuf runtime parses: upb's default decode depth
(`kUpb_WireFormat_DefaultDepthLimit`), also the C++ and pure-Python runtimes' recursion limit. In OTLP
an attribute value uses two levels per array and three per key-value list, below the ~5 of the span."""
_PATH_SHOWN = 6

_VARINT, _FIXED64, _LENGTH, _START_GROUP, _END_GROUP, _FIXED32 = range(6)
_TYPE_MESSAGE = 11  # FieldDescriptor.TYPE_MESSAGE
_TYPE_STRING = 9  # FieldDescriptor.TYPE_STRING


class _WireError(Exception):
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


def _varint(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    start, result, shift = pos, 0, 0
    while pos < end:
        byte = data[pos]
        result |= (byte & 0x7F) << shift
        pos += 1
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift >= 70:
            raise _WireError(start, f"{what}: varint longer than 10 bytes")
    raise _WireError(start, f"{what}: truncated varint at the end of the data")


def _field(descriptor: Any, number: int) -> Any:
    return descriptor.fields_by_number.get(number) if descriptor is not None else None


def _walk(data: bytes, pos: int, end: int, descriptor: Any, path: str, *, depth: int) -> None:
    while pos < end:
        tag_at = pos
        tag, pos = _varint(data, pos, end, f"{path or 'message'}: field tag")
        number, wire_type = tag >> 3, tag & 7
        field = _field(descriptor, number)
        name = f"{path}.{field.name}" if field is not None else f"{path}.<field {number}>"
        name = name.lstrip(".")
        if number == 0:
            raise _WireError(tag_at, f"{path or 'message'}: field number 0 is invalid (tag byte {data[tag_at]:#04x})")
        if wire_type == _VARINT:
            _, pos = _varint(data, pos, end, name)
        elif wire_type in (_FIXED64, _FIXED32):
            size = 8 if wire_type == _FIXED64 else 4
            if pos + size > end:
                raise _WireError(pos, f"{name}: {size}-byte value runs past the end ({end - pos} bytes left)")
            pos += size
        elif wire_type == _LENGTH:
            length_at = pos
            length, pos = _varint(data, pos, end, f"{name}: length")
            if pos + length > end:
                raise _WireError(length_at, f"{name}: length {length} runs past the end ({end - pos} bytes left)")
            _check_value(data, pos, pos + length, field, name, depth=depth)
            pos += length
        else:
            raise _WireError(tag_at, f"{name}: wire type {wire_type} is not used by OTLP")


def _too_deep(name: str) -> str:
    parts = name.split(".")
    shown = ".".join(parts[:_PATH_SHOWN]) + (
        f"...({len(parts) - _PATH_SHOWN} more levels)" if len(parts) > _PATH_SHOWN else ""
    )
    return (
        f"{shown}: messages nested more than {MAX_NESTING} deep, the protobuf runtime's limit "
        "(an attribute value of arrays or key-value lists nested too deeply)"
    )


def _check_value(data: bytes, start: int, end: int, field: Any, name: str, *, depth: int) -> None:
    if field is None:
        return
    if field.type == _TYPE_MESSAGE:
        if depth >= MAX_NESTING:
            raise _WireError(start, _too_deep(name))
        _walk(data, start, end, field.message_type, name, depth=depth + 1)
    elif field.type == _TYPE_STRING:
        try:
            data[start:end].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _WireError(start + exc.start, f"{name}: string is not valid UTF-8") from None


def locate_decode_error(data: bytes, descriptor: Any) -> tuple[int | None, str]:
    """The byte offset and a description of the first wire-format fault in `data`, if one is found."""
    try:
        _walk(data, 0, len(data), descriptor, "", depth=0)
    except _WireError as exc:
        return exc.offset, exc.reason
    return None, "the protobuf runtime rejected the data, but no wire-format fault was found"
