/* Reading tiktoken's .tiktoken files ("BASE64 RANK" lines) in C, and the token views the lazy
 * Python vocabulary asks for (part of native.c, which includes it once). */
#ifndef TENSORTEXT_NATIVE_TIKTOKEN_FILE_H
#define TENSORTEXT_NATIVE_TIKTOKEN_FILE_H


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
    *blob = malloc(n / 4 * 3 + 3 + 8); /* 8: load_partial's word */
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
        uint64_t rank = 0;
        for (const uint8_t *d = space + 1; d < line + length; d++) {
            if (*d < '0' || *d > '9' || rank > ((uint64_t)1 << 31)) goto not_canonical;
            rank = rank * 10 + (uint64_t)(*d - '0');
        }
        if (rank >= ((uint64_t)1 << 31)) goto not_canonical;
        if (rank > max_rank) max_rank = (size_t)rank;
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

#endif
