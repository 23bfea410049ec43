/*
 * Compiled fast path of the borrow contract: RefValue and ResourceHandle.
 *
 * Same semantics as the pure-Python classes in _refvalue.py (which stay as the
 * tested fallback); see that module's "Guarantees:" block.
 *
 * Guarantees:
 * - The reference count is updated only with atomic builtins: acquire is a
 *   compare-and-swap loop that never increments a count of 0 (no
 *   resurrection), release is an atomic fetch-and-subtract, so exactly one
 *   release observes the 1 -> 0 transition and hands the value to the closer.
 *   None of this relies on the GIL, so it holds on free-threaded CPython.
 * - A handle gives up its reference with an atomic exchange of its pointer,
 *   so even two threads racing to release one handle release it once; the
 *   loser gets HandleReleasedError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

static PyObject *closer_callback = NULL;     /* callable(label, value) */
static PyObject *released_error = NULL;      /* pineapple.HandleReleasedError */

typedef struct {
    PyObject_HEAD
    PyObject *value;
    PyObject *label;
    Py_ssize_t refs;
} RefValueObject;

typedef struct {
    PyObject_HEAD
    RefValueObject *ref; /* NULL once released */
} HandleObject;

static PyTypeObject RefValueType;
static PyTypeObject HandleType;

static PyObject *
raise_released(const char *message)
{
    PyErr_SetString(released_error ? released_error : PyExc_RuntimeError, message);
    return NULL;
}

static int
rv_try_acquire(RefValueObject *self)
{
    Py_ssize_t cur = __atomic_load_n(&self->refs, __ATOMIC_ACQUIRE);
    while (cur > 0) {
        if (__atomic_compare_exchange_n(&self->refs, &cur, cur + 1, 1,
                                        __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            return 1;
        }
    }
    return 0;
}

/* Drop one reference; the last one schedules close. 0 on success, -1 on error. */
static int
rv_release(RefValueObject *self)
{
    Py_ssize_t prev = __atomic_fetch_sub(&self->refs, 1, __ATOMIC_ACQ_REL);
    if (prev == 1) {
        if (closer_callback == NULL || self->value == NULL || self->label == NULL) {
            return 0; /* not configured, or cleared by the cyclic GC */
        }
        PyObject *res = PyObject_CallFunctionObjArgs(closer_callback, self->label,
                                                     self->value, NULL);
        if (res == NULL) {
            return -1;
        }
        Py_DECREF(res);
        return 0;
    }
    if (prev <= 0) {
        __atomic_fetch_add(&self->refs, 1, __ATOMIC_ACQ_REL);
        raise_released("resource released more times than acquired");
        return -1;
    }
    return 0;
}

static PyObject *
handle_wrap(RefValueObject *ref)
{
    HandleObject *h = PyObject_New(HandleObject, &HandleType);
    if (h == NULL) {
        return NULL;
    }
    Py_INCREF(ref);
    h->ref = ref;
    return (PyObject *)h;
}

/* ---- RefValue ---------------------------------------------------------- */

static PyObject *
rv_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"value", "label", NULL};
    PyObject *value, *label = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|U", kwlist, &value, &label)) {
        return NULL;
    }
    RefValueObject *self = (RefValueObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_INCREF(value);
    self->value = value;
    if (label == NULL) {
        self->label = PyUnicode_FromString("");
        if (self->label == NULL) {
            Py_DECREF(self);
            return NULL;
        }
    } else {
        Py_INCREF(label);
        self->label = label;
    }
    self->refs = 1; /* the publisher's baseline reference */
    return (PyObject *)self;
}

/* RefValue takes part in cyclic GC (a value may, through its own objects,
 * refer back to its RefValue); handles, made per borrow, stay untracked. */
static int
rv_traverse(RefValueObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->value);
    Py_VISIT(self->label);
    return 0;
}

static int
rv_clear(RefValueObject *self)
{
    Py_CLEAR(self->value);
    Py_CLEAR(self->label);
    return 0;
}

static void
rv_dealloc(RefValueObject *self)
{
    PyObject_GC_UnTrack(self);
    rv_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
rv_acquire(RefValueObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(rv_try_acquire(self));
}

static PyObject *
rv_release_method(RefValueObject *self, PyObject *Py_UNUSED(ignored))
{
    if (rv_release(self) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
rv_borrow(RefValueObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!rv_try_acquire(self)) {
        Py_RETURN_NONE;
    }
    PyObject *h = handle_wrap(self);
    if (h == NULL) {
        rv_release(self);
    }
    return h;
}

static PyObject *
rv_get_value(RefValueObject *self, void *Py_UNUSED(closure))
{
    PyObject *value = self->value ? self->value : Py_None;
    Py_INCREF(value);
    return value;
}

static PyObject *
rv_get_label(RefValueObject *self, void *Py_UNUSED(closure))
{
    PyObject *label = self->label ? self->label : Py_None;
    Py_INCREF(label);
    return label;
}

static PyObject *
rv_get_refs(RefValueObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(__atomic_load_n(&self->refs, __ATOMIC_ACQUIRE));
}

static PyObject *
rv_repr(RefValueObject *self)
{
    return PyUnicode_FromFormat("RefValue(%R, refs=%zd)", self->label ? self->label : Py_None,
                                __atomic_load_n(&self->refs, __ATOMIC_ACQUIRE));
}

static PyMethodDef rv_methods[] = {
    {"acquire", (PyCFunction)rv_acquire, METH_NOARGS,
     "Add a reference if the value is still live; False once it is retiring."},
    {"release", (PyCFunction)rv_release_method, METH_NOARGS,
     "Drop one reference; the last one schedules value.close()."},
    {"borrow", (PyCFunction)rv_borrow, METH_NOARGS,
     "A handle holding one new reference, or None if the value is retiring."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef rv_getset[] = {
    {"value", (getter)rv_get_value, NULL, "the wrapped value", NULL},
    {"label", (getter)rv_get_label, NULL, "type/name, for logs", NULL},
    {"refs", (getter)rv_get_refs, NULL, "the current count (racy by nature)", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RefValueType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pineapple.resource._cref.RefValue",
    .tp_basicsize = sizeof(RefValueObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_traverse = (traverseproc)rv_traverse,
    .tp_clear = (inquiry)rv_clear,
    .tp_doc = "A value plus a reference count; the last release schedules close().",
    .tp_new = rv_new,
    .tp_dealloc = (destructor)rv_dealloc,
    .tp_repr = (reprfunc)rv_repr,
    .tp_methods = rv_methods,
    .tp_getset = rv_getset,
};

/* ---- ResourceHandle ------------------------------------------------------ */

static PyObject *
handle_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *ref;
    if (!PyArg_ParseTuple(args, "O!:ResourceHandle", &RefValueType, &ref)) {
        return NULL;
    }
    return handle_wrap((RefValueObject *)ref);
}

static void
handle_dealloc(HandleObject *self)
{
    /* An unreleased handle keeps its reference: strict borrow semantics, the
     * same as the pure-Python class (release is the borrower's duty). */
    Py_XDECREF(self->ref);
    PyObject_Free(self);
}

static PyObject *
handle_release(HandleObject *self, PyObject *Py_UNUSED(ignored))
{
    RefValueObject *ref = __atomic_exchange_n(&self->ref, NULL, __ATOMIC_ACQ_REL);
    if (ref == NULL) {
        return raise_released("resource handle released twice");
    }
    int rc = rv_release(ref);
    Py_DECREF(ref);
    if (rc < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
handle_get_value(HandleObject *self, void *Py_UNUSED(closure))
{
    RefValueObject *ref = __atomic_load_n(&self->ref, __ATOMIC_ACQUIRE);
    if (ref == NULL) {
        return raise_released("resource handle used after release");
    }
    PyObject *value = ref->value ? ref->value : Py_None;
    Py_INCREF(value);
    return value;
}

static PyObject *
handle_get_released(HandleObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(__atomic_load_n(&self->ref, __ATOMIC_ACQUIRE) == NULL);
}

static PyObject *
handle_enter(HandleObject *self, PyObject *Py_UNUSED(ignored))
{
    return handle_get_value(self, NULL);
}

static PyObject *
handle_exit(HandleObject *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    PyObject *res = handle_release(self, NULL);
    if (res == NULL) {
        return NULL;
    }
    Py_DECREF(res);
    Py_RETURN_NONE; /* never swallow the block's exception */
}

static PyObject *
handle_repr(HandleObject *self)
{
    RefValueObject *ref = __atomic_load_n(&self->ref, __ATOMIC_ACQUIRE);
    if (ref == NULL) {
        return PyUnicode_FromString("ResourceHandle(released)");
    }
    return PyUnicode_FromFormat("ResourceHandle(%R)", ref->label ? ref->label : Py_None);
}

static PyMethodDef handle_methods[] = {
    {"release", (PyCFunction)handle_release, METH_NOARGS,
     "Return the reference; a second call raises HandleReleasedError."},
    {"__enter__", (PyCFunction)handle_enter, METH_NOARGS, "The borrowed value."},
    {"__exit__", (PyCFunction)(void (*)(void))handle_exit, METH_FASTCALL, "Release."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef handle_getset[] = {
    {"value", (getter)handle_get_value, NULL,
     "The borrowed value; raises HandleReleasedError after release.", NULL},
    {"released", (getter)handle_get_released, NULL, "True once released.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject HandleType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "pineapple.resource._cref.ResourceHandle",
    .tp_basicsize = sizeof(HandleObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A borrowed reference to a resource value; release it exactly once.",
    .tp_new = handle_new,
    .tp_dealloc = (destructor)handle_dealloc,
    .tp_repr = (reprfunc)handle_repr,
    .tp_methods = handle_methods,
    .tp_getset = handle_getset,
};

/* ---- module ---------------------------------------------------------------- */

static PyObject *
configure(PyObject *Py_UNUSED(module), PyObject *args)
{
    PyObject *closer, *error;
    if (!PyArg_ParseTuple(args, "OO:configure", &closer, &error)) {
        return NULL;
    }
    Py_INCREF(closer);
    Py_XSETREF(closer_callback, closer);
    Py_INCREF(error);
    Py_XSETREF(released_error, error);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(closer, released_error): the close scheduler and the error class."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef cref_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "pineapple.resource._cref",
    .m_doc = "Compiled RefValue and ResourceHandle (see _refvalue.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__cref(void)
{
    if (PyType_Ready(&RefValueType) < 0 || PyType_Ready(&HandleType) < 0) {
        return NULL;
    }
    PyObject *m = PyModule_Create(&cref_module);
    if (m == NULL) {
        return NULL;
    }
#ifdef Py_GIL_DISABLED
    /* Every shared field is updated with atomics: no need to re-enable the GIL. */
    PyUnstable_Module_SetGIL(m, Py_MOD_GIL_NOT_USED);
#endif
    if (PyModule_AddObjectRef(m, "RefValue", (PyObject *)&RefValueType) < 0 ||
        PyModule_AddObjectRef(m, "ResourceHandle", (PyObject *)&HandleType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
