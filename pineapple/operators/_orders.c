/* The orders the reorder operators answer, computed in C for the compiled core.
 *
 * float_order(values, descending) -> list[int] | None (reorder_sort):
 *     sorted(range(len(values)), key=values.__getitem__, reverse=descending)
 * when every value is a float that is not a NaN, or an int of at most 2**53 in
 * magnitude (converted to a double exactly, so every comparison is the one
 * Python makes); otherwise None, and the caller sorts.
 *
 * salted_order(state, values, head) -> list[int] | None (reorder_shuffle_by_salt,
 * reorder_topn_boost; see _salted_hash.py): each value's 64-bit FNV-1a hash
 * continued from state (the salt's prefix hashed), over 2**64, sorted
 * ascending, equal ranks in input order. head < 0: that whole order. head >= 0:
 * its first head items, then every other item in input order. None when a
 * value is neither a str nor an int of magnitude below 10**6 (hashed as its
 * decimal digits, as Go prints it), or when two ranks are equal: the caller's
 * own ranking, which breaks such ties by the values' numbers, answers then.
 *
 * How: the keys are read once into an array, split into runs already in order
 * (no key strictly ahead of the one before it), and the runs are merged in
 * pairs until one is left, an item of the right run going first only when its
 * key is strictly ahead: equal keys keep their input order, as sorted's do
 * (reverse=True too). Items usually come from a few recall lists each already
 * in score order, so there are few runs, and sorted's per-item key call (the
 * bulk of its cost) is never made. The ints of an order below CACHED_INTS are
 * shared objects, made once.
 *
 * Bounds: values must be a list. 40 bytes of scratch memory per value (freed
 * before returning); one pass to read the keys (a str's UTF-8 bytes once
 * each) and find the runs, then ceil(log2(runs)) merge passes of len(values)
 * steps each. No Python code runs while the list is read (the interpreter is
 * held throughout): the callers pass at most PIECE values.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

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

/* Scratch for n entries: two arrays (merges go back and forth) and the run
 * bounds; NULL (with MemoryError set) when it cannot be had. */
typedef struct {
    Entry *one, *two;
    Py_ssize_t *bounds;
} Scratch;

static int
scratch_get(Scratch *s, Py_ssize_t n)
{
    s->one = NULL;
    s->bounds = NULL;
    if ((size_t)n > PY_SSIZE_T_MAX / (2 * sizeof(Entry) + sizeof(Py_ssize_t)) - 1) {
        PyErr_NoMemory();
        return 0;
    }
    s->one = PyMem_Malloc((size_t)(n ? n : 1) * 2 * sizeof(Entry));
    s->bounds = PyMem_Malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    if (s->one == NULL || s->bounds == NULL) {
        PyMem_Free(s->one);
        PyMem_Free(s->bounds);
        PyErr_NoMemory();
        return 0;
    }
    s->two = s->one + n;
    return 1;
}

static void
scratch_free(Scratch *s)
{
    PyMem_Free(s->one);
    PyMem_Free(s->bounds);
}

/* Sort s->one[0:n] (keys read, at = input index) stably; returns the array
 * holding the result (s->one or s->two). */
static Entry *
sort_entries(Scratch *s, Py_ssize_t n, int descending)
{
    Py_ssize_t *bounds = s->bounds;
    Py_ssize_t runs = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i == 0 || ahead(s->one[i].key, s->one[i - 1].key, descending)) {
            bounds[runs++] = i; /* a run starts here */
        }
    }
    bounds[runs] = n;
    Entry *src = s->one, *dst = s->two;
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
    return src;
}

/* The list of the sorted entries' input indices: all of them (head < 0), or the
 * first head, then the others in input order (marks: n bytes of scratch). */
static PyObject *
order_list(const Entry *sorted, Py_ssize_t n, Py_ssize_t head)
{
    PyObject *order = PyList_New(n);
    if (order == NULL) {
        return NULL;
    }
    Py_ssize_t k = 0;
    if (head < 0 || head > n) {
        head = n;
    }
    for (; k < head; k++) {
        PyObject *at = index_object(sorted[k].at);
        if (at == NULL) {
            Py_DECREF(order);
            return NULL;
        }
        PyList_SET_ITEM(order, k, at);
    }
    if (head < n) {
        char *taken = PyMem_Calloc((size_t)n, 1);
        if (taken == NULL) {
            Py_DECREF(order);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t i = 0; i < head; i++) {
            taken[sorted[i].at] = 1;
        }
        for (Py_ssize_t i = 0; i < n; i++) { /* bounded: n, and k stays below n */
            if (taken[i]) {
                continue;
            }
            PyObject *at = index_object(i);
            if (at == NULL) {
                PyMem_Free(taken);
                Py_DECREF(order);
                return NULL;
            }
            PyList_SET_ITEM(order, k++, at);
        }
        PyMem_Free(taken);
    }
    return order;
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
    Scratch s;
    if (!scratch_get(&s, n)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!read_key(PyList_GET_ITEM(values, i), &s.one[i].key)) {
            scratch_free(&s);
            Py_RETURN_NONE;
        }
        s.one[i].at = i;
    }
    PyObject *order = order_list(sort_entries(&s, n, descending), n, -1);
    scratch_free(&s);
    return order;
}

#define FNV_PRIME 0x100000001B3ULL
#define DIGITS_BELOW 1000000LL

static inline uint64_t
fnv1a(uint64_t h, const unsigned char *data, Py_ssize_t len)
{
    for (Py_ssize_t i = 0; i < len; i++) {
        h = (h ^ data[i]) * FNV_PRIME;
    }
    return h;
}

/* The hash of one value continued from state; 0 when the value is not one
 * salted_order hashes itself (or its text cannot be had: the caller's
 * ranking raises the error). */
static int
salted_key(uint64_t state, PyObject *item, uint64_t *hash)
{
    if (PyUnicode_CheckExact(item)) {
        Py_ssize_t len;
        const char *text = PyUnicode_AsUTF8AndSize(item, &len);
        if (text == NULL) {
            PyErr_Clear();
            return 0;
        }
        *hash = fnv1a(state, (const unsigned char *)text, len);
        return 1;
    }
    if (PyLong_CheckExact(item)) { /* a bool is not an exact int */
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(item, &overflow);
        if (overflow || v <= -DIGITS_BELOW || v >= DIGITS_BELOW) {
            return 0; /* Go prints it in %g: the caller's ranking */
        }
        unsigned char digits[8];
        int len = 0;
        unsigned long long u = v < 0 ? (unsigned long long)-v : (unsigned long long)v;
        do {
            digits[len++] = (unsigned char)('0' + u % 10);
            u /= 10;
        } while (u); /* bounded: at most 6 digits below 10**6 */
        uint64_t h = state;
        if (v < 0) {
            h = (h ^ '-') * FNV_PRIME;
        }
        while (len) {
            h = (h ^ digits[--len]) * FNV_PRIME;
        }
        *hash = h;
        return 1;
    }
    return 0;
}

/* The head lowest keys of entries[0:n], in ascending order, into best[0:head]
 * (head < n, head <= MAX_PICKED); 1 when a key equal to one of them was seen
 * (equal ranks there are ordered by number: the caller's ranking). A key
 * above the head's last one is passed over at once. */
#define MAX_PICKED 64

static int
pick_lowest(const Entry *entries, Py_ssize_t n, Py_ssize_t head, Entry *best)
{
    Py_ssize_t kept = 0;
    if (head == 0) {
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i++) { /* bounded: n * MAX_PICKED steps */
        double key = entries[i].key;
        Py_ssize_t p;
        if (kept == head) {
            if (key > best[head - 1].key) {
                continue;
            }
            if (key == best[head - 1].key) {
                return 1;
            }
            p = head - 1; /* the last one goes */
        }
        else {
            p = kept++;
        }
        while (p > 0 && best[p - 1].key >= key) {
            if (best[p - 1].key == key) {
                return 1;
            }
            best[p] = best[p - 1];
            p--;
        }
        best[p] = entries[i];
    }
    return 0;
}

static PyObject *
salted_order(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyLong_CheckExact(args[0]) || !PyList_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "salted_order(state: int, values: list, head: int)");
        return NULL;
    }
    uint64_t state = PyLong_AsUnsignedLongLong(args[0]);
    Py_ssize_t head = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    PyObject *values = args[1];
    Py_ssize_t n = PyList_GET_SIZE(values);
    Scratch s;
    if (!scratch_get(&s, n)) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t hash;
        if (!salted_key(state, PyList_GET_ITEM(values, i), &hash)) {
            scratch_free(&s);
            Py_RETURN_NONE;
        }
        /* Rounded once to a double, as float(h) is; dividing by 2**64 is exact. */
        s.one[i].key = (double)hash / 18446744073709551616.0;
        s.one[i].at = i;
    }
    Entry *sorted;
    int tie = 0;
    if (head >= 0 && head < n && head <= MAX_PICKED) {
        sorted = s.two;
        tie = pick_lowest(s.one, n, head, sorted);
    }
    else {
        sorted = sort_entries(&s, n, 0);
        for (Py_ssize_t k = 1; k < n && !tie; k++) {
            tie = sorted[k].key == sorted[k - 1].key;
        }
    }
    if (tie) { /* ordered by number there: the caller's ranking */
        scratch_free(&s);
        Py_RETURN_NONE;
    }
    PyObject *order = order_list(sorted, n, head);
    scratch_free(&s);
    return order;
}

static PyMethodDef methods[] = {
    {"float_order", (PyCFunction)(void (*)(void))float_order, METH_FASTCALL,
     "float_order(values, descending) -> list[int] | None: sorted's stable order of "
     "a list of floats (no NaN) and exact ints; None for any other value."},
    {"salted_order", (PyCFunction)(void (*)(void))salted_order, METH_FASTCALL,
     "salted_order(state, values, head) -> list[int] | None: items by salted FNV-1a "
     "rank (all, or the first head then the rest in input order); None for other "
     "values or equal ranks."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "pineapple.operators._orders", NULL, -1, methods,
};

PyMODINIT_FUNC
PyInit__orders(void)
{
    return PyModule_Create(&module);
}
