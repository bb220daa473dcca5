/* tensortext.bpe._native: the host encoder's split and merges in C (optional; see native.py).
 *
 * One Encoder holds a BPE vocabulary, the Unicode class table of tensortext.bpe.unicode, and the
 * split rules of one pattern kind. The rules are those of pretokenize/rules.py (and splits.py
 * for DeepSeek-V3's sequence of three splits), taken one position at a time: for the piece
 * starting at i, each alternative of the regex in order says whether it matches and where it
 * ends, backtracking resolved analytically. ASCII text is split straight from its bytes; other
 * text from its codepoints and their class flags.
 *
 * The design is for memory, which bounds BPE on real text: most pieces are one token (92% of
 * cl100k_base's on mixed text), so the cost is the lookups, each a random read of a table of
 * megabytes. A lookup of up to 8 bytes reads one 16-byte slot holding the token's first 8 bytes,
 * length, 16 hash bits and ID, and confirms the bytes there (longer tokens: the rest from the
 * blob); 2-byte strings index a direct table; merge candidates, which are mostly not tokens,
 * first test a 256 KB filter; the next piece's slot is prefetched while a piece encodes; and a
 * call remembers the tokens of the pieces it merged (real text repeats them).
 *
 * Merges go lowest rank first, leftmost on ties: by tiktoken's rule (rank = ID; a pair merges
 * when its bytes are a token), a scan for short pieces, a heap over a linked list for long ones;
 * by a Hugging Face merges list ((left, right) -> (rank, merged), a second hash), the heap.
 * SentencePiece (merge.h): characters as the first parts, ranks from scores, fallback bytes.
 *
 * encode_many() and encode_flat() read the str objects with the GIL held, then release it for
 * all the work, so Python threads calling them encode on several cores. tables.h: flags, kinds,
 * the Encoder and its hash; merge.h: work buffers, the piece cache, the merges; build.h: the
 * tables built and freed; tiktoken_file.h: .tiktoken files read in C; split.h: the split rules
 * (compiled twice); this file: one text, and the Python type. setup.py builds it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"
#include "merge.h"
#include "build.h"
#include "tiktoken_file.h"
#define SPLIT_ASCII
#include "split.h" /* piece_end_ascii() and the rest, reading ASCII bytes */
#undef SPLIT_ASCII
#include "split.h" /* piece_end() and the rest, reading prepare()'s codepoints and flags */

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
    s->n = t->n;
    s->outer_end = 0;
    if (t->ascii) { /* the split reads the bytes and the class table */
        s->f = e->table;
        s->cp = NULL;
        s->ascii = (const uint8_t *)t->data;
        *bytes = s->ascii;
        return 0;
    }
    if (reserve_text(w, t->n, 4 * t->n)) return -1;
    uint8_t *u = w->utf8;
    size_t at = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint32_t c = read_cp(t, i);
        if (c >= 0xD800 && c <= 0xDFFF) c = 0xFFFD; /* a lone surrogate: U+FFFD, as tiktoken */
        w->cp[i] = c;
        w->flags[i] = e->table[c]; /* c < 0x110000: a str holds no more */
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
    w->boff[t->n] = (uint32_t)at;
    s->f = w->flags;
    s->cp = w->cp;
    s->ascii = NULL;
    *bytes = u;
    return 0;
}

/* The end of the piece that starts at i. */
static inline size_t next_piece_end(Seg *s, size_t i, int kind) {
    return s->ascii ? piece_end_ascii(s, i, kind) : piece_end(s, i, kind);
}

static void encode_text(const Encoder *e, const Text *t, Work *w) {
    Seg s;
    const uint8_t *bytes;
    size_t first = w->out_len;
    if (prepare(e, t, w, &s, &bytes)) {
        w->failed = 1;
        return;
    }
    /* Each piece is hashed, and its slot starts loading, while the piece before it encodes. */
    size_t end = s.n ? next_piece_end(&s, 0, e->kind) : 0;
    Candidate piece = upcoming_piece(e, bytes, t->ascii ? end : w->boff[end]);
    for (size_t i = 0; i < s.n && !w->failed;) {
        size_t next = end < s.n ? next_piece_end(&s, end, e->kind) : end;
        Candidate after = piece;
        if (next > end) {
            size_t b = t->ascii ? end : w->boff[end], c = t->ascii ? next : w->boff[next];
            after = upcoming_piece(e, bytes + b, c - b);
        }
        encode_piece(e, piece, w);
        piece = after;
        i = end;
        end = next;
    }
    if (e->fuse_unk && !w->failed) fuse_unknown(e, w, first);
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

/* The int object of every ID below self->size, made once (GIL held) for a call that returns a
 * large batch as lists: the lists then share them instead of allocating an int per token (the
 * lists cost a third of a batch's time otherwise). NULL (no error) if that fails. */
static PyObject **int_objects(Encoder *self) {
    if (self->ints || self->size > (1u << 24)) return self->ints;
    PyObject **ints = PyMem_Calloc(self->size, sizeof(PyObject *));
    for (size_t k = 0; ints && k < self->size; k++)
        if (!(ints[k] = PyLong_FromSize_t(k))) {
            while (k--) Py_DECREF(ints[k]);
            PyMem_Free(ints);
            ints = NULL;
            PyErr_Clear();
        }
    return self->ints = ints;
}

/* tokens[start:end] as a list of int (sharing `ints`, the int of each ID below `size`, if
 * given). */
static PyObject *token_list(const uint32_t *tokens, size_t start, size_t end, PyObject **ints,
                            size_t size) {
    PyObject *list = PyList_New((Py_ssize_t)(end - start));
    if (!list) return NULL;
    for (size_t k = 0; k < end - start; k++) {
        uint32_t id = tokens[start + k];
        PyObject *v = ints && id < size ? Py_NewRef(ints[id]) : PyLong_FromUnsignedLong(id);
        if (!v) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)k, v);
    }
    return list;
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

#define SHARED_INTS_FROM (1u << 16) /* tokens in one call from which the ints are made */

/* The rows as a list of lists of int. */
static PyObject *as_lists(Encoder *self, const Work *w, const size_t *ends, Py_ssize_t count) {
    PyObject **ints = w->out_len >= SHARED_INTS_FROM ? int_objects(self) : self->ints;
    PyObject *result = PyList_New(count);
    for (Py_ssize_t k = 0; result && k < count; k++) {
        PyObject *row = token_list(w->out, k ? ends[k - 1] : 0, ends[k], ints, self->size);
        if (!row) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, k, row);
    }
    return result;
}

/* The rows as (tokens: bytearray of native-endian uint32, lengths: bytearray of int64), which
 * numpy wraps without a copy, writable. */
static PyObject *as_flat(Encoder *self, const Work *w, const size_t *ends, Py_ssize_t count) {
    (void)self;
    PyObject *lengths = PyByteArray_FromStringAndSize(NULL, count * 8);
    if (!lengths) return NULL;
    char *out = PyByteArray_AS_STRING(lengths);
    for (Py_ssize_t k = 0; k < count; k++) {
        int64_t length = (int64_t)(ends[k] - (k ? ends[k - 1] : 0));
        memcpy(out + 8 * k, &length, 8);
    }
    PyObject *tokens =
        PyByteArray_FromStringAndSize((const char *)w->out, (Py_ssize_t)w->out_len * 4);
    PyObject *result = tokens ? PyTuple_Pack(2, tokens, lengths) : NULL;
    Py_XDECREF(tokens);
    Py_DECREF(lengths);
    return result;
}

/* encode_list, then `convert` of its rows. */
static PyObject *encode_into(Encoder *self, PyObject *texts,
                             PyObject *(*convert)(Encoder *, const Work *, const size_t *,
                                                  Py_ssize_t)) {
    Work w = {0};
    size_t *ends = NULL;
    Py_ssize_t count = 0;
    PyObject *result = NULL;
    if (encode_list(self, texts, &w, &ends, &count) == 0) result = convert(self, &w, ends, count);
    work_free(&w);
    PyMem_Free(ends);
    return result;
}

/* encode_many(texts: list[str]) -> list[list[int]]. */
static PyObject *Encoder_encode_many(Encoder *self, PyObject *texts) {
    return encode_into(self, texts, as_lists);
}

/* encode_flat(texts: list[str]) -> (tokens: bytearray, lengths: bytearray): every text's tokens
 * back to back as native-endian uint32, and each text's count as int64. */
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
        size_t end = next_piece_end(&s, i, self->kind);
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
    encode_piece(self,
                 upcoming_piece(self, (const uint8_t *)PyBytes_AS_STRING(piece),
                                (size_t)PyBytes_GET_SIZE(piece)),
                 &w);
    PyObject *out = w.failed ? PyErr_NoMemory() : token_list(w.out, 0, w.out_len, NULL, 0);
    work_free(&w);
    return out;
}

/* ranks() -> dict[bytes, int]: every token's ID (a .tiktoken file's mergeable ranks). */
static PyObject *Encoder_ranks(Encoder *self, PyObject *unused) {
    (void)unused;
    if (check_ready(self)) return NULL;
    return ranks_dict(self);
}

/* tokens_by_id(size: int) -> list[bytes | None]: the bytes of token ID k at k, None where no
 * token has that ID. */
static PyObject *Encoder_tokens_by_id(Encoder *self, PyObject *size_obj) {
    if (check_ready(self)) return NULL;
    Py_ssize_t size = PyLong_AsSsize_t(size_obj);
    if (size < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "size: 0 or more");
        return NULL;
    }
    PyObject *list = PyList_New(size);
    if (!list) return NULL;
    for (Py_ssize_t k = 0; k < size; k++) PyList_SET_ITEM(list, k, Py_NewRef(Py_None));
    for (size_t k = 0; k < self->count; k++) {
        if (self->ids[k] >= (size_t)size) continue;
        PyObject *token = PyBytes_FromStringAndSize((const char *)self->blob + self->offsets[k],
                                                    self->offsets[k + 1] - self->offsets[k]);
        if (!token) {
            Py_DECREF(list);
            return NULL;
        }
        Py_SETREF(PyList_GET_ITEM(list, self->ids[k]), token);
    }
    return list;
}

/* token_bytes(id: int) -> bytes | None: the bytes of the token with that ID. */
static PyObject *Encoder_token_bytes(Encoder *self, PyObject *id_obj) {
    if (check_ready(self)) return NULL;
    Py_ssize_t id = PyLong_AsSsize_t(id_obj);
    if (id == -1 && PyErr_Occurred()) return NULL;
    if (id < 0 || (size_t)id >= self->size) Py_RETURN_NONE;
    size_t k = self->id_index ? self->id_index[id] : NO_RANK;
    for (size_t j = 0; !self->id_index && j < self->count; j++)
        if (self->ids[j] == (uint32_t)id) k = j;
    if (k == NO_RANK) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)self->blob + self->offsets[k],
                                     self->offsets[k + 1] - self->offsets[k]);
}

/* counts() -> (count, size): how many tokens, and the largest ID + 1. */
static PyObject *Encoder_counts(Encoder *self, PyObject *unused) {
    (void)unused;
    if (check_ready(self)) return NULL;
    return Py_BuildValue("(nn)", (Py_ssize_t)self->count, (Py_ssize_t)self->size);
}

static PyMethodDef Encoder_methods[] = {
    {"token_bytes", (PyCFunction)Encoder_token_bytes, METH_O,
     "token_bytes(id: int) -> bytes | None: the bytes of the token with that ID."},
    {"counts", (PyCFunction)Encoder_counts, METH_NOARGS,
     "counts() -> (int, int): how many tokens, and the largest ID + 1."},
    {"ranks", (PyCFunction)Encoder_ranks, METH_NOARGS,
     "ranks() -> dict[bytes, int]: every token's ID."},
    {"tokens_by_id", (PyCFunction)Encoder_tokens_by_id, METH_O,
     "tokens_by_id(size: int) -> list[bytes | None]: token k's bytes at k (None: no token)."},
    {"encode_many", (PyCFunction)Encoder_encode_many, METH_O,
     "encode_many(texts: list[str]) -> list[list[int]]: the tokens of ordinary segments."},
    {"encode_flat", (PyCFunction)Encoder_encode_flat, METH_O,
     "encode_flat(texts: list[str]) -> (bytearray, bytearray): uint32 tokens back to back, "
     "int64 lengths."},
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

/* from_tiktoken(data: bytes, table: bytes, kind: int) -> Encoder | None: the Encoder of a
 * .tiktoken file's bytes (tiktoken's rule: a token's rank is its ID), without a Python object per
 * token; None where the file is not canonical (see parse_tiktoken), a token repeats or a byte
 * is missing (the Python reader then names the line). */
static PyObject *module_from_tiktoken(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *data, *table;
    int kind;
    if (!PyArg_ParseTuple(args, "O!O!i", &PyBytes_Type, &data, &PyBytes_Type, &table, &kind))
        return NULL;
    Encoder *self = (Encoder *)PyType_GenericNew(&EncoderType, NULL, NULL);
    if (!self) return NULL;
    int status = parse_tiktoken((const uint8_t *)PyBytes_AS_STRING(data),
                                (size_t)PyBytes_GET_SIZE(data), &self->blob, &self->offsets,
                                &self->ids, &self->count);
    if (status == 0 && self->count == 0) status = 1; /* no tokens: the slow path says so */
    if (status == 0) { /* the parsed blob, offsets and ids stay; dealloc frees all on failure */
        status = allocate_tables(self, self->count, self->offsets[self->count]);
        if (status == 0 && index_tokens(self)) { /* a repeated token, a missing byte: not canonical */
            status = PyErr_ExceptionMatches(PyExc_ValueError) ? 1 : -1;
            if (status == 1) PyErr_Clear();
        }
        if (status == 0) status = set_rules(self, table, kind, Py_None, 1);
    }
    if (status == 0) return (PyObject *)self;
    Py_DECREF(self);
    return status < 0 ? NULL : Py_NewRef(Py_None);
}

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
    {"from_tiktoken", (PyCFunction)module_from_tiktoken, METH_VARARGS,
     "from_tiktoken(data: bytes, table: bytes, kind: int) -> Encoder | None: the Encoder of a "
     ".tiktoken file, or None where it is not in the canonical form."},
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
