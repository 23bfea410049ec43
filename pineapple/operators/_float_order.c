/* The stable order of a column of numbers, for reorder_sort on the compiled core.
 *
 * float_order(values, descending) returns
 *     sorted(range(len(values)), key=values.__getitem__, reverse=descending)
 * when every value is a float that is not a NaN, or an int of at most 2**53 in
 * magnitude (converted to a double exactly, so every comparison is the one
 * Python makes); otherwise None, and the caller sorts. values must be a list.
 *
 * How: the keys are read once into an array, split into runs already in order
 * (no value strictly ahead of the one before it), and the runs are merged in
 * pairs until one is left, an item of the right run going first only when its
 * key is strictly ahead: equal keys keep their input order, as sorted's do
 * (reverse=True too). Items usually come from a few recall lists each already
 * in score order, so there are few runs, and sorted's per-item key call (the
 * bulk of its cost) is never made.
 *
 * Bounds: 40 bytes of scratch memory per value (freed before returning), one
 * pass to read the keys and find the runs, then ceil(log2(runs)) merge passes
 * of len(values) steps each. No Python code runs while the list is read (the
 * interpreter is held throughout): the caller passes at most PIECE values.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define EXACT_INT (1LL << 53)

/* The ints 0 .. CACHED_INTS - 1, made once and shared by every order returned
 * (ints are immutable): an order of at most PIECE items makes no int of its own.
 * 4096 ints, about 130 KB, for the life of the process. */
#define CACHED_INTS 4096
static PyObject *cached_ints[CACHED_INTS];

static PyObject *
index_object(Py_ssize_t at)
{
    if (at >= CACHED_INTS) {
        return PyLong_FromSsize_t(at);
    }
    PyObject *obj = cached_ints[at];
    if (obj == NULL) {
        obj = PyLong_FromSsize_t(at);
        if (obj == NULL) {
            return NULL;
        }
        cached_ints[at] = obj; /* the cache's own reference, never released */
    }
    Py_INCREF(obj);
    return obj;
}

typedef struct {
    double key;
    Py_ssize_t at;
} Entry;

/* The key of one value; 0 when it is not one float_order orders itself. */
static int
read_key(PyObject *item, double *key)
{
    if (PyFloat_CheckExact(item)) {
        double d = PyFloat_AS_DOUBLE(item);
        if (d != d) {
            return 0; /* a NaN: no order to copy */
        }
        *key = d;
        return 1;
    }
    if (PyLong_CheckExact(item)) { /* a bool is not an exact int */
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (overflow || v > EXACT_INT || v < -EXACT_INT) {
            return 0; /* beyond a double's exact ints: Python compares it exactly */
        }
        *key = (double)v;
        return 1;
    }
    return 0;
}

static inline int
ahead(double a, double b, int descending)
{
    return descending ? a > b : a < b;
}

/* Merge src[a:b] and src[b:c] (each in order) into dst[a:c]; ties: the left first. */
static void
merge(const Entry *src, Entry *dst, Py_ssize_t a, Py_ssize_t b, Py_ssize_t c,
      int descending)
{
    Py_ssize_t i = a, j = b, k = a;
    while (i < b && j < c) {
        if (ahead(src[j].key, src[i].key, descending)) {
            dst[k++] = src[j++];
        }
        else {
            dst[k++] = src[i++];
        }
    }
    while (i < b) {
        dst[k++] = src[i++];
    }
    while (j < c) {
        dst[k++] = src[j++];
    }
}

static PyObject *
float_order(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 2 || !PyList_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "float_order(values: list, descending: bool)");
        return NULL;
    }
    PyObject *values = args[0];
    int descending = PyObject_IsTrue(args[1]);
    if (descending < 0) {
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(values);
    if ((size_t)n > PY_SSIZE_T_MAX / (2 * sizeof(Entry) + sizeof(Py_ssize_t)) - 1) {
        return PyErr_NoMemory();
    }
    /* Two entry arrays (merges go back and forth) and the run bounds. */
    Entry *one = PyMem_Malloc((size_t)(n ? n : 1) * 2 * sizeof(Entry));
    Py_ssize_t *bounds = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    if (one == NULL || bounds == NULL) {
        PyMem_Free(one);
        PyMem_Free(bounds);
        return PyErr_NoMemory();
    }
    Entry *two = one + n;
    Py_ssize_t runs = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!read_key(PyList_GET_ITEM(values, i), &one[i].key)) {
            PyMem_Free(one);
            PyMem_Free(bounds);
            Py_RETURN_NONE;
        }
        one[i].at = i;
        if (i == 0 || ahead(one[i].key, one[i - 1].key, descending)) {
            bounds[runs++] = i; /* a run starts here */
        }
    }
    bounds[runs] = n;
    Entry *src = one, *dst = two;
    while (runs > 1) { /* bounded: ceil(log2(runs)) passes */
        Py_ssize_t kept = 0;
        for (Py_ssize_t r = 0; r < runs; r += 2) {
            Py_ssize_t a = bounds[r], b = bounds[r + 1];
            Py_ssize_t c = r + 1 < runs ? bounds[r + 2] : b; /* an odd run out: copied */
            merge(src, dst, a, b, c, descending);
            bounds[kept++] = a; /* kept <= r / 2: never a bound still to be read */
        }
        bounds[kept] = n;
        runs = kept;
        Entry *t = src;
        src = dst;
        dst = t;
    }
    PyObject *order = PyList_New(n);
    if (order != NULL) {
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *at = index_object(src[i].at);
            if (at == NULL) {
                Py_CLEAR(order);
                break;
            }
            PyList_SET_ITEM(order, i, at);
        }
    }
    PyMem_Free(one);
    PyMem_Free(bounds);
    return order;
}

static PyMethodDef methods[] = {
    {"float_order", (PyCFunction)(void (*)(void))float_order, METH_FASTCALL,
     "float_order(values, descending) -> list[int] | None: sorted's stable order of "
     "a list of floats (no NaN) and exact ints; None for any other value."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pineapple.operators._float_order", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__float_order(void)
{
    return PyModule_Create(&module);
}
