/* tensortext.bpe._native: the host encoder's split and merges in C (optional; see native.py).
 *
 * One Encoder holds a byte-level BPE vocabulary in an open-addressing hash table, the Unicode
 * class table of tensortext.bpe.unicode, and the split rules of one pattern kind. The rules are
 * those of pretokenize/rules.py (and splits.py for DeepSeek-V3's sequence of three splits),
 * taken one position at a time: for the piece starting at i, each alternative of the regex in
 * order says whether it matches and where it ends, backtracking resolved analytically.
 *
 * Merges go lowest rank first, leftmost on ties. By tiktoken's rule (rank = ID; a pair merges
 * when its bytes are a token): a scan of the pair ranks for short pieces, a heap over a linked
 * list for long ones (the same order, O(n log n)). By a Hugging Face merges list ((left ID,
 * right ID) -> (rank, merged ID), in a second hash): the heap.
 *
 * encode_many() reads the str objects with the GIL held, then releases it for all the work,
 * so Python threads calling it encode on several cores.
 *
 * tables.h: flags, kinds, the Encoder and its hash; split.h: the split rules; merge.h: work
 * buffers and the merges; this file: one text, and the Python type. setup.py builds it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"
#include "merge.h"
#include "split.h"

/* ------------------------------------------------------------------ one text */

typedef struct {
    int kind; /* PyUnicode kind */
    const void *data;
    size_t n;
    int ascii;
} Text;

static inline uint32_t read_cp(const Text *t, size_t i) {
    switch (t->kind) {
    case PyUnicode_1BYTE_KIND: return ((const uint8_t *)t->data)[i];
    case PyUnicode_2BYTE_KIND: return ((const uint16_t *)t->data)[i];
    default: return ((const uint32_t *)t->data)[i];
    }
}

/* Codepoints, flags, and (unless ASCII) UTF-8 with each codepoint's byte offset. */
static int prepare(const Encoder *e, const Text *t, Work *w, Seg *s, const uint8_t **bytes) {
    if (reserve_text(w, t->n, t->ascii ? 0 : 4 * t->n)) return -1;
    uint8_t *u = w->utf8;
    size_t at = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint32_t c = read_cp(t, i);
        if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD; /* a lone surrogate: U+FFFD, as tiktoken */
        w->cp[i] = c;
        w->flags[i] = e->table[c]; /* c < 0x110000: a str holds no more */
        if (t->ascii) continue;
        w->boff[i] = (uint32_t)at;
        if (c < 0x80) {
            u[at++] = (uint8_t)c;
        } else if (c < 0x800) {
            u[at++] = (uint8_t)(0xC0 | (c >> 6));
            u[at++] = (uint8_t)(0x80 | (c & 0x3F));
        } else if (c < 0x10000) {
            u[at++] = (uint8_t)(0xE0 | (c >> 12));
            u[at++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            u[at++] = (uint8_t)(0x80 | (c & 0x3F));
        } else {
            u[at++] = (uint8_t)(0xF0 | (c >> 18));
            u[at++] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
            u[at++] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
            u[at++] = (uint8_t)(0x80 | (c & 0x3F));
        }
    }
    if (!t->ascii) w->boff[t->n] = (uint32_t)at;
    s->f = w->flags;
    s->cp = w->cp;
    s->n = t->n;
    s->outer_end = 0;
    *bytes = t->ascii ? (const uint8_t *)t->data : u;
    return 0;
}

static void encode_text(const Encoder *e, const Text *t, Work *w) {
    Seg s;
    const uint8_t *bytes;
    if (prepare(e, t, w, &s, &bytes)) {
        w->failed = 1;
        return;
    }
    for (size_t i = 0; i < s.n && !w->failed;) {
        size_t end = piece_end(&s, i, e->kind);
        size_t a = t->ascii ? i : w->boff[i], b = t->ascii ? end : w->boff[end];
        encode_piece(e, bytes + a, b - a, w);
        i = end;
    }
}

/* ------------------------------------------------------------------ Python glue */

static int read_text(PyObject *obj, Text *t) {
    if (!PyUnicode_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.100s", Py_TYPE(obj)->tp_name);
        return -1;
    }
#if PY_VERSION_HEX < 0x030C0000
    if (PyUnicode_READY(obj) < 0) return -1;
#endif
    t->kind = PyUnicode_KIND(obj);
    t->data = PyUnicode_DATA(obj);
    t->n = (size_t)PyUnicode_GET_LENGTH(obj);
    t->ascii = PyUnicode_IS_ASCII(obj);
    if (t->n >= UINT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "a segment of 2**30 characters or more");
        return -1;
    }
    return 0;
}

/* tokens[start:end] as a list of int. */
static PyObject *token_list(const uint32_t *tokens, size_t start, size_t end) {
    PyObject *list = PyList_New((Py_ssize_t)(end - start));
    if (!list) return NULL;
    for (size_t k = 0; k < end - start; k++) {
        PyObject *v = PyLong_FromUnsignedLong(tokens[start + k]);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, v);
    }
    return list;
}

static void Encoder_dealloc(Encoder *self) {
    Py_XDECREF(self->table_obj);
    free(self->blob);
    free(self->offsets);
    free(self->ids);
    free(self->slots);
    free(self->pair_keys);
    free(self->pair_values);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The pair table of a merges list: `merges` holds (left, right, rank, merged) uint32 quads.
 * -1 with an exception set. */
static int build_pairs(Encoder *self, PyObject *merges) {
    if (!PyBytes_Check(merges) || PyBytes_GET_SIZE(merges) % 16) {
        PyErr_SetString(PyExc_TypeError, "merges: bytes of (left, right, rank, merged) uint32s");
        return -1;
    }
    size_t count = (size_t)PyBytes_GET_SIZE(merges) / 16, slots = 1;
    while (slots < 2 * count + 2) slots *= 2;
    self->pair_keys = malloc(slots * 8);
    self->pair_values = malloc(slots * 8);
    if (!self->pair_keys || !self->pair_values) {
        PyErr_NoMemory();
        return -1;
    }
    memset(self->pair_keys, 0xFF, slots * 8); /* PAIR_EMPTY */
    self->pair_mask = slots - 1;
    const char *data = PyBytes_AS_STRING(merges);
    for (size_t k = 0; k < count; k++) {
        uint32_t quad[4];
        memcpy(quad, data + 16 * k, 16);
        if (quad[0] >= NO_RANK || quad[1] >= NO_RANK || quad[2] >= NO_RANK || quad[3] >= NO_RANK) {
            PyErr_Format(PyExc_ValueError, "merges: entry %zu holds 2**32 - 1", k);
            return -1;
        }
        if (pair_slot(self, quad[0], quad[1]) >= 0) {
            PyErr_Format(PyExc_ValueError, "merges: the pair of entry %zu repeats", k);
            return -1;
        }
        uint64_t key = ((uint64_t)quad[0] << 32) | quad[1];
        uint64_t slot = mix(key * 0x9e3779b97f4a7c15ULL) & self->pair_mask;
        while (self->pair_keys[slot] != PAIR_EMPTY) slot = (slot + 1) & self->pair_mask;
        self->pair_keys[slot] = key;
        self->pair_values[2 * slot] = quad[2];
        self->pair_values[2 * slot + 1] = quad[3];
    }
    return 0;
}

/* Encoder(tokens: list[bytes], ids: list[int], table: bytes, kind: int, merges: bytes | None =
 * None, whole_piece: bool = True) */
static int Encoder_init(Encoder *self, PyObject *args, PyObject *kwds) {
    PyObject *tokens, *ids, *table, *merges = Py_None;
    int kind, whole_piece = 1;
    static char *names[] = {"tokens", "ids", "table", "kind", "merges", "whole_piece", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!i|Op", names, &PyList_Type, &tokens,
                                     &PyList_Type, &ids, &PyBytes_Type, &table, &kind, &merges,
                                     &whole_piece))
        return -1;
    /* Once only: another thread may be encoding with the tables (the GIL released). */
    if (self->blob || self->offsets || self->ids || self->slots || self->pair_keys) {
        PyErr_SetString(PyExc_RuntimeError, "an Encoder is initialized once");
        return -1;
    }
    Py_ssize_t count = PyList_GET_SIZE(tokens);
    if (PyList_GET_SIZE(ids) != count || count == 0 || count >= (1 << 30)) {
        PyErr_SetString(PyExc_ValueError, "tokens and ids: two lists of the same nonzero length");
        return -1;
    }
    if (PyBytes_GET_SIZE(table) != 0x110000 || kind < 0 || kind >= K_COUNT) {
        PyErr_SetString(PyExc_ValueError, "table: 0x110000 flag bytes; kind: a known kind");
        return -1;
    }
    size_t total = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *token = PyList_GET_ITEM(tokens, k);
        if (!PyBytes_Check(token) || PyBytes_GET_SIZE(token) == 0) {
            PyErr_SetString(PyExc_TypeError, "tokens: nonempty bytes");
            return -1;
        }
        total += (size_t)PyBytes_GET_SIZE(token);
    }
    if (total >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "tokens: 4 GB of bytes or more");
        return -1;
    }
    size_t slots = 1;
    while (slots < 2 * (size_t)count) slots *= 2;
    self->blob = malloc(total);
    self->offsets = malloc(((size_t)count + 1) * 4);
    self->ids = malloc((size_t)count * 4);
    self->slots = calloc(slots, 8);
    if (!self->blob || !self->offsets || !self->ids || !self->slots) {
        PyErr_NoMemory();
        return -1;
    }
    self->mask = slots - 1;
    self->max_len = 0;
    for (int b = 0; b < 256; b++) self->byte_id[b] = NO_RANK;
    size_t at = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *token = PyList_GET_ITEM(tokens, k);
        size_t n = (size_t)PyBytes_GET_SIZE(token);
        unsigned long id = PyLong_AsUnsignedLong(PyList_GET_ITEM(ids, k));
        if (id == (unsigned long)-1 && PyErr_Occurred()) return -1;
        if (id >= NO_RANK) {
            PyErr_SetString(PyExc_ValueError, "ids: below 2**32 - 1");
            return -1;
        }
        const uint8_t *s = (const uint8_t *)PyBytes_AS_STRING(token);
        memcpy(self->blob + at, s, n);
        self->offsets[k] = (uint32_t)at;
        self->ids[k] = (uint32_t)id;
        at += n;
        if (n > self->max_len) self->max_len = (uint32_t)n;
        if (n == 1) self->byte_id[s[0]] = (uint32_t)id;
        uint64_t h = hash_bytes(s, n);
        uint64_t slot = h & self->mask;
        for (; self->slots[slot]; slot = (slot + 1) & self->mask) {
            uint32_t other = (uint32_t)self->slots[slot] - 1;
            uint32_t start = self->offsets[other], length = self->offsets[other + 1] - start;
            if (length == n && memcmp(self->blob + start, s, n) == 0) {
                PyErr_Format(PyExc_ValueError, "tokens: the bytes of token %zd repeat", k);
                return -1;
            }
        }
        self->slots[slot] = (h >> 32 << 32) | (uint64_t)(k + 1);
    }
    self->offsets[count] = (uint32_t)at;
    for (int b = 0; b < 256; b++)
        if (self->byte_id[b] == NO_RANK) {
            PyErr_Format(PyExc_ValueError, "byte %d is not a token (byte-level BPE needs all 256)",
                         b);
            return -1;
        }
    if (merges != Py_None && build_pairs(self, merges)) return -1;
    self->whole_piece = whole_piece;
    Py_INCREF(table);
    self->table_obj = table;
    self->table = (const uint8_t *)PyBytes_AS_STRING(table);
    self->kind = kind;
    return 0;
}

/* 0 if `self` was initialized; else -1 with an exception set. */
static int check_ready(const Encoder *self) {
    if (self->table) return 0;
    PyErr_SetString(PyExc_RuntimeError, "Encoder used before a successful __init__");
    return -1;
}

/* Encodes every str of the list `texts` into w->out, the GIL released while encoding;
 * (*ends)[k] is where text k's tokens end (PyMem_Free it). -1 with an exception set. */
static int encode_list(Encoder *self, PyObject *texts, Work *w, size_t **ends,
                       Py_ssize_t *count) {
    if (check_ready(self)) return -1;
    if (!PyList_Check(texts)) {
        PyErr_SetString(PyExc_TypeError, "texts: a list of str");
        return -1;
    }
    *count = PyList_GET_SIZE(texts);
    Text *items = PyMem_Calloc((size_t)*count + 1, sizeof(Text));
    *ends = PyMem_Calloc((size_t)*count + 1, sizeof(size_t));
    /* Hold the list (and so its str objects) while the GIL is released. */
    PyObject *held = items && *ends ? PyList_GetSlice(texts, 0, *count) : NULL;
    int status = -1;
    if (!items || !*ends) PyErr_NoMemory();
    if (!held) goto done;
    for (Py_ssize_t k = 0; k < *count; k++)
        if (read_text(PyList_GET_ITEM(held, k), &items[k])) goto done;
    size_t *out_ends = *ends;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < *count && !w->failed; k++) {
        encode_text(self, &items[k], w);
        out_ends[k] = w->out_len;
    }
    Py_END_ALLOW_THREADS
    if (w->failed)
        PyErr_NoMemory();
    else
        status = 0;
done:
    Py_XDECREF(held);
    PyMem_Free(items);
    return status;
}

/* The rows as a list of lists of int. */
static PyObject *as_lists(const Work *w, const size_t *ends, Py_ssize_t count) {
    PyObject *result = PyList_New(count);
    for (Py_ssize_t k = 0; result && k < count; k++) {
        PyObject *row = token_list(w->out, k ? ends[k - 1] : 0, ends[k]);
        if (!row) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, k, row);
    }
    return result;
}

/* The rows as (tokens: bytes of native-endian uint32, lengths: bytes of int64). */
static PyObject *as_flat(const Work *w, const size_t *ends, Py_ssize_t count) {
    PyObject *lengths = PyBytes_FromStringAndSize(NULL, count * 8);
    if (!lengths) return NULL;
    char *out = PyBytes_AS_STRING(lengths);
    for (Py_ssize_t k = 0; k < count; k++) {
        int64_t length = (int64_t)(ends[k] - (k ? ends[k - 1] : 0));
        memcpy(out + 8 * k, &length, 8);
    }
    PyObject *tokens = PyBytes_FromStringAndSize((const char *)w->out, (Py_ssize_t)w->out_len * 4);
    PyObject *result = tokens ? PyTuple_Pack(2, tokens, lengths) : NULL;
    Py_XDECREF(tokens);
    Py_DECREF(lengths);
    return result;
}

/* encode_list, then `convert` of its rows. */
static PyObject *encode_into(Encoder *self, PyObject *texts,
                             PyObject *(*convert)(const Work *, const size_t *, Py_ssize_t)) {
    Work w = {0};
    size_t *ends = NULL;
    Py_ssize_t count = 0;
    PyObject *result = NULL;
    if (encode_list(self, texts, &w, &ends, &count) == 0) result = convert(&w, ends, count);
    work_free(&w);
    PyMem_Free(ends);
    return result;
}

/* encode_many(texts: list[str]) -> list[list[int]]. */
static PyObject *Encoder_encode_many(Encoder *self, PyObject *texts) {
    return encode_into(self, texts, as_lists);
}

/* encode_flat(texts: list[str]) -> (tokens: bytes, lengths: bytes): every text's tokens back to
 * back as native-endian uint32, and each text's count as int64. */
static PyObject *Encoder_encode_flat(Encoder *self, PyObject *texts) {
    return encode_into(self, texts, as_flat);
}

/* split(text: str) -> list[str]: the pieces (for tests). */
static PyObject *Encoder_split(Encoder *self, PyObject *text) {
    if (check_ready(self)) return NULL;
    Text t;
    if (read_text(text, &t)) return NULL;
    Work w = {0};
    Seg s;
    const uint8_t *bytes;
    PyObject *out = NULL;
    if (prepare(self, &t, &w, &s, &bytes)) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(out = PyList_New(0))) goto done;
    for (size_t i = 0; i < s.n;) {
        size_t end = piece_end(&s, i, self->kind);
        PyObject *piece = PyUnicode_Substring(text, (Py_ssize_t)i, (Py_ssize_t)end);
        if (!piece || PyList_Append(out, piece)) {
            Py_XDECREF(piece);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(piece);
        i = end;
    }
done:
    work_free(&w);
    return out;
}

/* encode_bytes(piece: bytes) -> list[int]: the merges of one piece (for tests). */
static PyObject *Encoder_encode_piece(Encoder *self, PyObject *piece) {
    if (check_ready(self)) return NULL;
    if (!PyBytes_Check(piece) || PyBytes_GET_SIZE(piece) == 0) {
        PyErr_SetString(PyExc_TypeError, "piece: nonempty bytes");
        return NULL;
    }
    if ((size_t)PyBytes_GET_SIZE(piece) >= UINT32_MAX / 4) {
        PyErr_SetString(PyExc_ValueError, "piece: 2**30 bytes or more");
        return NULL;
    }
    Work w = {0};
    encode_piece(self, (const uint8_t *)PyBytes_AS_STRING(piece),
                 (size_t)PyBytes_GET_SIZE(piece), &w);
    PyObject *out = w.failed ? PyErr_NoMemory() : token_list(w.out, 0, w.out_len);
    work_free(&w);
    return out;
}

static PyMethodDef Encoder_methods[] = {
    {"encode_many", (PyCFunction)Encoder_encode_many, METH_O,
     "encode_many(texts: list[str]) -> list[list[int]]: the tokens of ordinary segments."},
    {"encode_flat", (PyCFunction)Encoder_encode_flat, METH_O,
     "encode_flat(texts: list[str]) -> (bytes, bytes): uint32 tokens back to back, int64 "
     "lengths."},
    {"split", (PyCFunction)Encoder_split, METH_O, "split(text: str) -> list[str]: the pieces."},
    {"encode_piece", (PyCFunction)Encoder_encode_piece, METH_O,
     "encode_piece(piece: bytes) -> list[int]: one piece's merges."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tensortext.bpe._native.Encoder",
    .tp_basicsize = sizeof(Encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A byte-level BPE vocabulary (tiktoken's rule or a merges list), a Unicode class "
              "table and a split kind.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Encoder_init,
    .tp_dealloc = (destructor)Encoder_dealloc,
    .tp_methods = Encoder_methods,
};

/* token_hash(token: bytes) -> int: the 64-bit hash the vocabulary table files a token under
 * (for tests, which build strings whose hash collides with a token's). */
static PyObject *module_token_hash(PyObject *module, PyObject *token) {
    (void)module;
    if (!PyBytes_Check(token)) {
        PyErr_SetString(PyExc_TypeError, "token: bytes");
        return NULL;
    }
    return PyLong_FromUnsignedLongLong(
        hash_bytes((const uint8_t *)PyBytes_AS_STRING(token), (size_t)PyBytes_GET_SIZE(token)));
}

static PyMethodDef module_methods[] = {
    {"token_hash", (PyCFunction)module_token_hash, METH_O,
     "token_hash(token: bytes) -> int: the 64-bit hash of the vocabulary table."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "tensortext.bpe._native", "The host encoder's hot loop in C.", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (PyType_Ready(&EncoderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EncoderType);
    if (PyModule_AddObject(m, "Encoder", (PyObject *)&EncoderType) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
