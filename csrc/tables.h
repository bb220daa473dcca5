/* The flag bits, pattern kinds, the Encoder object and its vocabulary hash (part of native.c,
 * which includes it once). */
#ifndef TENSORTEXT_NATIVE_TABLES_H
#define TENSORTEXT_NATIVE_TABLES_H

/* Flag bits: tensortext.bpe.unicode's FLAG_PATTERNS order. */
enum {
    F_LETTER = 1,
    F_NUMBER = 2,
    F_SPACE = 4,
    F_UPPER = 8,   /* [\p{Lu}\p{Lt}] */
    F_LOWER = 16,  /* \p{Ll} */
    F_OTHER = 32,  /* [\p{Lm}\p{Lo}] */
    F_MARK = 64,   /* \p{M} */
    F_PUNCT_SYMBOL = 128, /* [\p{P}\p{S}] (DeepSeek-V3) */
};

/* Pattern kinds, as native.py passes them. */
enum {
    K_R50K,
    K_CL100K,
    K_CL100K_HF,
    K_LLAMA3,
    K_QWEN2,
    K_QWEN35,
    K_O200K,
    K_DEEPSEEK_V3,
    K_COUNT,
};

#define NO_RANK UINT32_MAX
#define SHORT_PIECE 256 /* longer pieces merge through the heap */

typedef struct {
    PyObject_HEAD
    int kind;
    PyObject *table_obj;    /* bytes, 0x110000 flag bytes */
    const uint8_t *table;
    uint8_t *blob;          /* every token's bytes back to back */
    uint32_t *offsets;      /* [n_tokens + 1] into blob */
    uint32_t *ids;          /* [n_tokens] */
    uint64_t *slots;        /* (hash tag << 32) | (token index + 1); 0 = empty */
    uint64_t mask;
    uint32_t max_len;
    uint32_t byte_id[256];
    int whole_piece;        /* look a piece up whole first (tiktoken; HF ignore_merges) */
    /* A merges list (Hugging Face): (left ID, right ID) -> (rank, merged ID). NULL: tiktoken's
     * rule, a pair merges when its bytes are a token, whose ID is the rank. */
    uint64_t *pair_keys;    /* (left << 32) | right; PAIR_EMPTY = empty */
    uint32_t *pair_values;  /* [2 * slots]: rank, merged ID */
    uint64_t pair_mask;
} Encoder;

#define PAIR_EMPTY UINT64_MAX /* IDs are below NO_RANK, so no pair's key */

/* ------------------------------------------------------------------ hashing */

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

static inline uint64_t hash_bytes(const uint8_t *s, size_t n) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xc2b2ae3d27d4eb4fULL);
    while (n >= 8) {
        uint64_t chunk;
        memcpy(&chunk, s, 8);
        h = (h ^ chunk) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    if (n) {
        uint64_t chunk = 0;
        memcpy(&chunk, s, n);
        h = (h ^ chunk) * 0x9e3779b97f4a7c15ULL;
    }
    return mix(h);
}

/* The slot of the merge of (left, right) in a merges list, or -1. */
static inline int64_t pair_slot(const Encoder *e, uint32_t left, uint32_t right) {
    uint64_t key = ((uint64_t)left << 32) | right;
    for (uint64_t slot = mix(key * 0x9e3779b97f4a7c15ULL) & e->pair_mask;;
         slot = (slot + 1) & e->pair_mask) {
        uint64_t k = e->pair_keys[slot];
        if (k == key) return (int64_t)slot;
        if (k == PAIR_EMPTY) return -1;
    }
}

/* The ID of the token spelled by s[0:n], or NO_RANK. */
static inline uint32_t lookup(const Encoder *e, const uint8_t *s, size_t n) {
    if (n == 1) return e->byte_id[s[0]];
    if (n > e->max_len) return NO_RANK;
    uint64_t h = hash_bytes(s, n);
    uint32_t tag = (uint32_t)(h >> 32);
    for (uint64_t slot = h & e->mask;; slot = (slot + 1) & e->mask) {
        uint64_t v = e->slots[slot];
        if (v == 0) return NO_RANK;
        if ((uint32_t)(v >> 32) != tag) continue;
        uint32_t index = (uint32_t)v - 1;
        uint32_t start = e->offsets[index];
        if (e->offsets[index + 1] - start == n && memcmp(e->blob + start, s, n) == 0)
            return e->ids[index];
    }
}

#endif
