/* JSON equality, flexible mode's keys, exact mode's pair counts and score, and unvalidated model instances, compiled
 * (see _accel.py, which loads it, and _json_equality.py, _trajectory_evalite.py and _model.py, whose pure-Python
 * functions these are; tests/test_equal_accel.py holds them to the same answers).
 *
 * Trajectory scorers compare each actual call's arguments with the expected call's. In Python that comparison
 * is `want == got` in C plus, where `want` holds a bool, a 0 or a 1, a generated lambda that checks no bool
 * sits where a number should (`True == 1`): one Python frame per pair, and another for the loop. At 50 calls
 * those frames were most of a score; flexible mode's key of each actual call's arguments, a Python frame per
 * node of the document, was most of its. Here each is one C walk:
 *
 *   - `json_equal(a, b)`: `python_json_equal`, rule for rule: `a is b`; exact dicts of equal length
 *     whose keys all are in the other with JSON-equal values; lists and tuples (both arrays) of equal length,
 *     item by item; exact ints and floats by value, NaN equal to NaN (a bool, no exact int, equals itself alone);
 *     anything else equal when of the same type and `==`.
 *   - `freeze(value)`: `python_freeze`, Evalite's flexible-mode key of a value (its `JSON.stringify` of the
 *     stably serialized value, as a hashable tuple), built in C instead of a Python frame per node.
 *   - `exact_counts(names, tests, actual)`: `python_exact_counts`, one pair per actual call up to the
 *     shorter list: a call of another name is wrong, else `tests[i](call.args)` says exact or name only.
 *   - `exact_score(plan, actual)`: `python_exact_score`, those counts made a `Score` (value and explanation from
 *     the scorer's memo, details, label) in one call: exact mode's common case, where each Python frame on the
 *     way was a tenth of an evaluation.
 *   - `unvalidated(cls, values, fields_set)`: `python_unvalidated`, a pydantic model instance with its state set
 *     as validation sets it (a `Score` per evaluation, a `ToolCall` per call extracted).
 *
 * A dict or list walked may be changed by Python code a value of another type runs (its `==`, or its `<` when
 * `freeze` sorts keys); items are held while compared and sizes read again, so a change gives a RuntimeError
 * (a dict, as Python's iteration raises) or a wrong answer at worst, never a crash.
 * Depth counts against Python's recursion limit, as the recursive Python function's does. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

static PyObject *str_name, *str_args;

static int json_equal(PyObject *a, PyObject *b);

static int changed_size(void) {
    PyErr_SetString(PyExc_RuntimeError, "dictionary changed size during iteration");
    return -1;
}

static int dict_equal(PyObject *a, PyObject *b) {
    Py_ssize_t size = PyDict_GET_SIZE(a);
    if (!PyDict_CheckExact(b) || size != PyDict_GET_SIZE(b)) return 0;
    Py_ssize_t pos = 0;
    PyObject *key, *value;
    while (PyDict_Next(a, &pos, &key, &value)) {
        Py_INCREF(key);
        Py_INCREF(value);
        PyObject *other = PyDict_GetItemWithError(b, key); /* borrowed */
        int same = other == NULL ? (PyErr_Occurred() ? -1 : 0) : (Py_INCREF(other), json_equal(value, other));
        Py_XDECREF(other);
        Py_DECREF(value);
        Py_DECREF(key);
        if (same != 1) return same;
        if (PyDict_GET_SIZE(a) != size) return changed_size(); /* a value's `==` changed it, as Python raises */
    }
    return 1;
}

static inline int is_array(PyObject *o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }

static int array_equal(PyObject *a, PyObject *b) {
    if (!is_array(b)) return 0;
    Py_ssize_t n = Py_SIZE(a);
    if (n != Py_SIZE(b)) return 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_SIZE(a) != n || Py_SIZE(b) != n) return 0; /* a list changed by a value's `==` */
        PyObject *x = PySequence_Fast_ITEMS(a)[i], *y = PySequence_Fast_ITEMS(b)[i];
        Py_INCREF(x);
        Py_INCREF(y);
        int same = json_equal(x, y);
        Py_DECREF(x);
        Py_DECREF(y);
        if (same != 1) return same;
    }
    return 1;
}

static inline int is_number(PyObject *o) { return PyLong_CheckExact(o) || PyFloat_CheckExact(o); }

/* 1 equal, 0 not, -1 an exception. */
static int json_equal(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    if (PyDict_CheckExact(a) || is_array(a)) {
        if (Py_EnterRecursiveCall(" in json_equal")) return -1;
        int same = PyDict_CheckExact(a) ? dict_equal(a, b) : array_equal(a, b);
        Py_LeaveRecursiveCall();
        return same;
    }
    if (PyUnicode_CheckExact(a)) { /* the commonest leaf, compared without a call */
        if (!PyUnicode_CheckExact(b)) return 0;
        Py_ssize_t n = PyUnicode_GET_LENGTH(a);
        if (n != PyUnicode_GET_LENGTH(b) || PyUnicode_KIND(a) != PyUnicode_KIND(b)) return 0;
        return memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), (size_t)n * PyUnicode_KIND(a)) == 0;
    }
    /* A bool is no exact int: it reaches the type test below, and equals only itself (`a is b` above). */
    if (is_number(a) && is_number(b)) {
        int same = PyObject_RichCompareBool(a, b, Py_EQ);
        if (same != 0) return same;
        return PyFloat_CheckExact(a) && PyFloat_CheckExact(b) && isnan(PyFloat_AS_DOUBLE(a)) &&
               isnan(PyFloat_AS_DOUBLE(b));
    }
    if (Py_TYPE(a) != Py_TYPE(b)) return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

static PyObject *py_json_equal(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "json_equal takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    int same = json_equal(args[0], args[1]);
    if (same < 0) return NULL;
    return PyBool_FromLong(same);
}

/* `call.<name>`. A pydantic model's class has `__getattr__` (for private attributes), which makes every
 * attribute read go through a slower hook; the generic lookup finds a field in the instance's dict directly, and
 * anything it does not find is read the usual way. */
static PyObject *field(PyObject *call, PyObject *name) {
    PyObject *value = PyObject_GenericGetAttr(call, name);
    if (value != NULL || !PyErr_ExceptionMatches(PyExc_AttributeError)) return value;
    PyErr_Clear();
    return PyObject_GetAttr(call, name);
}

/* The test of pair i: 1 exact, 0 name only, -1 an exception. */
static int args_match(PyObject *test, PyObject *call) {
    PyObject *got = field(call, str_args);
    if (got == NULL) return -1;
    PyObject *verdict = PyObject_CallOneArg(test, got);
    Py_DECREF(got);
    if (verdict == NULL) return -1;
    int truth = PyObject_IsTrue(verdict);
    Py_DECREF(verdict);
    return truth;
}

/* Exact mode's pair counts (`python_exact_counts`) into `counts` (exact, name only, wrong); -1 on an exception. */
static int count_pairs(PyObject *names, PyObject *tests, PyObject *actual, Py_ssize_t counts[3]) {
    Py_ssize_t n = PyTuple_GET_SIZE(actual);
    if (PyTuple_GET_SIZE(names) < n) n = PyTuple_GET_SIZE(names);
    if (PyTuple_GET_SIZE(tests) < n) n = PyTuple_GET_SIZE(tests);
    counts[0] = counts[1] = counts[2] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *call = PyTuple_GET_ITEM(actual, i);
        PyObject *name = field(call, str_name);
        if (name == NULL) return -1;
        int same_name = PyObject_RichCompareBool(name, PyTuple_GET_ITEM(names, i), Py_EQ);
        Py_DECREF(name);
        if (same_name < 0) return -1;
        if (!same_name) {
            counts[2]++;
            continue;
        }
        int match = args_match(PyTuple_GET_ITEM(tests, i), call);
        if (match < 0) return -1;
        counts[match ? 0 : 1]++;
    }
    return 0;
}

static PyObject *py_exact_counts(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "exact_counts takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    if (!PyTuple_CheckExact(args[0]) || !PyTuple_CheckExact(args[1]) || !PyTuple_CheckExact(args[2])) {
        PyErr_SetString(PyExc_TypeError, "exact_counts takes three tuples");
        return NULL;
    }
    Py_ssize_t counts[3];
    if (count_pairs(args[0], args[1], args[2], counts) < 0) return NULL;
    return Py_BuildValue("(nnn)", counts[0], counts[1], counts[2]);
}

/* `python_freeze` (Evalite's flexible-mode key of a value), rule for rule; NULL on an exception. */
static PyObject *tag_object, *tag_array, *frozen_true, *frozen_false;

static PyObject *freeze(PyObject *value);

static PyObject *tagged(PyObject *tag, PyObject *items) { /* (tag, tuple(items)), stealing `items` (a list) */
    if (items == NULL) return NULL;
    PyObject *tuple = PyList_AsTuple(items);
    Py_DECREF(items);
    if (tuple == NULL) return NULL;
    PyObject *out = PyTuple_Pack(2, tag, tuple);
    Py_DECREF(tuple);
    return out;
}

static PyObject *freeze_dict(PyObject *value) {
    PyObject *items = PyList_New(0);
    if (items == NULL) return NULL;
    Py_ssize_t pos = 0;
    PyObject *key, *item;
    Py_ssize_t size = PyDict_GET_SIZE(value);
    while (PyDict_Next(value, &pos, &key, &item)) {
        Py_INCREF(key);
        Py_INCREF(item);
        PyObject *frozen = freeze(item);
        PyObject *pair = frozen == NULL ? NULL : PyTuple_Pack(2, key, frozen);
        Py_XDECREF(frozen);
        Py_DECREF(item);
        Py_DECREF(key);
        if (pair == NULL || PyList_Append(items, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(items);
            return NULL;
        }
        Py_DECREF(pair);
        if (PyDict_GET_SIZE(value) != size) { /* an ordering of keys in an item's sort ran code that changed it */
            Py_DECREF(items);
            return changed_size(), NULL;
        }
    }
    if (PyList_Sort(items) < 0) { /* as `sorted`: keys of types that do not order raise TypeError */
        Py_DECREF(items);
        return NULL;
    }
    return tagged(tag_object, items);
}

static PyObject *freeze_array(PyObject *value) {
    Py_ssize_t n = Py_SIZE(value);
    PyObject *items = PyTuple_New(n);
    if (items == NULL) return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (Py_SIZE(value) != n) { /* sorting an item's keys ran code that changed the list */
            Py_DECREF(items);
            PyErr_SetString(PyExc_RuntimeError, "list changed size during freeze");
            return NULL;
        }
        PyObject *item = PySequence_Fast_ITEMS(value)[i];
        Py_INCREF(item);
        PyObject *frozen = freeze(item);
        Py_DECREF(item);
        if (frozen == NULL) {
            Py_DECREF(items);
            return NULL;
        }
        PyTuple_SET_ITEM(items, i, frozen);
    }
    PyObject *out = PyTuple_Pack(2, tag_array, items);
    Py_DECREF(items);
    return out;
}

static PyObject *freeze(PyObject *value) {
    if (PyDict_CheckExact(value) || is_array(value)) {
        if (Py_EnterRecursiveCall(" in freeze")) return NULL;
        PyObject *out = PyDict_CheckExact(value) ? freeze_dict(value) : freeze_array(value);
        Py_LeaveRecursiveCall();
        return out;
    }
    if (PyBool_Check(value)) return Py_NewRef(value == Py_True ? frozen_true : frozen_false);
    if (is_number(value)) {
        double number = PyFloat_CheckExact(value) ? PyFloat_AS_DOUBLE(value) : PyLong_AsDouble(value);
        if (number == -1.0 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
            PyErr_Clear(); /* an int past a double: `null`, as float() raising OverflowError reads */
            Py_RETURN_NONE;
        }
        if (!isfinite(number)) Py_RETURN_NONE;
        return PyFloat_FromDouble(number);
    }
    return Py_NewRef(value);
}

static PyObject *py_freeze(PyObject *Py_UNUSED(module), PyObject *value) { return freeze(value); }

/* `python_unvalidated`: a pydantic model instance whose state is set as validation sets it, without validating.
 * The four slots are set through `BaseModel`'s own descriptors (taken at import), as `object.__setattr__` would
 * without looking each name up again; the model's `__setattr__` (frozen models refuse) is not involved. */
static PyObject *base_model, *slot_dict, *slot_fields_set, *slot_extra, *slot_private;

static int set_slot(PyObject *descriptor, PyObject *obj, PyObject *value) {
    return Py_TYPE(descriptor)->tp_descr_set(descriptor, obj, value);
}

static PyObject *make_model(PyObject *cls, PyObject *values, PyObject *fields_set) {
    PyTypeObject *type = (PyTypeObject *)cls;
    PyObject *obj = type->tp_alloc(type, 0);
    if (obj == NULL) return NULL;
    if (set_slot(slot_dict, obj, values) < 0 || set_slot(slot_fields_set, obj, fields_set) < 0 ||
        set_slot(slot_extra, obj, Py_None) < 0 || set_slot(slot_private, obj, Py_None) < 0) {
        Py_DECREF(obj);
        return NULL;
    }
    return obj;
}

static PyObject *py_unvalidated(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "unvalidated takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *cls = args[0], *values = args[1], *fields_set = args[2];
    if (!PyType_Check(cls) || !PyType_IsSubtype((PyTypeObject *)cls, (PyTypeObject *)base_model)) {
        PyErr_SetString(PyExc_TypeError, "unvalidated: cls must be a pydantic BaseModel subclass");
        return NULL;
    }
    if (!PyDict_CheckExact(values) || !PySet_CheckExact(fields_set)) {
        PyErr_SetString(PyExc_TypeError, "unvalidated takes a dict of values and a set of field names");
        return NULL;
    }
    return make_model(cls, values, fields_set);
}

/* `python_exact_score`: exact mode's counts, value, explanation (from the memo, or `text` on a miss), details and
 * label, as a `Score`. `plan` is `exact_plan`'s tuple, checked here as far as a wrong one could crash. */
static PyObject *key_mode, *mode_exact, *key_exact, *key_name_only, *key_wrong, *key_totals, *key_reference,
    *key_output, *key_name, *key_value, *key_label, *key_explanation, *key_details, *label_pass, *label_fail;

static PyObject *exact_details(Py_ssize_t counts[3], Py_ssize_t m, Py_ssize_t n) {
    PyObject *totals = Py_BuildValue("{OnOn}", key_reference, m, key_output, n);
    if (totals == NULL) return NULL;
    PyObject *details = Py_BuildValue("{OOOnOnOnON}", key_mode, mode_exact, key_exact, counts[0], key_name_only,
                                      counts[1], key_wrong, counts[2], key_totals, totals);
    return details; /* `N` took `totals`, also on failure */
}

static PyObject *py_exact_score(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "exact_score takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *plan = args[0], *actual = args[1];
    if (!PyTuple_CheckExact(plan) || PyTuple_GET_SIZE(plan) != 10 || !PyTuple_CheckExact(actual)) {
        PyErr_SetString(PyExc_TypeError, "exact_score takes exact_plan's tuple and a tuple of calls");
        return NULL;
    }
    PyObject *names = PyTuple_GET_ITEM(plan, 0), *tests = PyTuple_GET_ITEM(plan, 1);
    PyObject *memo = PyTuple_GET_ITEM(plan, 4), *score_type = PyTuple_GET_ITEM(plan, 6);
    PyObject *fields = PyTuple_GET_ITEM(plan, 7), *threshold = PyTuple_GET_ITEM(plan, 9);
    if (!PyTuple_CheckExact(names) || !PyTuple_CheckExact(tests) || !PyDict_CheckExact(memo) ||
        !PyType_Check(score_type) || !PyType_IsSubtype((PyTypeObject *)score_type, (PyTypeObject *)base_model) ||
        !PyAnySet_CheckExact(fields) || !PyFloat_CheckExact(threshold)) {
        PyErr_SetString(PyExc_TypeError, "exact_score: the plan is not exact_plan's");
        return NULL;
    }
    Py_ssize_t counts[3], m = PyTuple_GET_SIZE(names), n = PyTuple_GET_SIZE(actual);
    if (count_pairs(names, tests, actual, counts) < 0) return NULL;
    if (n > m) counts[2] += 2 * (n - m); /* unpaired, then again as extras */
    PyObject *key = Py_BuildValue("(nnn)", counts[0], counts[1], counts[2]);
    if (key == NULL) return NULL;
    PyObject *pair = PyDict_GetItemWithError(memo, key); /* borrowed */
    if (pair != NULL) { /* the memo holds (value, explanation) pairs alone: `memo.get(counts) or ...` */
        Py_INCREF(pair);
    } else if (PyErr_Occurred()) {
        Py_DECREF(key);
        return NULL;
    } else {
        pair = PyObject_CallFunction(PyTuple_GET_ITEM(plan, 5), "OnOOO", key, m, PyTuple_GET_ITEM(plan, 2),
                                     PyTuple_GET_ITEM(plan, 3), memo);
    }
    Py_DECREF(key);
    if (pair == NULL) return NULL;
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2) {
        Py_DECREF(pair);
        PyErr_SetString(PyExc_TypeError, "exact_score: the explanation gave no (value, explanation) pair");
        return NULL;
    }
    PyObject *value = PyNumber_Float(PyTuple_GET_ITEM(pair, 0));
    PyObject *explanation = Py_NewRef(PyTuple_GET_ITEM(pair, 1));
    Py_DECREF(pair);
    PyObject *details = value == NULL ? NULL : exact_details(counts, m, n);
    PyObject *fields_set = details == NULL ? NULL : PySet_New(fields);
    PyObject *score = NULL;
    if (fields_set != NULL) {
        PyObject *label = PyFloat_AS_DOUBLE(value) >= PyFloat_AS_DOUBLE(threshold) ? label_pass : label_fail;
        PyObject *values = Py_BuildValue("{OOOOOOOOOO}", key_name, PyTuple_GET_ITEM(plan, 8), key_value, value,
                                         key_label, label, key_explanation, explanation, key_details, details);
        if (values != NULL) score = make_model(score_type, values, fields_set);
        Py_XDECREF(values);
    }
    Py_XDECREF(fields_set);
    Py_XDECREF(details);
    Py_DECREF(explanation);
    Py_XDECREF(value);
    return score;
}

static int intern_exact_keys(void) {
    struct {
        PyObject **slot;
        const char *text;
    } keys[] = {
        {&key_mode, "mode"}, {&mode_exact, "exact"}, {&key_exact, "exact_matches"},
        {&key_name_only, "name_only_matches"}, {&key_wrong, "wrong_or_missing"}, {&key_totals, "totals"},
        {&key_reference, "reference"}, {&key_output, "output"}, {&key_name, "name"}, {&key_value, "value"},
        {&key_label, "label"}, {&key_explanation, "explanation"}, {&key_details, "details"},
        {&label_pass, "pass"}, {&label_fail, "fail"},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
        if ((*keys[i].slot = PyUnicode_InternFromString(keys[i].text)) == NULL) return -1;
    return 0;
}

static int bind_base_model(void) {
    PyObject *pydantic = PyImport_ImportModule("pydantic");
    if (pydantic == NULL) return -1;
    base_model = PyObject_GetAttrString(pydantic, "BaseModel");
    Py_DECREF(pydantic);
    if (base_model == NULL) return -1;
    PyObject *attributes = ((PyTypeObject *)base_model)->tp_dict; /* borrowed */
    const char *names[] = {"__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"};
    PyObject **slots[] = {&slot_dict, &slot_fields_set, &slot_extra, &slot_private};
    for (int i = 0; i < 4; i++) {
        PyObject *descriptor = PyDict_GetItemString(attributes, names[i]); /* borrowed */
        if (descriptor == NULL || Py_TYPE(descriptor)->tp_descr_set == NULL) {
            PyErr_Format(PyExc_ImportError, "pydantic.BaseModel has no settable slot %s", names[i]);
            return -1;
        }
        *slots[i] = Py_NewRef(descriptor);
    }
    return 0;
}

static PyMethodDef equal_methods[] = {
    {"exact_score", (PyCFunction)(void (*)(void))py_exact_score, METH_FASTCALL,
     "exact_score(plan, actual): exact mode's Score, as _trajectory_evalite.python_exact_score."},
    {"unvalidated", (PyCFunction)(void (*)(void))py_unvalidated, METH_FASTCALL,
     "unvalidated(cls, values, fields_set): a model instance with that state, as _model.python_unvalidated."},
    {"freeze", (PyCFunction)py_freeze, METH_O, "freeze(value): Evalite's flexible-mode key, as python_freeze."},
    {"json_equal", (PyCFunction)(void (*)(void))py_json_equal, METH_FASTCALL,
     "json_equal(a, b): JSON deep equality, as _json_equality.json_equal."},
    {"exact_counts", (PyCFunction)(void (*)(void))py_exact_counts, METH_FASTCALL,
     "exact_counts(names, tests, actual): (exact, name only, wrong) of exact mode's pairs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef equal_module = {
    PyModuleDef_HEAD_INIT, "_equal", "JSON equality, exact mode's counts and score, unvalidated models: the scorers' compiled paths.", -1, equal_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__equal(void) {
    str_name = PyUnicode_InternFromString("name");
    str_args = PyUnicode_InternFromString("args");
    tag_object = PyUnicode_InternFromString("{");
    tag_array = PyUnicode_InternFromString("[");
    frozen_true = Py_BuildValue("(s)", "true");
    frozen_false = Py_BuildValue("(s)", "false");
    if (str_name == NULL || str_args == NULL || tag_object == NULL || tag_array == NULL || frozen_true == NULL ||
        frozen_false == NULL)
        return NULL;
    if (bind_base_model() < 0 || intern_exact_keys() < 0) return NULL;
    return PyModule_Create(&equal_module);
}
