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
    if (prepare(e, t, w, &s, &bytes)) {
        w->failed = 1;
        return;
    }
    /* Each piece's slot is prefetched while the piece before it encodes. */
    size_t end = s.n ? next_piece_end(&s, 0, e->kind) : 0;
    for (size_t i = 0; i < s.n && !w->failed;) {
        size_t next = end < s.n ? next_piece_end(&s, end, e->kind) : end;
        size_t a = t->ascii ? i : w->boff[i], b = t->ascii ? end : w->boff[end];
        if (next > end) {
            size_t c = t->ascii ? next : w->boff[next];
            prefetch_lookup(e, bytes + b, c - b);
        }
        encode_piece(e, bytes + a, b - a, w);
        i = end;
        end = next;
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
    free(self->slot_token);
    free(self->two_byte_id);
    free(self->filter);
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

/* Allocates the tables of `count` tokens of `total` bytes (self->blob, offsets and ids to be
 * filled by the caller). -1 with an exception set. */
static int allocate_tables(Encoder *self, size_t count, size_t total) {
    if (count == 0 || count >= (1 << 30) || total >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "tokens: 1 to 2**30 - 1 of them, under 4 GB in all");
        return -1;
    }
    size_t slots = 1;
    while (slots < 2 * count) slots *= 2;
    self->count = count;
    self->blob = malloc(total ? total : 1);
    self->offsets = malloc((count + 1) * 4);
    self->ids = malloc(count * 4);
    self->slots = calloc(slots, sizeof(Slot));
    self->slot_token = malloc(slots * 4);
    self->two_byte_id = malloc(65536 * 4);
    self->filter = calloc(FILTER_BITS / 64, 8);
    if (!self->blob || !self->offsets || !self->ids || !self->slots || !self->slot_token ||
        !self->two_byte_id || !self->filter) {
        PyErr_NoMemory();
        return -1;
    }
    self->mask = slots - 1;
    return 0;
}

/* Files every token (blob, offsets and ids filled) in the hash table, the byte tables and the
 * filter. -1 with an exception set: an empty or repeated token, an ID of 2**32 - 1, a missing
 * byte. */
static int index_tokens(Encoder *self) {
    self->max_len = 0;
    for (int b = 0; b < 256; b++) self->byte_id[b] = NO_RANK;
    for (int b = 0; b < 65536; b++) self->two_byte_id[b] = NO_RANK;
    for (size_t k = 0; k < self->count; k++) {
        const uint8_t *s = self->blob + self->offsets[k];
        size_t n = self->offsets[k + 1] - self->offsets[k];
        uint32_t id = self->ids[k];
        if (n == 0 || id == NO_RANK) {
            PyErr_Format(PyExc_ValueError, "token %zu: empty, or its ID is 2**32 - 1", k);
            return -1;
        }
        if (n > self->max_len) self->max_len = (uint32_t)n;
        if (n == 1) self->byte_id[s[0]] = id;
        if (n == 2) self->two_byte_id[(uint32_t)s[0] << 8 | s[1]] = id;
        uint64_t h = hash_bytes(s, n);
        uint64_t slot = h & self->mask;
        for (; self->slots[slot].len; slot = (slot + 1) & self->mask) {
            uint32_t other = self->slot_token[slot];
            uint32_t start = self->offsets[other], length = self->offsets[other + 1] - start;
            if (length == n && memcmp(self->blob + start, s, n) == 0) {
                PyErr_Format(PyExc_ValueError, "tokens: the bytes of token %zu repeat", k);
                return -1;
            }
        }
        Slot *x = &self->slots[slot];
        x->head = load_head(s, n);
        x->id = id;
        x->len = n < 0xFFFF ? (uint16_t)n : 0xFFFF;
        x->tag = (uint16_t)(h >> 48);
        self->slot_token[slot] = (uint32_t)k;
        uint64_t bit = filter_bit(h);
        self->filter[bit >> 6] |= 1ULL << (bit & 63);
    }
    for (int b = 0; b < 256; b++)
        if (self->byte_id[b] == NO_RANK) {
            PyErr_Format(PyExc_ValueError, "byte %d is not a token (byte-level BPE needs all 256)",
                         b);
            return -1;
        }
    return 0;
}

static int already_initialized(const Encoder *self) {
    if (!(self->blob || self->offsets || self->ids || self->slots || self->slot_token ||
          self->two_byte_id || self->filter || self->pair_keys))
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "an Encoder is initialized once");
    return 1;
}

/* The split kind, class table and merge rule; -1 with an exception set. */
static int set_rules(Encoder *self, PyObject *table, int kind, PyObject *merges, int whole_piece) {
    if (!PyBytes_Check(table) || PyBytes_GET_SIZE(table) != 0x110000 || kind < 0 ||
        kind >= K_COUNT) {
        PyErr_SetString(PyExc_ValueError, "table: 0x110000 flag bytes; kind: a known kind");
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
    if (already_initialized(self)) return -1;
    Py_ssize_t count = PyList_GET_SIZE(tokens);
    if (PyList_GET_SIZE(ids) != count || count == 0) {
        PyErr_SetString(PyExc_ValueError, "tokens and ids: two lists of the same nonzero length");
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
    if (allocate_tables(self, (size_t)count, total)) return -1;
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
        memcpy(self->blob + at, PyBytes_AS_STRING(token), n);
        self->offsets[k] = (uint32_t)at;
        self->ids[k] = (uint32_t)id;
        at += n;
    }
    self->offsets[count] = (uint32_t)at;
    if (index_tokens(self)) return -1;
    return set_rules(self, table, kind, merges, whole_piece);
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
    encode_piece(self, (const uint8_t *)PyBytes_AS_STRING(piece),
                 (size_t)PyBytes_GET_SIZE(piece), &w);
    PyObject *out = w.failed ? PyErr_NoMemory() : token_list(w.out, 0, w.out_len);
    work_free(&w);
    return out;
}

static PyObject *ranks_dict(const Encoder *e);

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

static PyMethodDef Encoder_methods[] = {
    {"ranks", (PyCFunction)Encoder_ranks, METH_NOARGS,
     "ranks() -> dict[bytes, int]: every token's ID."},
    {"tokens_by_id", (PyCFunction)Encoder_tokens_by_id, METH_O,
     "tokens_by_id(size: int) -> list[bytes | None]: token k's bytes at k (None: no token)."},
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

/* ------------------------------------------------------------------ reading .tiktoken files */

static int8_t base64_value(uint8_t c) {
    if (c >= 'A' && c <= 'Z') return (int8_t)(c - 'A');
    if (c >= 'a' && c <= 'z') return (int8_t)(c - 'a' + 26);
    if (c >= '0' && c <= '9') return (int8_t)(c - '0' + 52);
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Decodes canonical base64 (length a multiple of 4, '=' only as the last one or two) into out;
 * the length, or -1. */
static Py_ssize_t decode_base64(const uint8_t *s, size_t n, uint8_t *out) {
    if (n == 0 || n % 4) return -1;
    size_t pad = s[n - 1] == '=' ? (s[n - 2] == '=' ? 2 : 1) : 0;
    Py_ssize_t length = 0;
    for (size_t k = 0; k < n; k += 4) {
        int8_t v[4];
        for (int j = 0; j < 4; j++) {
            int last = k + 4 == n && j >= 4 - (int)pad;
            v[j] = last ? 0 : base64_value(s[k + j]);
            if (v[j] < 0) return -1;
        }
        uint32_t word = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | v[3];
        size_t take = k + 4 == n ? 3 - pad : 3;
        for (size_t j = 0; j < take; j++) out[length++] = (uint8_t)(word >> (16 - 8 * j));
    }
    return length;
}

/* The tokens of a .tiktoken file's lines "BASE64 RANK\n" ("\r\n" too, blank lines skipped) into
 * *blob, *offsets and *ids (malloc'd; free them) and *count. 1 where a line is not so, a token is
 * empty, or a rank repeats or passes 2**31 (the caller's slow path then names the line); -1 with
 * an exception set. */
static int parse_tiktoken(const uint8_t *p, size_t n, uint8_t **blob, uint32_t **offsets,
                          uint32_t **ids, size_t *count) {
    size_t lines = 1, max_rank = 0, at_blob = 0, k = 0;
    for (const uint8_t *q = p; (q = memchr(q, '\n', (size_t)(p + n - q))); q++) lines++;
    uint8_t *seen = NULL;
    *blob = malloc(n / 4 * 3 + 3);
    *offsets = malloc((lines + 1) * 4);
    *ids = malloc(lines * 4);
    int status = -1;
    if (!*blob || !*offsets || !*ids) goto no_memory;
    for (size_t at = 0; at < n;) {
        const uint8_t *line = p + at, *end = memchr(line, '\n', n - at);
        size_t length = end ? (size_t)(end - line) : n - at;
        at += length + (end != NULL);
        if (length && line[length - 1] == '\r') length--;
        if (length == 0) continue;
        const uint8_t *space = memchr(line, ' ', length);
        if (!space || space == line || space + 1 == line + length) goto not_canonical;
        Py_ssize_t size = decode_base64(line, (size_t)(space - line), *blob + at_blob);
        if (size <= 0) goto not_canonical;
        size_t rank = 0;
        for (const uint8_t *d = space + 1; d < line + length; d++) {
            if (*d < '0' || *d > '9' || rank > ((size_t)1 << 31)) goto not_canonical;
            rank = rank * 10 + (size_t)(*d - '0');
        }
        if (rank >= ((size_t)1 << 31)) goto not_canonical;
        if (rank > max_rank) max_rank = rank;
        (*offsets)[k] = (uint32_t)at_blob;
        (*ids)[k++] = (uint32_t)rank;
        at_blob += (size_t)size;
    }
    (*offsets)[k] = (uint32_t)at_blob;
    *count = k;
    seen = calloc(max_rank / 8 + 1, 1);
    if (!seen) goto no_memory;
    for (size_t j = 0; j < k; j++) {
        uint32_t rank = (*ids)[j];
        if (seen[rank / 8] >> (rank % 8) & 1) goto not_canonical;
        seen[rank / 8] |= (uint8_t)(1 << (rank % 8));
    }
    free(seen);
    return 0;
no_memory:
    PyErr_NoMemory();
    goto done;
not_canonical:
    status = 1;
done:
    free(seen);
    free(*blob);
    free(*offsets);
    free(*ids);
    *blob = NULL;
    *offsets = NULL;
    *ids = NULL;
    return status;
}

/* {token bytes: ID} of an Encoder's tokens. */
static PyObject *ranks_dict(const Encoder *e) {
    PyObject *ranks = _PyDict_NewPresized((Py_ssize_t)e->count);
    for (size_t k = 0; ranks && k < e->count; k++) {
        PyObject *key = PyBytes_FromStringAndSize((const char *)e->blob + e->offsets[k],
                                                  e->offsets[k + 1] - e->offsets[k]);
        PyObject *value = key ? PyLong_FromUnsignedLong(e->ids[k]) : NULL;
        if (!value || PyDict_SetItem(ranks, key, value)) Py_CLEAR(ranks);
        Py_XDECREF(key);
        Py_XDECREF(value);
    }
    return ranks;
}

/* read_tiktoken(data: bytes) -> dict[bytes, int] | None: a .tiktoken file's ranks, or None where
 * it is not canonical (see parse_tiktoken) or a token repeats. The fast path of
 * vocab.read_tiktoken_file. */
static PyObject *module_read_tiktoken(PyObject *module, PyObject *data) {
    (void)module;
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, "data: bytes");
        return NULL;
    }
    Encoder e = {0};
    int status = parse_tiktoken((const uint8_t *)PyBytes_AS_STRING(data),
                                (size_t)PyBytes_GET_SIZE(data), &e.blob, &e.offsets, &e.ids,
                                &e.count);
    if (status) return status < 0 ? NULL : Py_NewRef(Py_None);
    PyObject *ranks = ranks_dict(&e);
    if (ranks && PyDict_GET_SIZE(ranks) != (Py_ssize_t)e.count) Py_SETREF(ranks, Py_NewRef(Py_None));
    free(e.blob);
    free(e.offsets);
    free(e.ids);
    return ranks;
}

/* from_tiktoken(data: bytes, table: bytes, kind: int) -> Encoder | None: the Encoder of a
 * .tiktoken file's bytes (tiktoken's rule: a token's rank is its ID), without a Python object per
 * token; None where read_tiktoken would give None. */
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
    if (status == 0) {
        size_t count = self->count, total = self->offsets[count];
        uint8_t *blob = self->blob;
        uint32_t *offsets = self->offsets, *ids = self->ids;
        self->blob = NULL;
        self->offsets = NULL;
        self->ids = NULL;
        status = allocate_tables(self, count, total);
        if (status == 0) { /* the parsed arrays replace the allocated ones */
            free(self->blob);
            free(self->offsets);
            free(self->ids);
        } else {
            free(blob);
            free(offsets);
            free(ids);
            blob = NULL;
            offsets = NULL;
            ids = NULL;
        }
        self->blob = blob;
        self->offsets = offsets;
        self->ids = ids;
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
    {"read_tiktoken", (PyCFunction)module_read_tiktoken, METH_O,
     "read_tiktoken(data: bytes) -> dict[bytes, int] | None: a .tiktoken file's ranks, or None "
     "where it is not in the canonical form."},
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
