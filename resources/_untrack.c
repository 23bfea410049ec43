/* Untracking a freshly built column tuple from the cyclic garbage collector.
 *
 * CPython untracks a tuple whose items are all untracked (str, int, float,
 * None, ...) itself, but only when a collection first walks it: for a
 * 200,000-value column that walk costs tens of milliseconds while holding
 * the interpreter (every item's header is read, mostly cache misses, in three
 * passes). untrack_atomic(t) does the same check in one pass right after the
 * column is built, on the loading thread, and untracks the tuple when it is
 * safe: exactly the condition CPython's own _PyTuple_MaybeUntrack uses (no
 * item is a GC object, other than an exact tuple that is untracked), so a
 * tuple that could ever be part of a cycle stays tracked.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *
untrack_atomic(PyObject *module, PyObject *arg)
{
    (void)module;
    if (!PyTuple_CheckExact(arg)) {
        PyErr_SetString(PyExc_TypeError, "untrack_atomic() takes a tuple");
        return NULL;
    }
    if (!PyObject_GC_IsTracked(arg)) {
        Py_RETURN_TRUE;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(arg);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(arg, i);
        /* CPython's own condition (_PyObject_GC_MAY_BE_TRACKED, used by
         * _PyTuple_MaybeUntrack): an item keeps the tuple tracked when it is a
         * GC object, unless it is an exact tuple that is itself untracked. An
         * untracked dict (or any other GC object untracked for now) still
         * counts: it can become tracked later and close a cycle through this
         * tuple, which the collector could then never see. A NULL item (a
         * tuple still being built) keeps it tracked too. */
        if (item == NULL) {
            Py_RETURN_FALSE;
        }
        if (PyObject_IS_GC(item)
            && (!PyTuple_CheckExact(item) || PyObject_GC_IsTracked(item))) {
            Py_RETURN_FALSE;
        }
    }
    PyObject_GC_UnTrack(arg);
    Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"untrack_atomic", untrack_atomic, METH_O,
     "untrack_atomic(t) -> bool: untrack tuple t from the cyclic GC when no item can ever be tracked."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "resources._untrack", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__untrack(void)
{
    return PyModule_Create(&module);
}
