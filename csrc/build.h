/* The Encoder's tables: built from Python lists or a parsed file, checked, and freed (part of
 * native.c, which includes it once). */
#ifndef TENSORTEXT_NATIVE_BUILD_H
#define TENSORTEXT_NATIVE_BUILD_H

static void Encoder_dealloc(Encoder *self) {
    Py_XDECREF(self->table_obj);
    free(self->blob);
    free(self->offsets);
    free(self->ids);
    free(self->id_index);
    if (self->ints) {
        for (size_t k = 0; k < self->size; k++) Py_XDECREF(self->ints[k]);
        PyMem_Free(self->ints);
    }
    free(self->slots);
    free(self->slot_token);
    free(self->two_byte_id);
    free(self->rank_by_id);
    free(self->reaches);
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

/* Allocates the tables of `count` tokens of `total` bytes (self->blob, offsets and ids, unless
 * already there, to be filled by the caller). -1 with an exception set. */
static int allocate_tables(Encoder *self, size_t count, size_t total) {
    if (count == 0 || count >= (1 << 30) || total >= UINT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "tokens: 1 to 2**30 - 1 of them, under 4 GB in all");
        return -1;
    }
    size_t slots = 1;
    while (slots < 2 * count) slots *= 2;
    self->count = count;
    if (!self->blob) self->blob = malloc(total + 8); /* 8: load_partial's word */
    if (!self->offsets) self->offsets = malloc((count + 1) * 4);
    if (!self->ids) self->ids = malloc(count * 4);
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
    self->size = 0;
    for (size_t k = 0; k < self->count; k++)
        if (self->ids[k] >= self->size) self->size = (size_t)self->ids[k] + 1;
    /* An index by ID where IDs are dense, as vocab.id_bound keeps them: never 16 GB for a few
     * tokens with IDs near 2**32 (token_bytes then searches). */
    if (self->size <= 4 * self->count + ((size_t)1 << 20)) {
        self->id_index = malloc(self->size * 4);
        if (!self->id_index) {
            PyErr_NoMemory();
            return -1;
        }
        memset(self->id_index, 0xFF, self->size * 4); /* NO_RANK */
        for (size_t k = 0; k < self->count; k++) self->id_index[self->ids[k]] = (uint32_t)k;
    }
    if (self->char_units) return 0; /* set_units fills the bytes that are no token */
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
          self->two_byte_id || self->filter || self->id_index || self->pair_keys))
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

/* SentencePiece's units: `unknown` holds 258 uint32s: the ID of each byte of a character that
 * is no token (NO_RANK where there is no byte fallback), the unknown token's ID (NO_RANK with
 * byte fallback), and 1 to fuse a run of unknown tokens into one. -1 with an exception set. */
static int set_units(Encoder *self, PyObject *unknown) {
    if (!PyBytes_Check(unknown) || PyBytes_GET_SIZE(unknown) != 258 * 4) {
        PyErr_SetString(PyExc_TypeError, "unknown: bytes of 258 uint32s");
        return -1;
    }
    uint32_t values[258];
    memcpy(values, PyBytes_AS_STRING(unknown), sizeof values);
    self->unk_id = values[256];
    self->fuse_unk = values[257] == 1;
    for (int b = 0; b < 256; b++) {
        if (values[b] == NO_RANK && self->unk_id == NO_RANK) {
            PyErr_Format(PyExc_ValueError, "unknown: byte %d has no ID and there is no unk", b);
            return -1;
        }
        self->fallback[b] = values[b] == NO_RANK ? self->unk_id : values[b];
        if (self->byte_id[b] == NO_RANK) self->byte_id[b] = self->fallback[b];
    }
    return 0;
}

/* rank_by_id from `ranks`, uint32s in the order of the tokens; -1 with an exception set. */
static int set_ranks(Encoder *self, PyObject *ranks) {
    if (!PyBytes_Check(ranks) || (size_t)PyBytes_GET_SIZE(ranks) != 4 * self->count) {
        PyErr_SetString(PyExc_TypeError, "ranks: bytes of one uint32 per token");
        return -1;
    }
    self->rank_by_id = malloc(self->size * 4);
    if (!self->rank_by_id) {
        PyErr_NoMemory();
        return -1;
    }
    memset(self->rank_by_id, 0xFF, self->size * 4);
    const uint8_t *data = (const uint8_t *)PyBytes_AS_STRING(ranks);
    for (size_t k = 0; k < self->count; k++) {
        uint32_t rank;
        memcpy(&rank, data + 4 * k, 4);
        self->rank_by_id[self->ids[k]] = rank;
    }
    return 0;
}

/* Encoder(tokens: list[bytes], ids: list[int], table: bytes, kind: int, merges: bytes | None =
 * None, whole_piece: bool = True, unknown: bytes | None = None, ranks: bytes | None = None);
 * `unknown`: SentencePiece's characters as units (set_units), with a merges list or `ranks`
 * (set_ranks). */
static int Encoder_init(Encoder *self, PyObject *args, PyObject *kwds) {
    PyObject *tokens, *ids, *table, *merges = Py_None, *unknown = Py_None, *ranks = Py_None;
    int kind, whole_piece = 1;
    static char *names[] = {"tokens", "ids",     "table", "kind", "merges",
                            "whole_piece", "unknown", "ranks", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!i|OpOO", names, &PyList_Type, &tokens,
                                     &PyList_Type, &ids, &PyBytes_Type, &table, &kind, &merges,
                                     &whole_piece, &unknown, &ranks))
        return -1;
    if (unknown != Py_None && (merges == Py_None) == (ranks == Py_None)) {
        PyErr_SetString(PyExc_ValueError, "unknown: characters need a merges list or ranks");
        return -1;
    }
    if (ranks != Py_None && unknown == Py_None) {
        PyErr_SetString(PyExc_ValueError, "ranks: only with unknown (SentencePiece)");
        return -1;
    }
    self->char_units = unknown != Py_None;
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
    if (self->char_units && set_units(self, unknown)) return -1;
    if (self->char_units && !(self->reaches = calloc(self->size, 1))) {
        PyErr_NoMemory();
        return -1;
    }
    if (ranks != Py_None && (!self->id_index || set_ranks(self, ranks))) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "ranks: IDs too sparse");
        return -1;
    }
    if (set_rules(self, table, kind, merges, whole_piece)) return -1;
    if (self->char_units) find_cuts(self);
    return 0;
}

#endif
