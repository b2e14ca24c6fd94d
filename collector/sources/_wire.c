/* OTLP ExportTraceServiceRequest bytes -> list of SpanRecord, without building protobuf messages.
 *
 * An accelerator for `otlp_proto.spans_from_proto_bytes`, whose pure-Python path is the one tested
 * everywhere: this decoder gives the same records, or gives up (returns None) and lets that path decide.
 * It gives up on anything but the plain case: bytes that do not parse, a known field with an unexpected
 * wire type, a string that is not UTF-8, a group, nesting deeper than MAX_DEPTH, an AnyValue with more
 * than one of its fields or with one this decoder does not know (string_value_strindex, 8, and later
 * ones), a KeyValue with two values (the protobuf runtime merges those), resource entity references, a
 * span whose ids the Python path would skip and count, and a request with no span at all (which the
 * Python path checks for another signal's export). tests/test_wire_accel.py and the `wire_accel` fuzz
 * target hold it to the Python path.
 *
 * Why: parsing with the protobuf runtime and then reading every attribute through its wrappers costs as
 * much as extracting the runs that follow; building the records straight from the wire costs a fraction.
 *
 * It also encodes one thing: a score's `gen_ai.evaluation.result` log record (`score_record`, the twin of
 * telemetry/direct_logs.py's `encode_score_record`), written once per score, where Python's joins and struct
 * packs cost several times the record's bytes.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define MAX_DEPTH 32 /* AnyValue nesting (two levels per array or kvlist); the runtime allows 100 */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

typedef struct {
    const uint8_t *p;
    Py_ssize_t n;
} Slice;

static PyObject *SpanRecordType = NULL;
static PyObject *SpanEventType = NULL;
static PyObject *EmptyTuple = NULL;

/* Read a varint; 0 when the bytes end or it runs past 10 bytes. Most are one byte (tags, short lengths): that
 * case first, inline, as every walk here reads a varint per field and about a quarter of a walk's time went to
 * the loop below. */
static int read_varint_long(Cursor *c, uint64_t *out);

static inline int read_varint(Cursor *c, uint64_t *out) {
    if (c->p < c->end && *c->p < 0x80) {
        *out = *c->p++;
        return 1;
    }
    return read_varint_long(c, out);
}

static int read_varint_long(Cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (c->p >= c->end) return 0;
        uint8_t b = *c->p++;
        if (shift == 63 && b > 1) return 0; /* over 64 bits: the runtime refuses it */
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* One field's tag; 0 at the end, -1 on a bad tag. */
static inline __attribute__((always_inline)) int read_tag(Cursor *c, uint32_t *field, uint32_t *wire) {
    if (c->p >= c->end) return 0;
    uint64_t tag;
    if (!read_varint(c, &tag) || tag > 0xFFFFFFFFu) return -1;
    *field = (uint32_t)(tag >> 3);
    *wire = (uint32_t)(tag & 7);
    if (*field == 0) return -1;
    return 1;
}

static inline __attribute__((always_inline)) int read_len(Cursor *c, Slice *out) {
    uint64_t n;
    if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0;
    out->p = c->p;
    out->n = (Py_ssize_t)n;
    c->p += n;
    return 1;
}

static int read_fixed64(Cursor *c, uint64_t *out) {
    if (c->end - c->p < 8) return 0;
    uint64_t v;
    memcpy(&v, c->p, 8); /* little-endian on every platform CPython builds this for here (x86_64, aarch64) */
    c->p += 8;
    *out = v;
    return 1;
}

/* Skip a field this decoder does not read; groups (3, 4) and unknown wire types give up. */
static int skip_field(Cursor *c, uint32_t wire) {
    uint64_t ignored;
    Slice s;
    switch (wire) {
    case 0: return read_varint(c, &ignored);
    case 1: return read_fixed64(c, &ignored);
    case 2: return read_len(c, &s);
    case 5:
        if (c->end - c->p < 4) return 0;
        c->p += 4;
        return 1;
    default: return 0;
    }
}

/* Valid UTF-8 by Python's strict rules (which match the protobuf runtime's: no surrogates, no overlong
 * forms, nothing over U+10FFFF); checked for string fields this decoder skips, as the runtime checks them. */
static int utf8_ok(Slice s) {
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s.p, s.n, NULL);
    if (text == NULL) {
        PyErr_Clear();
        return 0;
    }
    Py_DECREF(text);
    return 1;
}

static int all_ascii(Slice s) {
    Py_ssize_t i = 0;
    for (; i + 8 <= s.n; i += 8) { /* a word at a time: most strings are long ASCII values */
        uint64_t w;
        memcpy(&w, s.p + i, 8);
        if (w & 0x8080808080808080ull) return 0;
    }
    for (; i < s.n; i++)
        if (s.p[i] & 0x80) return 0;
    return 1;
}

/* A string field as str; NULL with no exception set when it is not UTF-8 (give up). */
static PyObject *text_of(Slice s) {
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s.p, s.n, NULL);
    if (text == NULL) PyErr_Clear();
    return text;
}

static inline int check_string(Slice s) { return all_ascii(s) || utf8_ok(s); }

/* A string field that may come more than once: the last one is kept, and the runtime refuses the request
 * when an earlier one is not UTF-8, so each one it replaces is checked here (0: give up). */
static int replace_string(Slice *slot, int *seen, Slice s) {
    if ((*seen)++ && !check_string(*slot)) return 0;
    *slot = s;
    return 1;
}

/* Result codes: 1 done, 0 give up (no exception), -1 a Python error (memory). */
#define GIVE_UP 0
#define FAILED (-1)
#define MARKED 2 /* validate_key_value: valid, and its key is one of the markers it was given */

/* The pre-filter's markers, a tuple of bytes (NULL: none), with a bit per length under 64 and a bit per first byte
 * that one of them has: most attribute keys are no marker's length, or do not start as one does ("http." against
 * "gen_ai."), and are ruled out by those bits alone, inline. */
typedef struct {
    PyObject *tuple;
    uint64_t lengths;
    uint64_t firsts[4];
} Markers;

static Markers markers_of(PyObject *tuple) {
    Markers m = {tuple, 0, {0, 0, 0, 0}};
    for (Py_ssize_t i = 0; tuple != NULL && i < PyTuple_GET_SIZE(tuple); i++) {
        PyObject *marker = PyTuple_GET_ITEM(tuple, i);
        Py_ssize_t n = PyBytes_GET_SIZE(marker);
        m.lengths |= n < 64 ? 1ull << n : 1ull << 63; /* bit 63: 63 bytes or more, compared in full */
        uint8_t first = n > 0 ? (uint8_t)PyBytes_AS_STRING(marker)[0] : 0;
        m.firsts[first >> 6] |= 1ull << (first & 63); /* an empty marker: as if it began with byte 0 */
    }
    return m;
}

static int is_marker_among(const Markers *markers, Slice s) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(markers->tuple); i++) {
        PyObject *marker = PyTuple_GET_ITEM(markers->tuple, i);
        if (PyBytes_GET_SIZE(marker) == s.n && memcmp(PyBytes_AS_STRING(marker), s.p, (size_t)s.n) == 0) return 1;
    }
    return 0;
}

static inline __attribute__((always_inline)) int is_marker(const Markers *markers, Slice s) {
    if (markers->tuple == NULL || !(markers->lengths >> (s.n < 64 ? s.n : 63) & 1)) return 0;
    uint8_t first = s.n > 0 ? s.p[0] : 0;
    if (!(markers->firsts[first >> 6] >> (first & 63) & 1)) return 0;
    return is_marker_among(markers, s);
}

static int decode_any(Slice body, int depth, PyObject **out);
static int decode_attributes_into(Slice kv, int depth, PyObject *dict);
static int validate_any(Slice body, int depth);
static int validate_key_value(Slice body, int depth, const Markers *keys);

/* An ArrayValue's items as a list, or a KeyValueList's entries as a dict (`as_dict`): both are field 1. */
static int decode_values(Slice body, int depth, int as_dict, PyObject **out) {
    PyObject *values = as_dict ? PyDict_New() : PyList_New(0);
    if (values == NULL) return FAILED;
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r = 1;
    while (r == 1 && (t = read_tag(&c, &field, &wire)) == 1) {
        Slice item;
        if (field != 1) {
            r = skip_field(&c, wire) ? 1 : GIVE_UP;
        } else if (wire != 2 || !read_len(&c, &item)) {
            r = GIVE_UP;
        } else if (as_dict) {
            r = decode_attributes_into(item, depth + 1, values);
        } else {
            PyObject *value;
            if ((r = decode_any(item, depth + 1, &value)) == 1) {
                r = PyList_Append(values, value) < 0 ? FAILED : 1;
                Py_DECREF(value);
            }
        }
    }
    if (r == 1 && t < 0) r = GIVE_UP;
    if (r != 1) {
        Py_DECREF(values);
        return r;
    }
    *out = values;
    return 1;
}

/* An AnyValue as `otlp_proto.decode_any_value` gives it: None when unset. */
static int decode_any(Slice body, int depth, PyObject **out) {
    if (depth > MAX_DEPTH) return GIVE_UP;
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire, which = 0;
    int seen = 0, t;
    uint64_t number = 0;
    Slice s = {NULL, 0};
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        if (field >= 1 && field <= 7) {
            if (seen++) return GIVE_UP; /* the runtime merges or replaces; rare enough to leave to it */
            which = field;
            switch (field) {
            case 1: case 5: case 6: case 7:
                if (wire != 2 || !read_len(&c, &s)) return GIVE_UP;
                break;
            case 2: case 3:
                if (wire != 0 || !read_varint(&c, &number)) return GIVE_UP;
                break;
            case 4:
                if (wire != 1 || !read_fixed64(&c, &number)) return GIVE_UP;
                break;
            }
        } else {
            return GIVE_UP; /* a newer member of the oneof (string_value_strindex, 8, ...): left to the runtime */
        }
    }
    if (t < 0) return GIVE_UP;
    switch (which) {
    case 0:
        Py_INCREF(Py_None);
        *out = Py_None;
        return 1;
    case 1:
        *out = text_of(s);
        return *out != NULL ? 1 : (PyErr_Occurred() ? FAILED : GIVE_UP);
    case 2:
        *out = PyBool_FromLong(number != 0);
        return 1;
    case 3:
        *out = PyLong_FromLongLong((long long)(int64_t)number);
        return *out != NULL ? 1 : FAILED;
    case 4: {
        double d;
        memcpy(&d, &number, 8);
        *out = PyFloat_FromDouble(d);
        return *out != NULL ? 1 : FAILED;
    }
    case 5: return decode_values(s, depth + 1, 0, out);
    case 6: return decode_values(s, depth + 1, 1, out);
    case 7:
        *out = PyBytes_FromStringAndSize((const char *)s.p, s.n);
        return *out != NULL ? 1 : FAILED;
    }
    return GIVE_UP;
}

/* One KeyValue into `dict` (a later equal key replaces the value in place, as the Python path's does). */
static int decode_attributes_into(Slice kv, int depth, PyObject *dict) {
    Cursor c = {kv.p, kv.p + kv.n};
    uint32_t field, wire;
    int t, values = 0, keys = 0;
    Slice key = {(const uint8_t *)"", 0}, value = {(const uint8_t *)"", 0}, s;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        if (field == 1) {
            if (wire != 2 || !read_len(&c, &s) || !replace_string(&key, &keys, s)) return GIVE_UP;
        } else if (field == 2) {
            if (wire != 2 || !read_len(&c, &value) || values++) return GIVE_UP;
        } else if (!skip_field(&c, wire)) {
            return GIVE_UP;
        }
    }
    if (t < 0) return GIVE_UP;
    PyObject *k = text_of(key);
    if (k == NULL) return PyErr_Occurred() ? FAILED : GIVE_UP;
    PyObject *v;
    int r = decode_any(value, depth, &v);
    if (r != 1) {
        Py_DECREF(k);
        return r;
    }
    int set = PyDict_SetItem(dict, k, v);
    Py_DECREF(k);
    Py_DECREF(v);
    return set < 0 ? FAILED : 1;
}

/* Validation of what is parsed but not kept (links, scope attributes, schema URLs): the runtime refuses a
 * request whose string anywhere is not UTF-8, so the decoder must not accept it. */
static int validate_any(Slice body, int depth) {
    if (depth > MAX_DEPTH) return GIVE_UP;
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, seen = 0;
    uint64_t ignored;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        if (field >= 1 && field <= 7 && seen++) return GIVE_UP;
        Slice s;
        switch (field) {
        case 1:
            if (wire != 2 || !read_len(&c, &s) || !check_string(s)) return GIVE_UP;
            break;
        case 2: case 3:
            if (wire != 0 || !read_varint(&c, &ignored)) return GIVE_UP;
            break;
        case 4:
            if (wire != 1 || !read_fixed64(&c, &ignored)) return GIVE_UP;
            break;
        case 5: case 6: {
            if (wire != 2 || !read_len(&c, &s)) return GIVE_UP;
            Cursor inner = {s.p, s.p + s.n};
            uint32_t f2, w2;
            int t2;
            while ((t2 = read_tag(&inner, &f2, &w2)) == 1) {
                Slice item;
                if (f2 == 1) {
                    if (w2 != 2 || !read_len(&inner, &item)) return GIVE_UP;
                    int r = field == 5 ? validate_any(item, depth + 2) : validate_key_value(item, depth + 2, NULL);
                    if (r != 1) return r;
                } else if (!skip_field(&inner, w2)) {
                    return GIVE_UP;
                }
            }
            if (t2 < 0) return GIVE_UP;
            break;
        }
        case 7:
            if (wire != 2 || !read_len(&c, &s)) return GIVE_UP;
            break;
        default:
            return GIVE_UP; /* as in decode_any */
        }
    }
    return t < 0 ? GIVE_UP : 1;
}

/* A KeyValue, validated; given markers (NULL: none), MARKED rather than 1 when a key field of it is one (a span
 * attribute's, for the pre-filter: one walk of the attribute, not a look for the key then a validation). */
static int validate_key_value(Slice body, int depth, const Markers *keys) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, values = 0, shown = 0;
    Slice s;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        if (field == 1) {
            if (wire != 2 || !read_len(&c, &s) || !check_string(s)) return GIVE_UP;
            if (keys != NULL && !shown) shown = is_marker(keys, s);
        } else if (field == 2) {
            if (wire != 2 || !read_len(&c, &s) || values++) return GIVE_UP;
            int r = validate_any(s, depth);
            if (r != 1) return r;
        } else if (!skip_field(&c, wire)) {
            return GIVE_UP;
        }
    }
    return t < 0 ? GIVE_UP : shown ? MARKED : 1;
}

/* A message whose fields this decoder does not keep: `strings` and `kvs` are bitmasks of the field numbers
 * (under 32) that hold a string or a repeated KeyValue; `bytes_fields` those of bytes; `varints` and
 * `fixed` those of varint and fixed32/64 fields, checked for their wire type only; `give_up` those left to the
 * runtime, which knows their shape. */
typedef struct {
    uint32_t strings, kvs, bytes_fields, varints, fixed64s, fixed32s, give_up;
} Shape;

static const Shape LINK = {.strings = 1u << 3, .kvs = 1u << 4, .bytes_fields = (1u << 1) | (1u << 2),
                           .varints = 1u << 5, .fixed32s = 1u << 6};

/* One field of a message of `shape`, its tag read; the cursor moves past it. */
static int validate_field(Cursor *c, uint32_t field, uint32_t wire, const Shape *shape) {
    uint32_t bit = field < 32 ? 1u << field : 0;
    Slice s;
    uint64_t ignored;
    if (bit & shape->give_up) return GIVE_UP;
    if (bit & (shape->strings | shape->kvs | shape->bytes_fields)) {
        if (wire != 2 || !read_len(c, &s)) return GIVE_UP;
        if ((bit & shape->strings) && !check_string(s)) return GIVE_UP;
        if (bit & shape->kvs) return validate_key_value(s, 0, NULL);
    } else if (bit & shape->varints) {
        if (wire != 0 || !read_varint(c, &ignored)) return GIVE_UP;
    } else if (bit & shape->fixed64s) {
        if (wire != 1 || !read_fixed64(c, &ignored)) return GIVE_UP;
    } else if (bit & shape->fixed32s) {
        if (wire != 5 || c->end - c->p < 4) return GIVE_UP;
        c->p += 4;
    } else if (!skip_field(c, wire)) {
        return GIVE_UP;
    }
    return 1;
}

static int validate_message(Slice body, const Shape *shape) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r;
    while ((t = read_tag(&c, &field, &wire)) == 1)
        if ((r = validate_field(&c, field, wire, shape)) != 1) return r;
    return t < 0 ? GIVE_UP : 1;
}

static const char HEX[] = "0123456789abcdef";

static PyObject *hex_of(const uint8_t *p, Py_ssize_t n) {
    PyObject *out = PyUnicode_New(n * 2, 127);
    if (out == NULL) return NULL;
    Py_UCS1 *d = PyUnicode_1BYTE_DATA(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        d[2 * i] = (Py_UCS1)HEX[p[i] >> 4];
        d[2 * i + 1] = (Py_UCS1)HEX[p[i] & 15];
    }
    return out;
}

static int is_zero(const uint8_t *p, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

/* An Event as SpanEvent(name, time_ns, attributes). */
static int decode_event(Slice body, PyObject **out) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r, names = 0;
    uint64_t time_ns = 0, ignored;
    Slice name = {(const uint8_t *)"", 0}, s;
    PyObject *attributes = PyDict_New();
    if (attributes == NULL) return FAILED;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        switch (field) {
        case 1:
            if (wire != 1 || !read_fixed64(&c, &time_ns)) goto give_up;
            break;
        case 2:
            if (wire != 2 || !read_len(&c, &s) || !replace_string(&name, &names, s)) goto give_up;
            break;
        case 3:
            if (wire != 2 || !read_len(&c, &s)) goto give_up;
            if ((r = decode_attributes_into(s, 0, attributes)) != 1) goto fail_r;
            break;
        case 4:
            if (wire != 0 || !read_varint(&c, &ignored)) goto give_up;
            break;
        default:
            if (!skip_field(&c, wire)) goto give_up;
        }
    }
    if (t < 0) goto give_up;
    PyObject *name_text = text_of(name);
    if (name_text == NULL) {
        r = PyErr_Occurred() ? FAILED : GIVE_UP;
        goto fail_r;
    }
    PyObject *time_obj = PyLong_FromUnsignedLongLong(time_ns);
    if (time_obj == NULL) {
        Py_DECREF(name_text);
        r = FAILED;
        goto fail_r;
    }
    PyObject *args[3] = {name_text, time_obj, attributes};
    *out = PyObject_Vectorcall(SpanEventType, args, 3, NULL);
    Py_DECREF(name_text);
    Py_DECREF(time_obj);
    Py_DECREF(attributes);
    return *out != NULL ? 1 : FAILED;
give_up:
    r = GIVE_UP;
fail_r:
    Py_DECREF(attributes);
    return r;
}

typedef struct {
    PyObject *trace_hex;      /* the last trace id's hex: a request holds few traces, each of many spans */
    const uint8_t *trace_raw; /* and its 16 bytes */
} TraceCache;

/* One Span as a SpanRecord appended to `out`. */
static int decode_span(Slice body, PyObject *resource, PyObject *scope, TraceCache *cache, PyObject *out) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r = GIVE_UP, names = 0, messages = 0;
    uint64_t kind = 0, start = 0, end = 0, ignored, code = 0;
    Slice trace = {NULL, 0}, span = {NULL, 0}, parent = {NULL, 0}, name = {(const uint8_t *)"", 0};
    Slice message = {(const uint8_t *)"", 0}, s;
    PyObject *attributes = PyDict_New(), *events = NULL;
    if (attributes == NULL) return FAILED;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        switch (field) {
        case 1: case 2: case 4: case 3: case 5:
            if (wire != 2 || !read_len(&c, &s)) goto done;
            if (field == 1) trace = s;
            else if (field == 2) span = s;
            else if (field == 4) parent = s;
            else if (field == 5) {
                if (!replace_string(&name, &names, s)) goto done;
            }
            else if (!check_string(s)) goto done; /* trace_state */
            break;
        case 6: case 10: case 12: case 14:
            if (wire != 0 || !read_varint(&c, field == 6 ? &kind : &ignored)) goto done;
            break;
        case 7: case 8:
            if (wire != 1 || !read_fixed64(&c, field == 7 ? &start : &end)) goto done;
            break;
        case 9:
            if (wire != 2 || !read_len(&c, &s)) goto done;
            if ((r = decode_attributes_into(s, 0, attributes)) != 1) goto done;
            r = GIVE_UP;
            break;
        case 11: {
            if (wire != 2 || !read_len(&c, &s)) goto done;
            if (events == NULL && (events = PyList_New(0)) == NULL) {
                r = FAILED;
                goto done;
            }
            PyObject *event;
            if ((r = decode_event(s, &event)) != 1) goto done;
            r = GIVE_UP;
            int appended = PyList_Append(events, event);
            Py_DECREF(event);
            if (appended < 0) {
                r = FAILED;
                goto done;
            }
            break;
        }
        case 13:
            if (wire != 2 || !read_len(&c, &s)) goto done;
            if ((r = validate_message(s, &LINK)) != 1) goto done;
            r = GIVE_UP;
            break;
        case 15: { /* Status: a second one merges into the first, field by field, as parsing it again does */
            if (wire != 2 || !read_len(&c, &s)) goto done;
            Cursor sc = {s.p, s.p + s.n};
            uint32_t f2, w2;
            int t2;
            while ((t2 = read_tag(&sc, &f2, &w2)) == 1) {
                if (f2 == 2) {
                    if (w2 != 2 || !read_len(&sc, &s) || !replace_string(&message, &messages, s)) goto done;
                } else if (f2 == 3) {
                    if (w2 != 0 || !read_varint(&sc, &code)) goto done;
                } else if (!skip_field(&sc, w2)) {
                    goto done;
                }
            }
            if (t2 < 0) goto done;
            break;
        }
        case 16:
            if (wire != 5 || c.end - c.p < 4) goto done;
            c.p += 4;
            break;
        default:
            if (!skip_field(&c, wire)) goto done;
        }
    }
    if (t < 0) goto done;
    /* the ids the Python path keeps; any other span is skipped and counted there */
    if (trace.n != 16 || span.n != 8 || (parent.n && parent.n != 8) || is_zero(trace.p, 16) || is_zero(span.p, 8))
        goto done;
    PyObject *trace_hex;
    if (cache->trace_hex != NULL && memcmp(cache->trace_raw, trace.p, 16) == 0) {
        trace_hex = cache->trace_hex;
        Py_INCREF(trace_hex);
    } else {
        if ((trace_hex = hex_of(trace.p, 16)) == NULL) {
            r = FAILED;
            goto done;
        }
        Py_XDECREF(cache->trace_hex);
        Py_INCREF(trace_hex);
        cache->trace_hex = trace_hex;
        cache->trace_raw = trace.p;
    }
    PyObject *args[13] = {trace_hex, NULL};
    args[1] = hex_of(span.p, 8);
    if (parent.n && !is_zero(parent.p, 8)) {
        args[2] = hex_of(parent.p, 8);
    } else {
        Py_INCREF(Py_None);
        args[2] = Py_None;
    }
    args[3] = text_of(name);
    args[4] = PyLong_FromLong((long)(int32_t)(uint32_t)kind); /* an enum: int32, as the runtime reads it */
    args[5] = PyLong_FromUnsignedLongLong(start);
    args[6] = PyLong_FromUnsignedLongLong(end);
    args[7] = PyLong_FromLong((long)(int32_t)(uint32_t)code);
    args[8] = text_of(message);
    args[9] = attributes;
    if (events != NULL) {
        args[10] = PyList_AsTuple(events);
    } else {
        Py_INCREF(EmptyTuple);
        args[10] = EmptyTuple;
    }
    args[11] = resource;
    args[12] = scope;
    int complete = 1;
    for (int i = 1; i < 11; i++)
        if (args[i] == NULL) complete = 0;
    if (complete) {
        PyObject *record = PyObject_Vectorcall(SpanRecordType, args, 13, NULL);
        if (record != NULL) {
            r = PyList_Append(out, record) < 0 ? FAILED : 1;
            Py_DECREF(record);
        } else {
            r = FAILED;
        }
    } else {
        r = PyErr_Occurred() ? FAILED : GIVE_UP; /* a name or message that is not UTF-8: give up */
    }
    for (int i = 0; i < 11; i++)
        if (i != 9) Py_XDECREF(args[i]);
done:
    Py_DECREF(attributes);
    Py_XDECREF(events);
    return r;
}

/* A ScopeSpans block: its scope's name first (it may come after the spans), then its spans. */
static int decode_scope_spans(Slice body, PyObject *resource, TraceCache *cache, PyObject *out, Py_ssize_t *spans) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r, names = 0;
    Slice name = {(const uint8_t *)"", 0}, s;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        if (field == 1) { /* InstrumentationScope: name 1, version 2, attributes 3, dropped 4 */
            if (wire != 2 || !read_len(&c, &s)) return GIVE_UP;
            Cursor sc = {s.p, s.p + s.n};
            uint32_t f2, w2;
            int t2;
            Slice v;
            uint64_t ignored;
            while ((t2 = read_tag(&sc, &f2, &w2)) == 1) {
                if (f2 == 1 || f2 == 2 || f2 == 3) {
                    if (w2 != 2 || !read_len(&sc, &v)) return GIVE_UP;
                    if (f2 == 1 && !replace_string(&name, &names, v)) return GIVE_UP;
                    else if (f2 == 2 && !check_string(v)) return GIVE_UP;
                    else if (f2 == 3 && (r = validate_key_value(v, 0, NULL)) != 1) return r;
                } else if (f2 == 4) {
                    if (w2 != 0 || !read_varint(&sc, &ignored)) return GIVE_UP;
                } else if (!skip_field(&sc, w2)) {
                    return GIVE_UP;
                }
            }
            if (t2 < 0) return GIVE_UP;
        } else if (field == 2 || field == 3) {
            if (wire != 2 || !read_len(&c, &s)) return GIVE_UP;
            if (field == 3 && !check_string(s)) return GIVE_UP;
        } else if (!skip_field(&c, wire)) {
            return GIVE_UP;
        }
    }
    if (t < 0) return GIVE_UP;
    PyObject *scope = text_of(name);
    if (scope == NULL) return PyErr_Occurred() ? FAILED : GIVE_UP;
    c.p = body.p;
    r = 1;
    while (r == 1 && read_tag(&c, &field, &wire) == 1) {
        if (field == 2) {
            read_len(&c, &s); /* checked above */
            r = decode_span(s, resource, scope, cache, out);
            ++*spans;
        } else {
            skip_field(&c, wire);
        }
    }
    Py_DECREF(scope);
    return r;
}

/* A ResourceSpans block: its resource's attributes first (shared by its spans), then its scope blocks. */
static int decode_resource_spans(Slice body, TraceCache *cache, PyObject *out, Py_ssize_t *spans) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r;
    Slice s;
    PyObject *resource = PyDict_New();
    if (resource == NULL) return FAILED;
    while ((t = read_tag(&c, &field, &wire)) == 1) {
        if (field == 1) { /* Resource: attributes 1, dropped 2, entity refs 3; a second one merges */
            if (wire != 2 || !read_len(&c, &s)) goto give_up;
            Cursor rc = {s.p, s.p + s.n};
            uint32_t f2, w2;
            int t2;
            Slice kv;
            uint64_t ignored;
            while ((t2 = read_tag(&rc, &f2, &w2)) == 1) {
                if (f2 == 1) {
                    if (w2 != 2 || !read_len(&rc, &kv)) goto give_up;
                    if ((r = decode_attributes_into(kv, 0, resource)) != 1) goto fail_r;
                } else if (f2 == 2) {
                    if (w2 != 0 || !read_varint(&rc, &ignored)) goto give_up;
                } else if (f2 == 3) {
                    goto give_up; /* entity references: left to the runtime, which knows their shape */
                } else if (!skip_field(&rc, w2)) {
                    goto give_up;
                }
            }
            if (t2 < 0) goto give_up;
        } else if (field == 2 || field == 3) {
            if (wire != 2 || !read_len(&c, &s)) goto give_up;
            if (field == 3 && !check_string(s)) goto give_up;
        } else if (!skip_field(&c, wire)) {
            goto give_up;
        }
    }
    if (t < 0) goto give_up;
    c.p = body.p;
    r = 1;
    while (r == 1 && read_tag(&c, &field, &wire) == 1) {
        if (field == 2) {
            read_len(&c, &s);
            r = decode_scope_spans(s, resource, cache, out, spans);
        } else {
            skip_field(&c, wire);
        }
    }
    Py_DECREF(resource);
    return r;
give_up:
    r = GIVE_UP;
fail_r:
    Py_DECREF(resource);
    return r;
}

static PyObject *decode_spans(PyObject *module, PyObject *arg) {
    (void)module;
    if (SpanRecordType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_wire.configure(SpanRecord, SpanEvent) was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    PyObject *out = PyList_New(0);
    TraceCache cache = {NULL, NULL};
    Py_ssize_t spans = 0, blocks = 0;
    int r = out != NULL ? 1 : FAILED;
    uint32_t field, wire;
    int t = 0;
    while (r == 1 && (t = read_tag(&c, &field, &wire)) == 1) {
        Slice s;
        if (field == 1) {
            if (wire != 2 || !read_len(&c, &s)) {
                r = GIVE_UP;
                break;
            }
            blocks++;
            r = decode_resource_spans(s, &cache, out, &spans);
        } else if (!skip_field(&c, wire)) {
            r = GIVE_UP;
        }
    }
    if (t < 0) r = GIVE_UP;
    Py_XDECREF(cache.trace_hex);
    PyBuffer_Release(&view);
    if (r == FAILED) {
        Py_XDECREF(out);
        return NULL;
    }
    if (r == GIVE_UP || blocks == 0 || spans == 0) {
        Py_XDECREF(out);
        Py_RETURN_NONE;
    }
    return out;
}

/* One framed `spans` entry of a request (its tag, length and Span, as `serve`'s carriers keep it) as a
 * SpanRecord with the given resource attributes and scope name, or None: decode it the usual way. */
static PyObject *decode_span_entry(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode_span_entry(entry, resource, scope) takes three arguments");
        return NULL;
    }
    if (SpanRecordType == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_wire.configure(SpanRecord, SpanEvent) was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Cursor c = {(const uint8_t *)view.buf, (const uint8_t *)view.buf + view.len};
    uint32_t field, wire;
    Slice body;
    int r = GIVE_UP;
    PyObject *out = NULL;
    if (read_tag(&c, &field, &wire) == 1 && field == 2 && wire == 2 && read_len(&c, &body) && c.p == c.end) {
        out = PyList_New(0);
        TraceCache cache = {NULL, NULL};
        r = out != NULL ? decode_span(body, args[1], args[2], &cache, out) : FAILED;
        Py_XDECREF(cache.trace_hex);
    }
    PyBuffer_Release(&view);
    if (r == FAILED) {
        Py_XDECREF(out);
        return NULL;
    }
    if (r == GIVE_UP) {
        Py_XDECREF(out);
        Py_RETURN_NONE;
    }
    PyObject *record = PyList_GET_ITEM(out, 0);
    Py_INCREF(record);
    Py_DECREF(out);
    return record;
}

/* A trace id's bytes object (a new reference): `last` again when it holds the same bytes, as the spans of a
 * trace mostly come together, else a new one. */
static PyObject *trace_key(PyObject *last, Slice trace) {
    if (last != NULL && PyBytes_GET_SIZE(last) == trace.n && memcmp(PyBytes_AS_STRING(last), trace.p, trace.n) == 0) {
        Py_INCREF(last);
        return last;
    }
    return PyBytes_FromStringAndSize((const char *)trace.p, trace.n);
}

/* `plain_index`: the shapes of what it validates and does not keep. */
static const Shape EVENT = {.fixed64s = 1u << 1, .strings = 1u << 2, .kvs = 1u << 3, .varints = 1u << 4};
static const Shape STATUS = {.strings = 1u << 2, .varints = 1u << 3};
static const Shape SPAN = {.bytes_fields = (1u << 2), .strings = (1u << 3) | (1u << 5), .kvs = 1u << 9,
                           .varints = (1u << 6) | (1u << 10) | (1u << 12) | (1u << 14),
                           .fixed64s = (1u << 7) | (1u << 8), .fixed32s = 1u << 16};
static const Shape SCOPE = {.strings = (1u << 1) | (1u << 2), .kvs = 1u << 3, .varints = 1u << 4};
static const Shape RESOURCE = {.kvs = 1u << 1, .varints = 1u << 2, .give_up = 1u << 3}; /* entity refs */

/* Whether any field `number` (a string) of the message `body` is one of `markers`; 0 too when the body does not
 * walk (its validation says so). */
static int marks_field(Slice body, uint32_t number, const Markers *markers) {
    if (markers->tuple == NULL) return 0;
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    Slice s;
    while (read_tag(&c, &field, &wire) == 1) {
        if (field == number && wire == 2) {
            if (!read_len(&c, &s)) return 0;
            if (is_marker(markers, s)) return 1;
        } else if (!skip_field(&c, wire)) {
            return 0;
        }
    }
    return 0;
}

/* Whether a ScopeSpans' scope (field 1, an InstrumentationScope) has a name among `scopes`. */
static int scope_shows(Slice scope_spans, const Markers *scopes) {
    Cursor c = {scope_spans.p, scope_spans.p + scope_spans.n};
    uint32_t field, wire;
    Slice s;
    while (read_tag(&c, &field, &wire) == 1) {
        if (field == 1 && wire == 2) {
            if (!read_len(&c, &s)) return 0;
            if (marks_field(s, 1, scopes)) return 1;
        } else if (!skip_field(&c, wire)) {
            return 0;
        }
    }
    return 0;
}

static int bytes_tuple(PyObject *markers) {
    if (!PyTuple_Check(markers)) return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(markers); i++)
        if (!PyBytes_Check(PyTuple_GET_ITEM(markers, i))) return 0;
    return 1;
}

/* The arguments of a walk that takes the markers: (data) or (data, keys, scopes), the markers tuples of bytes;
 * 0 with an exception set when they are not. */
static int marker_args(const char *name, PyObject *const *args, Py_ssize_t nargs, Markers *keys, Markers *scopes) {
    if (nargs != 1 && nargs != 3) {
        PyErr_Format(PyExc_TypeError, "%s(data) or %s(data, keys, scopes)", name, name);
        return 0;
    }
    if (nargs == 3 && (!bytes_tuple(args[1]) || !bytes_tuple(args[2]))) {
        PyErr_Format(PyExc_TypeError, "%s: the markers are two tuples of bytes", name);
        return 0;
    }
    *keys = markers_of(nargs == 3 ? args[1] : NULL);
    *scopes = markers_of(nargs == 3 ? args[2] : NULL);
    return 1;
}

/* The table walks (`span_table`, `checked_table`, `request_index`): a row per span, kept in a C array while the walk
 * runs and turned into Python objects once at its end, in the form asked for. */
typedef struct {
    Py_ssize_t start, end; /* the framed `spans` entry: its tag's offset, the offset after it */
    const uint8_t *trace;  /* the span's trace id, in the request's bytes */
    Py_ssize_t trace_n;
    uint8_t flag, marked;
} Row;

typedef struct {
    const uint8_t *base;
    Markers keys, scopes; /* tuple NULL: no markers given */
    int scope_marked;     /* the current scope's name is a marker */
    int checked;          /* every field validated, as the runtime validates it (all but `span_table`) */
    Row *rows;
    Py_ssize_t n, capacity, blocks, marked;
    Py_ssize_t limit; /* most spans, and most blocks, before the walk gives up (`request_index`'s bound) */
} Table;

#define SPAN_ROOT 1   /* no parent span id */
#define SPAN_IDS_OK 2 /* ids as `otlp_proto.ids_ok` wants them: 16-byte and 8-byte non-zero ids, parent empty or 8 */

/* A field of a request (level 0), ResourceSpans (1) or ScopeSpans (2) other than its entries, validated as the
 * runtime validates it: the resource or scope, the schema URL; any other field skipped. */
static int check_block_field(Cursor *c, int level, uint32_t field, uint32_t wire) {
    Slice s;
    if (level == 0 ? field != 1 : field > 3) return skip_field(c, wire) ? 1 : GIVE_UP;
    if (wire != 2 || !read_len(c, &s) || field == 2) return GIVE_UP; /* field 2 here: an entry of the wrong type */
    if (field == 1) return validate_message(s, level == 1 ? &RESOURCE : &SCOPE);
    return check_string(s) ? 1 : GIVE_UP; /* schema_url */
}

/* A span field `table_level` does not read, validated as the runtime validates it (ids of the wrong wire type,
 * strings that are not UTF-8 in events, links and status, ...). */
static int check_span_field(Cursor *c, uint32_t field, uint32_t wire) {
    Slice s;
    if (field == 1 || field == 4) return GIVE_UP; /* an id of the wrong wire type (the right one is read) */
    if (field == 11 || field == 13 || field == 15) { /* events, links, status */
        if (wire != 2 || !read_len(c, &s)) return GIVE_UP;
        return validate_message(s, field == 11 ? &EVENT : field == 13 ? &LINK : &STATUS);
    }
    return validate_field(c, field, wire, &SPAN);
}

static int table_level(Slice body, int level, Table *k) {
    Cursor c = {body.p, body.p + body.n};
    uint32_t field, wire;
    int t, r;
    Slice s;
    for (;;) {
        const uint8_t *at = c.p; /* the entry's tag */
        if ((t = read_tag(&c, &field, &wire)) != 1) break;
        if (field != (level == 0 ? 1u : 2u) || wire != 2) {
            if (k->checked) {
                if ((r = check_block_field(&c, level, field, wire)) != 1) return r;
            } else if (!skip_field(&c, wire)) {
                return GIVE_UP;
            }
            continue;
        }
        if (!read_len(&c, &s)) return GIVE_UP;
        if (level < 2) {
            if (++k->blocks > k->limit) return GIVE_UP; /* a ResourceSpans or a ScopeSpans */
            /* a ScopeSpans: its scope's name, wherever the scope comes in it (the runtime merges repeats) */
            k->scope_marked = level == 1 && scope_shows(s, &k->scopes);
            if ((r = table_level(s, level + 1, k)) != 1) return r;
            continue;
        }
        Cursor sc = {s.p, s.p + s.n};
        uint32_t f2, w2;
        int t2, marked = k->scope_marked;
        Slice trace = {(const uint8_t *)"", 0}, span = {(const uint8_t *)"", 0}, parent = span, v;
        while ((t2 = read_tag(&sc, &f2, &w2)) == 1) {
            if ((f2 == 1 || f2 == 2 || f2 == 4 || f2 == 9) && w2 == 2) { /* ids (the last one counts), attributes */
                if (!read_len(&sc, &v)) return GIVE_UP;
                if (f2 == 1) trace = v;
                else if (f2 == 2) span = v;
                else if (f2 == 4) parent = v;
                else if (k->checked) {
                    if ((r = validate_key_value(v, 0, marked ? NULL : &k->keys)) == MARKED) marked = 1;
                    else if (r != 1) return r;
                } else if (!marked) {
                    marked = marks_field(v, 1, &k->keys);
                }
            } else if (k->checked) {
                if ((r = check_span_field(&sc, f2, w2)) != 1) return r;
            } else if (!skip_field(&sc, w2)) {
                return GIVE_UP;
            }
        }
        if (t2 < 0) return GIVE_UP;
        if (k->n == k->limit) return GIVE_UP;
        if (k->n == k->capacity) {
            Py_ssize_t capacity = k->capacity ? 2 * k->capacity : 256;
            Row *rows = PyMem_Realloc(k->rows, (size_t)capacity * sizeof(Row));
            if (rows == NULL) {
                PyErr_NoMemory();
                return FAILED;
            }
            k->rows = rows;
            k->capacity = capacity;
        }
        int ok = trace.n == 16 && span.n == 8 && (parent.n == 0 || parent.n == 8) && !is_zero(trace.p, 16) &&
                 !is_zero(span.p, 8);
        k->rows[k->n++] = (Row){at - k->base, c.p - k->base, trace.p, trace.n,
                                (uint8_t)((parent.n == 0 ? SPAN_ROOT : 0) | (ok ? SPAN_IDS_OK : 0)), (uint8_t)marked};
        k->marked += marked;
    }
    return t < 0 ? GIVE_UP : 1;
}

/* The rows as `span_table` gives them: (offsets, ids) and, given markers, (marked, flags) too. */
static PyObject *table_lists(const Table *k, int markers) {
    PyObject *offsets = PyList_New(k->n), *ids = PyList_New(k->n), *marked = markers ? PyList_New(0) : NULL;
    PyObject *flags = markers ? PyBytes_FromStringAndSize(NULL, k->n) : NULL, *out = NULL, *last = NULL;
    if (offsets == NULL || ids == NULL || (markers && (marked == NULL || flags == NULL))) goto done;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        const Row *row = &k->rows[i];
        PyObject *pair = Py_BuildValue("(nn)", row->start, row->end);
        PyObject *key = trace_key(last, (Slice){row->trace, row->trace_n});
        if (pair == NULL || key == NULL) {
            Py_XDECREF(pair);
            Py_XDECREF(key);
            goto done;
        }
        PyList_SET_ITEM(offsets, i, pair);
        PyList_SET_ITEM(ids, i, key);
        last = key; /* the list holds it */
        if (!markers) continue;
        PyBytes_AS_STRING(flags)[i] = (char)row->flag;
        if (row->marked) {
            PyObject *index = PyLong_FromSsize_t(i);
            int listed = index != NULL ? PyList_Append(marked, index) : -1;
            Py_XDECREF(index);
            if (listed < 0) goto done;
        }
    }
    out = markers ? PyTuple_Pack(4, offsets, ids, marked, flags) : PyTuple_Pack(2, offsets, ids);
done:
    Py_XDECREF(offsets);
    Py_XDECREF(ids);
    Py_XDECREF(marked);
    Py_XDECREF(flags);
    return out;
}

/* The rows as `plain_index` gives them: (spans per trace id, trace ids of the roots, spans, blocks). */
static PyObject *tally_of(const Table *k) {
    PyObject *counts = PyDict_New(), *roots = PySet_New(NULL), *last = NULL, *out = NULL;
    if (counts == NULL || roots == NULL) goto done;
    for (Py_ssize_t i = 0; i < k->n; i++) {
        const Row *row = &k->rows[i];
        PyObject *key = trace_key(last, (Slice){row->trace, row->trace_n});
        if (key == NULL) goto done;
        Py_XSETREF(last, key);
        PyObject *n = PyDict_GetItemWithError(counts, key);
        if (n == NULL && PyErr_Occurred()) goto done;
        PyObject *more = PyLong_FromSsize_t(n == NULL ? 1 : PyLong_AsSsize_t(n) + 1);
        if (more == NULL) goto done;
        int failed = PyDict_SetItem(counts, key, more) < 0;
        Py_DECREF(more);
        if (failed || ((row->flag & SPAN_ROOT) && PySet_Add(roots, key) < 0)) goto done;
    }
    out = Py_BuildValue("(OOnn)", counts, roots, k->n, k->blocks);
done:
    Py_XDECREF(last);
    Py_XDECREF(counts);
    Py_XDECREF(roots);
    return out;
}

enum { SPAN_TABLE, CHECKED_TABLE, REQUEST_INDEX, PLAIN_INDEX };

/* `span_table`, `checked_table`, `request_index` and `plain_index`: one walk, then the answer in the form asked
 * for. */
static PyObject *table_of(const char *name, PyObject *const *args, Py_ssize_t nargs, int kind) {
    Markers keys, scopes;
    Py_ssize_t limit = PY_SSIZE_T_MAX;
    if (kind == REQUEST_INDEX && nargs == 4) { /* the bound on spans and blocks */
        limit = PyLong_AsSsize_t(args[3]);
        if (limit == -1 && PyErr_Occurred()) return NULL;
        nargs = 3;
    }
    if (kind == PLAIN_INDEX ? nargs != 1 : kind != SPAN_TABLE && nargs != 3) {
        PyErr_Format(PyExc_TypeError,
                     kind == PLAIN_INDEX       ? "%s(data)"
                     : kind == REQUEST_INDEX ? "%s(data, keys, scopes[, limit])"
                                             : "%s(data, keys, scopes)",
                     name);
        return NULL;
    }
    if (!marker_args(name, args, nargs, &keys, &scopes)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Table k = {(const uint8_t *)view.buf, keys, scopes, 0, kind != SPAN_TABLE, NULL, 0, 0, 0, 0, limit};
    int r = table_level((Slice){(const uint8_t *)view.buf, view.len}, 0, &k);
    if (r == 1 && k.checked && view.len > 0 && k.blocks == 0) r = GIVE_UP; /* unknown fields alone: refused */
    PyObject *out = NULL;
    if (r == 1 && kind == PLAIN_INDEX) {
        out = tally_of(&k);
    } else if (r == 1 && kind == REQUEST_INDEX && k.marked == 0) {
        PyObject *tally = tally_of(&k);
        out = tally != NULL ? Py_BuildValue("(ON)", Py_False, tally) : NULL;
    } else if (r == 1) {
        PyObject *table = table_lists(&k, nargs == 3);
        if (table == NULL || kind == SPAN_TABLE) {
            out = table;
        } else {
            out = kind == CHECKED_TABLE ? Py_BuildValue("(OOOOn)", PyTuple_GET_ITEM(table, 0), PyTuple_GET_ITEM(table, 1),
                                                        PyTuple_GET_ITEM(table, 2), PyTuple_GET_ITEM(table, 3), k.blocks)
                                        : Py_BuildValue("(O(OOOOn))", Py_True, PyTuple_GET_ITEM(table, 0),
                                                        PyTuple_GET_ITEM(table, 1), PyTuple_GET_ITEM(table, 2),
                                                        PyTuple_GET_ITEM(table, 3), k.blocks);
            Py_DECREF(table);
        }
    }
    PyBuffer_Release(&view);
    PyMem_Free(k.rows);
    if (r == GIVE_UP) Py_RETURN_NONE;
    return out;
}

/* ([(start, end) of each framed `spans` entry], [its span's trace id]) of an OTLP trace export, in request
 * order, from its framing alone (for bytes the protobuf runtime parsed); None when the bytes do not walk. */
static PyObject *span_table(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return table_of("span_table", args, nargs, SPAN_TABLE);
}

/* `span_table(data, keys, scopes)` of bytes not parsed yet, validated as `plain_index` validates them (when this
 * answers, the runtime parses them), and the count of resource and scope blocks: None where it cannot say. A
 * marker does not stop it: the spans that show one are listed. */
static PyObject *checked_table(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return table_of("checked_table", args, nargs, CHECKED_TABLE);
}

/* (spans per trace id, trace ids of the roots, spans, resource and scope blocks) of an OTLP trace export, read from
 * its bytes and validated as the decoder validates them (when this answers, the runtime parses the bytes); None
 * when it cannot say. */
static PyObject *plain_index(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return table_of("plain_index", args, nargs, PLAIN_INDEX);
}

/* One walk of bytes not parsed yet, validated as `checked_table` validates them: (False, `plain_index`'s answer)
 * when no span shows a marker, else (True, `checked_table`'s answer); None where it cannot say, and past `limit`
 * spans or blocks (a request a receiver refuses for its size is not walked to its end, nor kept a row per span). */
static PyObject *request_index(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    return table_of("request_index", args, nargs, REQUEST_INDEX);
}

/* ---- Encoding: one `gen_ai.evaluation.result` log record (telemetry/direct_logs.py's `encode_score_record`). */

static int varint_size(uint64_t v) {
    int n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static uint8_t *put_varint(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static uint8_t *put_fixed64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
    return p + 8;
}

static uint8_t *put_bytes(uint8_t *p, const void *src, Py_ssize_t n) {
    memcpy(p, src, (size_t)n);
    return p + n;
}

/* The three keys of a score's own attributes, each 29 bytes. */
static const char VALUE_KEY[] = "gen_ai.evaluation.score.value";
static const char LABEL_KEY[] = "gen_ai.evaluation.score.label";
static const char EXPLANATION_KEY[] = "gen_ai.evaluation.explanation";
#define SCORE_KEY_LEN 29

/* Bytes of a `LogRecord.attributes` entry (field 6) holding a string AnyValue of `n` bytes under a 29-byte key. */
static Py_ssize_t string_attribute_size(Py_ssize_t n) {
    Py_ssize_t any = 1 + varint_size((uint64_t)n) + n;
    Py_ssize_t kv = 2 + SCORE_KEY_LEN + 1 + varint_size((uint64_t)any) + any;
    return 1 + varint_size((uint64_t)kv) + kv;
}

static uint8_t *put_string_attribute(uint8_t *p, const char *key, const uint8_t *text, Py_ssize_t n) {
    Py_ssize_t any = 1 + varint_size((uint64_t)n) + n;
    Py_ssize_t kv = 2 + SCORE_KEY_LEN + 1 + varint_size((uint64_t)any) + any;
    *p++ = 0x32;
    p = put_varint(p, (uint64_t)kv);
    *p++ = 0x0a;
    *p++ = SCORE_KEY_LEN;
    p = put_bytes(p, key, SCORE_KEY_LEN);
    *p++ = 0x12;
    p = put_varint(p, (uint64_t)any);
    *p++ = 0x0a;
    p = put_varint(p, (uint64_t)n);
    return put_bytes(p, text, n);
}

/* A str's UTF-8: its own bytes when ASCII, else a new bytes object in `*owned` (not the str's cached UTF-8, which
 * would live as long as the score). 1; GIVE_UP for a str no UTF-8 can hold (a lone surrogate); FAILED. */
static int utf8_text(PyObject *str, Slice *out, PyObject **owned) {
    if (PyUnicode_IS_ASCII(str)) {
        out->p = (const uint8_t *)PyUnicode_DATA(str);
        out->n = PyUnicode_GET_LENGTH(str);
        return 1;
    }
    *owned = PyUnicode_AsUTF8String(str);
    if (*owned == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) return FAILED;
        PyErr_Clear();
        return GIVE_UP;
    }
    out->p = (const uint8_t *)PyBytes_AS_STRING(*owned);
    out->n = PyBytes_GET_SIZE(*owned);
    return 1;
}

/* score_record(time_ns, severity, head, value, label, explanation, ids, name) -> bytes, or None when a text is
 * no valid UTF-8 (a lone surrogate: the Python path replaces it). The framed `ScopeLogs.log_records` entry of a
 * record whose attributes are `head` (encoded attributes) then the score's value, label and explanation (when
 * not empty), with `ids` (`encode_ids`) and `name` (the encoded event name field), byte for byte what the
 * Python path writes. */
static PyObject *score_record(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "score_record takes 8 arguments");
        return NULL;
    }
    unsigned long long time_ns = PyLong_AsUnsignedLongLong(args[0]);
    if (time_ns == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    long severity = PyLong_AsLong(args[1]);
    if (severity == -1 && PyErr_Occurred()) return NULL;
    if (severity < 0 || severity > 127) {
        PyErr_SetString(PyExc_ValueError, "severity must be a one-byte varint (0 to 127)");
        return NULL;
    }
    double value = PyFloat_AsDouble(args[3]);
    if (value == -1.0 && PyErr_Occurred()) return NULL;
    if (!PyBytes_Check(args[2]) || !PyBytes_Check(args[6]) || !PyBytes_Check(args[7]) || !PyUnicode_Check(args[4]) ||
        !PyUnicode_Check(args[5])) {
        PyErr_SetString(PyExc_TypeError, "score_record(int, int, bytes, float, str, str, bytes, bytes)");
        return NULL;
    }
    PyObject *label_utf8 = NULL, *text_utf8 = NULL;
    Slice label, text;
    int r = utf8_text(args[4], &label, &label_utf8);
    if (r == 1) r = utf8_text(args[5], &text, &text_utf8);
    if (r != 1) {
        Py_XDECREF(label_utf8);
        if (r == FAILED) return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t label_n = label.n, text_n = text.n;
    Py_ssize_t head_n = PyBytes_GET_SIZE(args[2]), ids_n = PyBytes_GET_SIZE(args[6]);
    Py_ssize_t name_n = PyBytes_GET_SIZE(args[7]);
    Py_ssize_t size = 13 + head_n + (2 + 2 + SCORE_KEY_LEN + 11) + string_attribute_size(label_n) +
                      (text_n ? string_attribute_size(text_n) : 0) + ids_n + 9 + name_n;
    PyObject *out = PyBytes_FromStringAndSize(NULL, 1 + varint_size((uint64_t)size) + size);
    if (out == NULL) {
        Py_XDECREF(label_utf8);
        Py_XDECREF(text_utf8);
        return NULL;
    }
    uint8_t *p = (uint8_t *)PyBytes_AS_STRING(out);
    *p++ = 0x12;
    p = put_varint(p, (uint64_t)size);
    *p++ = 0x09; /* time_unix_nano */
    p = put_fixed64(p, time_ns);
    *p++ = 0x10; /* severity_number */
    *p++ = (uint8_t)severity;
    *p++ = 0x2a; /* the empty body */
    *p++ = 0x00;
    p = put_bytes(p, PyBytes_AS_STRING(args[2]), head_n);
    *p++ = 0x32; /* the value: KeyValue{key, AnyValue{double_value}} */
    *p++ = 2 + SCORE_KEY_LEN + 11;
    *p++ = 0x0a;
    *p++ = SCORE_KEY_LEN;
    p = put_bytes(p, VALUE_KEY, SCORE_KEY_LEN);
    *p++ = 0x12;
    *p++ = 0x09;
    *p++ = 0x21;
    uint64_t bits;
    memcpy(&bits, &value, 8);
    p = put_fixed64(p, bits);
    p = put_string_attribute(p, LABEL_KEY, label.p, label_n);
    if (text_n) p = put_string_attribute(p, EXPLANATION_KEY, text.p, text_n);
    Py_XDECREF(label_utf8);
    Py_XDECREF(text_utf8);
    p = put_bytes(p, PyBytes_AS_STRING(args[6]), ids_n);
    *p++ = 0x59; /* observed_time_unix_nano */
    p = put_fixed64(p, time_ns);
    put_bytes(p, PyBytes_AS_STRING(args[7]), name_n);
    return out;
}

static PyObject *configure(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *record, *event;
    if (!PyArg_ParseTuple(args, "OO:configure", &record, &event)) return NULL;
    Py_INCREF(record);
    Py_INCREF(event);
    Py_XSETREF(SpanRecordType, record);
    Py_XSETREF(SpanEventType, event);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS, "Set the record types: configure(SpanRecord, SpanEvent)."},
    {"decode_spans", decode_spans, METH_O,
     "The spans of an OTLP ExportTraceServiceRequest as SpanRecords, or None: decode them the usual way."},
    {"span_table", (PyCFunction)(void (*)(void))span_table, METH_FASTCALL,
     "([(start, end) of each framed spans entry], [its trace id]) of an OTLP trace export, or None; with marker "
     "keys and scopes, also [indices of the spans showing one] and a flags byte per span (1: root, 2: ids ok)."},
    {"checked_table", (PyCFunction)(void (*)(void))checked_table, METH_FASTCALL,
     "checked_table(data, keys, scopes): span_table's answer and the block count, of bytes validated as "
     "plain_index validates them, or None."},
    {"request_index", (PyCFunction)(void (*)(void))request_index, METH_FASTCALL,
     "request_index(data, keys, scopes[, limit]): (False, plain_index's answer) when no span shows a marker, else "
     "(True, checked_table's answer), or None (past limit spans or blocks too)."},
    {"plain_index", (PyCFunction)(void (*)(void))plain_index, METH_FASTCALL,
     "(spans per trace id, trace ids of the roots, spans, blocks) of an OTLP trace export, or None."},
    {"decode_span_entry", (PyCFunction)(void (*)(void))decode_span_entry, METH_FASTCALL,
     "A framed spans entry as a SpanRecord with the given resource and scope, or None."},
    {"score_record", (PyCFunction)(void (*)(void))score_record, METH_FASTCALL,
     "score_record(time_ns, severity, head, value, label, explanation, ids, name): a framed evaluation record."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_wire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__wire(void) {
    EmptyTuple = PyTuple_New(0);
    if (EmptyTuple == NULL) return NULL;
    return PyModule_Create(&module_def);
}
