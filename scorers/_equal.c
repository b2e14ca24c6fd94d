/* JSON equality, flexible mode's keys and exact mode's pair counts, compiled (see _accel.py, which loads it, and _json_equality.py
 * and _trajectory_evalite.py, whose pure-Python functions these are; tests/test_equal_accel.py holds them to the
 * same answers).
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

static PyObject *py_exact_counts(PyObject *Py_UNUSED(module), PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "exact_counts takes 3 arguments (%zd given)", nargs);
        return NULL;
    }
    PyObject *names = args[0], *tests = args[1], *actual = args[2];
    if (!PyTuple_CheckExact(names) || !PyTuple_CheckExact(tests) || !PyTuple_CheckExact(actual)) {
        PyErr_SetString(PyExc_TypeError, "exact_counts takes three tuples");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(actual);
    if (PyTuple_GET_SIZE(names) < n) n = PyTuple_GET_SIZE(names);
    if (PyTuple_GET_SIZE(tests) < n) n = PyTuple_GET_SIZE(tests);
    Py_ssize_t exact = 0, name_only = 0, wrong = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *call = PyTuple_GET_ITEM(actual, i);
        PyObject *name = field(call, str_name);
        if (name == NULL) return NULL;
        int same_name = PyObject_RichCompareBool(name, PyTuple_GET_ITEM(names, i), Py_EQ);
        Py_DECREF(name);
        if (same_name < 0) return NULL;
        if (!same_name) {
            wrong++;
            continue;
        }
        int match = args_match(PyTuple_GET_ITEM(tests, i), call);
        if (match < 0) return NULL;
        if (match)
            exact++;
        else
            name_only++;
    }
    return Py_BuildValue("(nnn)", exact, name_only, wrong);
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

static PyMethodDef equal_methods[] = {
    {"freeze", (PyCFunction)py_freeze, METH_O, "freeze(value): Evalite's flexible-mode key, as python_freeze."},
    {"json_equal", (PyCFunction)(void (*)(void))py_json_equal, METH_FASTCALL,
     "json_equal(a, b): JSON deep equality, as _json_equality.json_equal."},
    {"exact_counts", (PyCFunction)(void (*)(void))py_exact_counts, METH_FASTCALL,
     "exact_counts(names, tests, actual): (exact, name only, wrong) of exact mode's pairs."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef equal_module = {
    PyModuleDef_HEAD_INIT, "_equal", "JSON equality, flexible mode's keys and exact mode's pair counts, compiled.", -1, equal_methods,
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
    return PyModule_Create(&equal_module);
}
