/* The span processor's pass-through for plain spans, compiled: `SpanGate`, called for every span the
 * application ends (see span_gate.py, which builds it, and processor.py, which installs it as `on_end`).
 *
 * Most spans of a service are no agent's. For each of them the Python `on_end` ran a frame of its own and a
 * dozen attribute reads before it passed the span on: ~2.5 µs on the application's thread, most of what
 * toolscore cost a service whose agent spans are 1% of its spans. The gate makes the same decision in C and,
 * for a plain span, calls `next.on_end` itself. Whatever it is not sure of goes to the Python `on_end`
 * (`slow`), which decides again from the start, so the gate only ever takes the commonest case off it:
 *
 *   - the span is exactly the SDK's `ReadableSpan` (what `Span.end` hands processors), with a `SpanContext`
 *     whose trace id is an int not among the agent traces (`agent_ids`, the dict `AgentTraces` keeps);
 *   - its scope's name is a str not among `stop_scopes` (the markers' scopes and toolscore's judge scope);
 *   - its attributes are the SDK's `BoundedAttributes`, whose dict has only exact-str keys, none of them a
 *     marker key.
 *
 * Then `counted` (an iterator: the intake's skip count) is advanced and `passed(span)` called (`next.on_end`).
 * An exception from either is handed to `failed(exception)` (which logs it) and not raised, as the Python `on_end` does:
 * a processor must not break the application. Only exact str keys are compared, so no Python code (a str
 * subclass's `__eq__` or `__hash__`) runs while a dict is walked. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *span_type;
    PyObject *attributes_type;
    PyObject *agent_ids;
    PyObject *stop_scopes;
    PyObject *keys;
    PyObject *passed;
    PyObject *counted;
    PyObject *slow;
    PyObject *failed;
    PyObject *last_scope; /* the scope of the last span decided by scope, and whether its name stops the gate */
    int last_scope_stops;
    uint64_t lengths;     /* bit n: a marker key has n code points (bit 63: 63 or more) */
    uint64_t firsts[4];   /* bit c: a marker key begins with code point c (255: any from 255 up) */
} SpanGate;

static PyObject *str_context, *str_scope, *str_name, *str_attributes, *str_dict, *str_immutable;

static inline int length_bit(Py_ssize_t n) { return n < 63 ? (int)n : 63; }

static inline Py_UCS4 first_bucket(PyObject *key) {
    Py_UCS4 first = PyUnicode_READ_CHAR(key, 0);
    return first < 255 ? first : 255;
}

/* Whether a str key may be a marker key: most attribute keys are ruled out by their length or first code point,
 * without a hash or a probe of the set. An empty key is looked up. */
static inline int may_mark(SpanGate *gate, PyObject *key) {
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(key) < 0) { /* a legacy string not made ready: looked up, which readies it */
        PyErr_Clear();
        return 1;
    }
#endif
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    if (!(gate->lengths >> length_bit(n) & 1)) return 0;
    if (n == 0) return 1;
    Py_UCS4 first = first_bucket(key);
    return (int)(gate->firsts[first >> 6] >> (first & 63) & 1);
}

/* Whether spans of `scope` go to Python for their scope's name (a marker scope, toolscore's judge, a name that is
 * no str): -1 on an error. The answer for the last scope is kept: a provider's spans come from a few tracers. */
static int scope_stops(SpanGate *gate, PyObject *scope) {
    if (scope == gate->last_scope) return gate->last_scope_stops;
    PyObject *name = PyObject_GetAttr(scope, str_name);
    if (name == NULL) return -1;
    int stops = !PyUnicode_CheckExact(name) || PySet_Contains(gate->stop_scopes, name) != 0;
    Py_DECREF(name);
    if (PyErr_Occurred()) return -1;
    Py_INCREF(scope);
    Py_XSETREF(gate->last_scope, scope);
    gate->last_scope_stops = stops;
    return stops;
}

/* The SDK's own attribute dict of `span` (a new reference): its `_attributes`, of exactly `attributes_type`, and
 * that object's `_dict`, an exact dict; with `frozen`, only once the span has ended (`_immutable`). NULL with no
 * exception for any other shape: the gate and the decoder then leave the span to Python. */
static PyObject *sdk_attribute_dict(PyObject *span, PyObject *attributes_type, int frozen) {
    PyObject *held = PyObject_GetAttr(span, str_attributes), *values = NULL;
    if (held == NULL || (PyObject *)Py_TYPE(held) != attributes_type) goto done;
    if (frozen) {
        PyObject *immutable = PyObject_GetAttr(held, str_immutable);
        int truth = immutable == NULL ? -1 : PyObject_IsTrue(immutable);
        Py_XDECREF(immutable);
        if (truth != 1) goto done;
    }
    values = PyObject_GetAttr(held, str_dict);
    if (values != NULL && !PyDict_CheckExact(values)) Py_CLEAR(values);
done:
    Py_XDECREF(held);
    PyErr_Clear();
    return values;
}

/* 1: the span is plain (pass it on unread); 0: let the Python `on_end` decide. Never leaves an error set. */
static int is_plain(SpanGate *gate, PyObject *span) {
    int plain = 0;
    PyObject *context = NULL, *scope = NULL, *values = NULL;
    if ((PyObject *)Py_TYPE(span) != gate->span_type) return 0;
    context = PyObject_GetAttr(span, str_context);
    if (context == NULL || !PyTuple_Check(context) || PyTuple_GET_SIZE(context) < 1) goto done;
    PyObject *trace_id = PyTuple_GET_ITEM(context, 0);
    if (!PyLong_CheckExact(trace_id) || PyDict_Contains(gate->agent_ids, trace_id) != 0) goto done;
    scope = PyObject_GetAttr(span, str_scope);
    if (scope == NULL || (scope != Py_None && scope_stops(gate, scope) != 0)) goto done;
    values = sdk_attribute_dict(span, gate->attributes_type, 0);
    if (values == NULL) goto done;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(values, &pos, &key, &value)) {
        if (!PyUnicode_CheckExact(key) || (may_mark(gate, key) && PySet_Contains(gate->keys, key) != 0)) goto done;
    }
    plain = 1;
done:
    if (PyErr_Occurred()) PyErr_Clear();
    Py_XDECREF(context);
    Py_XDECREF(scope);
    Py_XDECREF(values);
    return plain;
}

/* An exception from `counted` or `passed`: an `Exception` goes to `failed` and the call returns None; anything
 * else (KeyboardInterrupt, SystemExit) is raised, as the Python `on_end`'s `except Exception` would. */
static PyObject *handled(SpanGate *gate) {
    if (!PyErr_ExceptionMatches(PyExc_Exception)) return NULL;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    if (traceback != NULL && value != NULL) PyException_SetTraceback(value, traceback);
    PyObject *result = PyObject_CallOneArg(gate->failed, value != NULL ? value : Py_None);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    if (result == NULL) PyErr_Clear();
    Py_XDECREF(result);
    Py_RETURN_NONE;
}

static PyObject *gate_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    SpanGate *gate = (SpanGate *)self;
    if (PyVectorcall_NARGS(nargsf) != 1 || kwnames != NULL || !is_plain(gate, args[0]))
        return PyObject_Vectorcall(gate->slow, args, nargsf, kwnames);
    PyObject *result = Py_TYPE(gate->counted)->tp_iternext(gate->counted);
    if (result == NULL && PyErr_Occurred()) return handled(gate);
    Py_XDECREF(result);
    result = PyObject_CallOneArg(gate->passed, args[0]);
    if (result == NULL) return handled(gate);
    Py_DECREF(result);
    Py_RETURN_NONE;
}

static PyObject *gate_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"span_type", "attributes_type", "agent_ids", "stop_scopes", "keys",
                            "passed", "counted", "slow", "failed", NULL};
    PyObject *span_type, *attributes_type, *agent_ids, *stop_scopes, *keys, *passed, *counted, *slow, *failed;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!O!O!O!OOOO:SpanGate", names, &PyType_Type, &span_type,
                                     &PyType_Type, &attributes_type, &PyDict_Type, &agent_ids, &PyFrozenSet_Type,
                                     &stop_scopes, &PyFrozenSet_Type, &keys, &passed, &counted, &slow, &failed))
        return NULL;
    if (!PyIter_Check(counted)) {
        PyErr_SetString(PyExc_TypeError, "SpanGate: counted must be an iterator");
        return NULL;
    }
    PyObject *callables[] = {passed, slow, failed};
    const char *callable_names[] = {"passed", "slow", "failed"};
    for (int i = 0; i < 3; i++) {
        if (!PyCallable_Check(callables[i])) {
            PyErr_Format(PyExc_TypeError, "SpanGate: %s must be callable", callable_names[i]);
            return NULL;
        }
    }
    SpanGate *gate = (SpanGate *)type->tp_alloc(type, 0);
    if (gate == NULL) return NULL;
    gate->vectorcall = gate_call;
    gate->span_type = Py_NewRef(span_type);
    gate->attributes_type = Py_NewRef(attributes_type);
    gate->agent_ids = Py_NewRef(agent_ids);
    gate->stop_scopes = Py_NewRef(stop_scopes);
    gate->keys = Py_NewRef(keys);
    gate->passed = Py_NewRef(passed);
    gate->counted = Py_NewRef(counted);
    gate->slow = Py_NewRef(slow);
    gate->failed = Py_NewRef(failed);
    PyObject *iterator = PyObject_GetIter(keys), *key;
    if (iterator == NULL) goto fail;
    while ((key = PyIter_Next(iterator)) != NULL) {
        if (!PyUnicode_Check(key)) {
            Py_DECREF(key);
            Py_DECREF(iterator);
            PyErr_SetString(PyExc_TypeError, "SpanGate: every marker key must be a str");
            goto fail;
        }
        Py_ssize_t n = PyUnicode_GET_LENGTH(key);
        gate->lengths |= 1ull << length_bit(n);
        if (n > 0) {
            Py_UCS4 first = first_bucket(key);
            gate->firsts[first >> 6] |= 1ull << (first & 63);
        }
        Py_DECREF(key);
    }
    Py_DECREF(iterator);
    if (PyErr_Occurred()) goto fail;
    return (PyObject *)gate;
fail:
    Py_DECREF(gate);
    return NULL;
}

/* The gate holds its processor's bound `on_end` (`slow`) and the processor holds the gate: a cycle the garbage
 * collector must be able to see and break. */
static int gate_traverse(SpanGate *gate, visitproc visit, void *arg) {
    Py_VISIT(gate->span_type);
    Py_VISIT(gate->attributes_type);
    Py_VISIT(gate->agent_ids);
    Py_VISIT(gate->stop_scopes);
    Py_VISIT(gate->keys);
    Py_VISIT(gate->passed);
    Py_VISIT(gate->counted);
    Py_VISIT(gate->slow);
    Py_VISIT(gate->failed);
    Py_VISIT(gate->last_scope);
    return 0;
}

static int gate_clear(SpanGate *gate) {
    Py_CLEAR(gate->span_type);
    Py_CLEAR(gate->attributes_type);
    Py_CLEAR(gate->agent_ids);
    Py_CLEAR(gate->stop_scopes);
    Py_CLEAR(gate->keys);
    Py_CLEAR(gate->passed);
    Py_CLEAR(gate->counted);
    Py_CLEAR(gate->slow);
    Py_CLEAR(gate->failed);
    Py_CLEAR(gate->last_scope);
    return 0;
}

static void gate_dealloc(SpanGate *gate) {
    PyObject_GC_UnTrack(gate);
    gate_clear(gate);
    Py_TYPE(gate)->tp_free((PyObject *)gate);
}

static PyTypeObject SpanGateType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "toolscore.collector.pipeline._gate.SpanGate",
    .tp_basicsize = sizeof(SpanGate),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "SpanGate(span_type, attributes_type, agent_ids, stop_scopes, keys, passed, counted, slow, failed)\n"
              "--\n\nA span processor's on_end that passes plain spans on itself (see span_gate.py).",
    .tp_new = gate_new,
    .tp_dealloc = (destructor)gate_dealloc,
    .tp_traverse = (traverseproc)gate_traverse,
    .tp_clear = (inquiry)gate_clear,
    .tp_vectorcall_offset = offsetof(SpanGate, vectorcall),
    .tp_call = PyVectorcall_Call,
};


/* ---- The worker's decoder: an SDK-ended span as a SpanRecord (`record_from_readable`, compiled) ---------------
 *
 * The pipeline's worker turns every span of an agent trace into a `SpanRecord` (`sources.sdk.record_from_readable`):
 * ~6 µs a span in Python, most of it formatting ids as hex, copying the attribute dict and reading a dozen fields
 * one attribute lookup at a time. `decode_readable(span)` builds the same record in C for the common shape: an
 * exact `ReadableSpan` with an exact `SpanContext` of valid ids (and such a parent, or none), no events, the SDK's
 * frozen attributes, a known kind and status code. It hands any other span to the Python function (`fallback`),
 * which decides it from the start, so the two never differ in what they decide (`tests/test_span_decoder.py`). */

static PyObject *dec_span_type, *dec_context_type, *dec_attributes_type, *dec_record_type, *dec_kinds, *dec_statuses,
    *dec_resource_fn, *dec_fallback, *dec_last_resource, *dec_last_resource_attributes;
static PyObject *dec_zero, *dec_sixty_four, *dec_empty_str, *dec_empty_tuple;
static PyObject *str_parent, *str_events, *str_kind, *str_start, *str_end, *str_status, *str_status_code,
    *str_description, *str_resource, *str_public_name;

/* A positive exact int below 2**bits (64 or 128) as `digits` lowercase hex digits; NULL with no exception set
 * when the id is anything else (the Python path then decides). */
static PyObject *id_hex(PyObject *id, int digits) {
    if (!PyLong_CheckExact(id)) return NULL;
    uint64_t high = 0, low;
    if (digits == 32) {
        PyObject *top = PyNumber_Rshift(id, dec_sixty_four);
        if (top == NULL) goto refuse;
        high = PyLong_AsUnsignedLongLong(top); /* a negative id shifts to a negative: OverflowError */
        Py_DECREF(top);
        if (high == (uint64_t)-1 && PyErr_Occurred()) goto refuse;
        low = PyLong_AsUnsignedLongLongMask(id);
    } else {
        low = PyLong_AsUnsignedLongLong(id);
    }
    if (low == (uint64_t)-1 && PyErr_Occurred()) goto refuse;
    if (high == 0 && low == 0) return NULL;
    static const char hex[] = "0123456789abcdef";
    char out[32];
    for (int i = digits - 1; i >= 0; i--) {
        uint64_t *part = i >= digits - 16 ? &low : &high;
        out[i] = hex[*part & 15];
        *part >>= 4;
    }
    return PyUnicode_FromStringAndSize(out, digits);
refuse:
    PyErr_Clear();
    return NULL;
}

/* The index of `member` in `members` (identity), or -1. */
static Py_ssize_t member_index(PyObject *members, PyObject *member) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++)
        if (PyTuple_GET_ITEM(members, i) == member) return i;
    return -1;
}

/* `value or default`, as a new reference; NULL on an error. */
static PyObject *or_default(PyObject *value, PyObject *fallback) {
    int truth = PyObject_IsTrue(value);
    if (truth < 0) return NULL;
    return Py_NewRef(truth ? value : fallback);
}

/* The SDK's frozen attribute dict copied, sequences (tuples) as lists; NULL with no exception: not that shape. */
static PyObject *frozen_copy(PyObject *span) {
    PyObject *values = sdk_attribute_dict(span, dec_attributes_type, 1);
    if (values == NULL) return NULL;
    PyObject *out = PyDict_Copy(values);
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (out != NULL && PyDict_Next(values, &pos, &key, &value)) {
        if (!PyTuple_CheckExact(value)) continue;
        PyObject *items = PySequence_List(value);
        if (items == NULL || PyDict_SetItem(out, key, items) < 0) Py_CLEAR(out); /* a key already in `out`: no code */
        Py_XDECREF(items);
    }
    Py_DECREF(values);
    PyErr_Clear();
    return out;
}

/* The resource's converted attributes: the last resource's kept, any other asked of Python (which keeps its own). */
static PyObject *resource_attributes(PyObject *resource) {
    if (resource != Py_None && resource == dec_last_resource) return Py_NewRef(dec_last_resource_attributes);
    PyObject *converted = PyObject_CallOneArg(dec_resource_fn, resource);
    if (converted != NULL && resource != Py_None) {
        Py_XSETREF(dec_last_resource, Py_NewRef(resource));
        Py_XSETREF(dec_last_resource_attributes, Py_NewRef(converted));
    }
    return converted;
}

/* The record's fields but the resource's into `fields` (13 new references): 1, or 0 when the span is not the
 * common shape or reading it raised (nothing kept, no exception: the Python path decides it, and raises what it
 * raises). */
static int read_fields(PyObject *span, PyObject **fields) {
    PyObject *context = PyObject_GetAttr(span, str_context);
    PyObject *parent = PyObject_GetAttr(span, str_parent);
    PyObject *events = PyObject_GetAttr(span, str_events);
    PyObject *kind = PyObject_GetAttr(span, str_kind);
    PyObject *status = PyObject_GetAttr(span, str_status);
    PyObject *code = status ? PyObject_GetAttr(status, str_status_code) : NULL;
    int found = 0;
    if (!context || !parent || !events || !kind || !status || !code) goto done;
    if (Py_TYPE(context) != (PyTypeObject *)dec_context_type || PyTuple_GET_SIZE(context) < 2) goto done;
    if (parent != Py_None && (Py_TYPE(parent) != (PyTypeObject *)dec_context_type || PyTuple_GET_SIZE(parent) < 2))
        goto done;
    if (events != Py_None && PyObject_IsTrue(events) != 0) goto done; /* events, or a length that raised */
    Py_ssize_t kind_index = member_index(dec_kinds, kind), code_index = member_index(dec_statuses, code);
    if (kind_index < 0 || code_index < 0) goto done;
    fields[0] = id_hex(PyTuple_GET_ITEM(context, 0), 32);
    fields[1] = id_hex(PyTuple_GET_ITEM(context, 1), 16);
    fields[2] = parent == Py_None ? Py_NewRef(Py_None) : id_hex(PyTuple_GET_ITEM(parent, 1), 16);
    fields[3] = PyObject_GetAttr(span, str_name);
    fields[4] = PyLong_FromSsize_t(kind_index + 1); /* OTLP numbers from UNSPECIFIED = 0 */
    PyObject *start = PyObject_GetAttr(span, str_start), *end = PyObject_GetAttr(span, str_end);
    fields[5] = start ? or_default(start, dec_zero) : NULL;
    fields[6] = end ? or_default(end, dec_zero) : NULL;
    Py_XDECREF(start);
    Py_XDECREF(end);
    fields[7] = PyLong_FromSsize_t(code_index);
    PyObject *description = PyObject_GetAttr(status, str_description);
    fields[8] = description ? or_default(description, dec_empty_str) : NULL;
    Py_XDECREF(description);
    fields[9] = frozen_copy(span);
    fields[10] = Py_NewRef(dec_empty_tuple);
    PyObject *scope = PyObject_GetAttr(span, str_scope);
    fields[12] = !scope ? NULL : scope == Py_None ? Py_NewRef(dec_empty_str) : PyObject_GetAttr(scope, str_public_name);
    Py_XDECREF(scope);
    found = 1;
    for (int i = 0; i < 13; i++)
        if (i != 11 && fields[i] == NULL) found = 0; /* fields[11], the resource's, is the caller's */
    if (!found)
        for (int i = 0; i < 13; i++) Py_CLEAR(fields[i]);
done:
    Py_XDECREF(code);
    Py_XDECREF(status);
    Py_XDECREF(kind);
    Py_XDECREF(events);
    Py_XDECREF(parent);
    Py_XDECREF(context);
    PyErr_Clear();
    return found;
}

static PyObject *decode_readable(PyObject *module, PyObject *span) {
    (void)module;
    if (dec_record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_gate.configure_decoder(...) was not called");
        return NULL;
    }
    if (Py_TYPE(span) != (PyTypeObject *)dec_span_type) return PyObject_CallOneArg(dec_fallback, span);
    PyObject *fields[13] = {NULL};
    if (!read_fields(span, fields)) return PyObject_CallOneArg(dec_fallback, span);
    PyObject *resource = PyObject_GetAttr(span, str_resource);
    fields[11] = resource ? resource_attributes(resource) : NULL;
    Py_XDECREF(resource);
    PyObject *record = fields[11] ? PyObject_Vectorcall(dec_record_type, fields, 13, NULL) : NULL;
    for (int i = 0; i < 13; i++) Py_XDECREF(fields[i]);
    return record;
}

static PyObject *configure_decoder(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 8 || !PyTuple_CheckExact(args[4]) || !PyTuple_CheckExact(args[5])) {
        PyErr_SetString(PyExc_TypeError, "configure_decoder(span_type, context_type, attributes_type, record_type, "
                                         "kinds, statuses, resource_attributes, fallback): kinds and statuses tuples");
        return NULL;
    }
    PyObject **slots[] = {&dec_span_type, &dec_context_type, &dec_attributes_type, &dec_record_type,
                          &dec_kinds,     &dec_statuses,     &dec_resource_fn,     &dec_fallback};
    for (int i = 0; i < 8; i++) Py_XSETREF(*slots[i], Py_NewRef(args[i]));
    Py_CLEAR(dec_last_resource);
    Py_CLEAR(dec_last_resource_attributes);
    Py_RETURN_NONE;
}


/* ---- The bytes a kept span counts for (`group._attributes_bytes`, compiled) ------------------------------------
 * Every span the in-process pipeline keeps is sized against `max_pending_bytes` by its attributes' text: a Python
 * loop over each attribute, ~2 µs a span. `attributes_bytes(per_attribute, per_item, fallback, attributes)` is
 * that walk: `per_attribute` for each entry of an exact dict, the length of its key and of a str value, of each
 * str item of a list (`per_item` for any other item, the walk again for a dict item) and the walk again for a
 * dict value. Attributes of another type go to `fallback(attributes)`, the Python walk. */

static int add_bytes(PyObject *attributes, Py_ssize_t per_attribute, Py_ssize_t per_item, Py_ssize_t *total);

static int add_list_bytes(PyObject *items, Py_ssize_t per_attribute, Py_ssize_t per_item, Py_ssize_t *total) {
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (PyUnicode_CheckExact(item))
            *total += PyUnicode_GET_LENGTH(item);
        else if (PyDict_CheckExact(item)) {
            Py_INCREF(item);
            int ok = add_bytes(item, per_attribute, per_item, total);
            Py_DECREF(item);
            if (ok < 0) return -1;
        } else
            *total += per_item;
    }
    return 0;
}

static int add_bytes(PyObject *attributes, Py_ssize_t per_attribute, Py_ssize_t per_item, Py_ssize_t *total) {
    if (Py_EnterRecursiveCall(" in attributes_bytes")) return -1;
    *total += per_attribute * PyDict_GET_SIZE(attributes);
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    int ok = 0;
    while (ok == 0 && PyDict_Next(attributes, &pos, &key, &value)) {
        Py_INCREF(key); /* held: a key's own __len__ may change the dict */
        Py_INCREF(value);
        Py_ssize_t n = PyUnicode_CheckExact(key) ? PyUnicode_GET_LENGTH(key) : PyObject_Length(key);
        if (n < 0)
            ok = -1;
        else {
            *total += n;
            if (PyUnicode_CheckExact(value))
                *total += PyUnicode_GET_LENGTH(value);
            else if (PyList_CheckExact(value))
                ok = add_list_bytes(value, per_attribute, per_item, total);
            else if (PyDict_CheckExact(value))
                ok = add_bytes(value, per_attribute, per_item, total);
        }
        Py_DECREF(value);
        Py_DECREF(key);
    }
    Py_LeaveRecursiveCall();
    return ok;
}

static PyObject *attributes_bytes(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "attributes_bytes(per_attribute, per_item, fallback, attributes)");
        return NULL;
    }
    if (!PyDict_CheckExact(args[3])) return PyObject_CallOneArg(args[2], args[3]);
    Py_ssize_t per_attribute = PyLong_AsSsize_t(args[0]), per_item = PyLong_AsSsize_t(args[1]);
    if (PyErr_Occurred()) return NULL;
    Py_ssize_t total = 0;
    if (add_bytes(args[3], per_attribute, per_item, &total) < 0) return NULL;
    return PyLong_FromSsize_t(total);
}

static PyMethodDef gate_methods[] = {
    {"attributes_bytes", (PyCFunction)(void (*)(void))attributes_bytes, METH_FASTCALL,
     "attributes_bytes(per_attribute, per_item, fallback, attributes): the bytes an attribute dict counts for, as "
     "group.python_attributes_bytes counts them (fallback: for attributes not an exact dict)."},
    {"configure_decoder", (PyCFunction)(void (*)(void))configure_decoder, METH_FASTCALL,
     "configure_decoder(span_type, context_type, attributes_type, record_type, kinds, statuses, resource_attributes, "
     "fallback): what decode_readable reads and builds (span_gate.span_decoder calls it)."},
    {"decode_readable", decode_readable, METH_O,
     "decode_readable(span): the span's SpanRecord, built here for the common shape, else by fallback(span)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef gate_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "toolscore.collector.pipeline._gate",
    .m_doc = "The span processor's compiled pass-through for plain spans, and its worker's span decoder (span_gate.py).",
    .m_size = -1,
    .m_methods = gate_methods,
};

PyMODINIT_FUNC PyInit__gate(void) {
    if (PyType_Ready(&SpanGateType) < 0) return NULL;
    str_context = PyUnicode_InternFromString("_context");
    str_scope = PyUnicode_InternFromString("_instrumentation_scope");
    str_name = PyUnicode_InternFromString("_name");
    str_attributes = PyUnicode_InternFromString("_attributes");
    str_dict = PyUnicode_InternFromString("_dict");
    if (!str_context || !str_scope || !str_name || !str_attributes || !str_dict) return NULL;
    str_parent = PyUnicode_InternFromString("_parent");
    str_events = PyUnicode_InternFromString("_events");
    str_kind = PyUnicode_InternFromString("_kind");
    str_start = PyUnicode_InternFromString("_start_time");
    str_end = PyUnicode_InternFromString("_end_time");
    str_status = PyUnicode_InternFromString("_status");
    str_status_code = PyUnicode_InternFromString("status_code");
    str_description = PyUnicode_InternFromString("description");
    str_resource = PyUnicode_InternFromString("_resource");
    str_immutable = PyUnicode_InternFromString("_immutable");
    str_public_name = PyUnicode_InternFromString("name");
    dec_zero = PyLong_FromLong(0);
    dec_sixty_four = PyLong_FromLong(64);
    dec_empty_str = PyUnicode_FromString("");
    dec_empty_tuple = PyTuple_New(0);
    if (!str_parent || !str_events || !str_kind || !str_start || !str_end || !str_status || !str_status_code ||
        !str_description || !str_resource || !str_immutable || !str_public_name || !dec_zero || !dec_sixty_four ||
        !dec_empty_str || !dec_empty_tuple)
        return NULL;
    PyObject *module = PyModule_Create(&gate_module);
    if (module == NULL) return NULL;
    if (PyModule_AddObjectRef(module, "SpanGate", (PyObject *)&SpanGateType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
