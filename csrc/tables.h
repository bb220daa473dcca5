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
    K_TEKKEN,
    K_SP_PREFIX,
    K_SP_SUFFIX,
    K_WHOLE,
    K_COUNT,
};

#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH(p) __builtin_prefetch(p)
#define LOAD_RELAXED(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define STORE_RELAXED(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#else
#define PREFETCH(p) ((void)(p))
#define LOAD_RELAXED(p) (*(volatile uint8_t *)(p)) /* (bytes: never torn) */
#define STORE_RELAXED(p, v) (*(volatile uint8_t *)(p) = (v))
#endif

#define NO_RANK UINT32_MAX
#define SHORT_PIECE 256 /* longer pieces merge through the heap */

/* One token in the hash table: everything a lookup of up to 8 bytes reads, in one cache line
 * (16 bytes), so most lookups touch memory once. */
typedef struct {
    uint64_t head; /* the token's first 8 bytes, zero-padded (little-endian load) */
    uint32_t id;
    uint16_t len;  /* its length, or 0xFFFF from there on; 0: an empty slot */
    uint16_t tag;  /* the hash's top 16 bits */
} Slot;

typedef struct {
    PyObject_HEAD
    int kind;
    PyObject *table_obj;    /* bytes, 0x110000 flag bytes */
    const uint8_t *table;
    uint8_t *blob;          /* every token's bytes back to back */
    uint32_t *offsets;      /* [count + 1] into blob */
    uint32_t *ids;          /* [count] */
    size_t count;           /* tokens */
    size_t size;            /* the largest ID + 1 */
    uint32_t *id_index;     /* [size] the token index of each ID, or NO_RANK; NULL if sparse */
    PyObject **ints;        /* [size] the int of each ID, once a large call made them; or NULL */
    Slot *slots;            /* open addressing, linear probing, at most half full */
    uint32_t *slot_token;   /* [slots] the token index in `slot` (to read its bytes past 8) */
    uint64_t mask;
    uint32_t max_len;
    uint32_t byte_id[256];
    uint32_t *two_byte_id;  /* [65536] the ID of each 2-byte token (p[0] << 8 | p[1]), else NO_RANK */
    uint64_t *filter;       /* [FILTER_BITS / 64] bit (hash >> 40) of each token of 3 bytes or more:
                             * most lookups that find nothing (merge candidates) stop here, in
                             * cache, instead of reading the table */
    int whole_piece;        /* look a piece up whole first (tiktoken; HF ignore_merges) */
    /* SentencePiece: merges start from characters, not bytes (a merges list always). A
     * character that is no token becomes `fallback` of each of its bytes (byte fallback), or
     * `unk_id` once if that is not NO_RANK. byte_id holds the same for one-byte characters. */
    int char_units;
    uint32_t unk_id;
    int fuse_unk; /* a run of unk_id in a text's tokens becomes one (sentencepiece, HF fuse_unk) */
    uint32_t fallback[256];
    /* SentencePiece's rule, without a merges list: tiktoken's (a pair merges when its bytes
     * are a token) with the rank of token `id` in rank_by_id[id] (a place among the scores,
     * shared by pieces of one score), not the ID. NULL: the rank is the ID. */
    uint32_t *rank_by_id;
    /* SentencePiece, where no merge rule promises that a piece which is a token encodes as that
     * token: reaches[id] says whether the merges of token `id`'s own bytes end in it (REACHES),
     * do not (NOT_REACHED), or are not known yet (0: found out, and kept, at the first piece
     * that is this token). A piece that is a token which reaches itself is that token, exactly
     * as if merged. Threads may find out at once: they write the same value. */
    uint8_t *reaches;
    /* SentencePiece: cut_after[a] has bit b when no token holds a character of class a followed
     * by one of class b (piece_class), so a piece may be cut between them: no merge can join
     * the two sides. A piece is cut at each such place before it is looked up or merged. */
    uint8_t cut_after[8];
    /* A merges list (Hugging Face): (left ID, right ID) -> (rank, merged ID). NULL: tiktoken's
     * rule, a pair merges when its bytes are a token, whose ID is the rank. */
    uint64_t *pair_keys;    /* (left << 32) | right; PAIR_EMPTY = empty */
    uint32_t *pair_values;  /* [2 * slots]: rank, merged ID */
    uint64_t pair_mask;
} Encoder;

#define FILTER_BITS (1u << 21) /* 256 KB: a false positive for ~5% of cl100k's misses */

static inline uint64_t filter_bit(uint64_t h) {
    return (h >> 40) & (FILTER_BITS - 1);
}

#define PAIR_EMPTY UINT64_MAX /* IDs are below NO_RANK, so no pair's key */

/* ------------------------------------------------------------------ hashing */

static inline uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

/* Whether load_partial may read a whole word past a string's end (within its memory page, so
 * never a fault): on little-endian machines, where the string's bytes are the word's low ones,
 * and not under a sanitizer, which reports such reads. The tables pad their own buffers by 8
 * bytes; an ASCII str's data relies on the page. */
#if defined(__SANITIZE_ADDRESS__) || (defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__)
#define WORD_READS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define WORD_READS 0
#endif
#endif
#ifndef WORD_READS
#define WORD_READS 1
#endif

/* The first n bytes at s (n < 8) as a word in memory order, zero-padded. */
static inline uint64_t load_partial(const uint8_t *s, size_t n) {
    uint64_t chunk = 0;
    if (n == 0) return 0;
    if (WORD_READS && ((uintptr_t)s & 4095) <= 4096 - 8) {
        memcpy(&chunk, s, 8);
        return chunk & (~0ULL >> (64 - 8 * n));
    }
    memcpy(&chunk, s, n);
    return chunk;
}

/* The first min(n, 8) bytes at s as a word in memory order, zero-padded. */
static inline uint64_t load_head(const uint8_t *s, size_t n) {
    if (n < 8) return load_partial(s, n);
    uint64_t chunk;
    memcpy(&chunk, s, 8);
    return chunk;
}

/* The table's hash of s[0:n]; `head` is load_head(s, n). */
static inline uint64_t hash_with_head(const uint8_t *s, size_t n, uint64_t head) {
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (n * 0xc2b2ae3d27d4eb4fULL);
    if (n < 8) return n ? mix((h ^ head) * 0x9e3779b97f4a7c15ULL) : mix(h);
    h = (h ^ head) * 0x9e3779b97f4a7c15ULL;
    h ^= h >> 29;
    s += 8;
    n -= 8;
    while (n >= 8) {
        uint64_t chunk;
        memcpy(&chunk, s, 8);
        h = (h ^ chunk) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 29;
        s += 8;
        n -= 8;
    }
    if (n) h = (h ^ load_partial(s, n)) * 0x9e3779b97f4a7c15ULL;
    return mix(h);
}

static inline uint64_t hash_bytes(const uint8_t *s, size_t n) {
    return hash_with_head(s, n, load_head(s, n));
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

/* The ID of the token spelled by s[0:n] (n >= 3; head = load_head(s, n), h its hash), or
 * NO_RANK. A slot answers only once its bytes are
 * confirmed: the head and length for up to 8 bytes, and the rest from the blob past that (a
 * hash collision never gives a token). */
static inline uint32_t lookup_hashed(const Encoder *e, const uint8_t *s, size_t n, uint64_t head,
                                     uint64_t h) {
    if (n > e->max_len) return NO_RANK;
    uint16_t tag = (uint16_t)(h >> 48), len = n < 0xFFFF ? (uint16_t)n : 0xFFFF;
    for (uint64_t slot = h & e->mask;; slot = (slot + 1) & e->mask) {
        const Slot *x = &e->slots[slot];
        if (x->len == 0) return NO_RANK;
        if (x->len != len || x->tag != tag || x->head != head) continue;
        if (n <= 8) return x->id;
        uint32_t index = e->slot_token[slot], start = e->offsets[index];
        if (e->offsets[index + 1] - start == n && memcmp(e->blob + start + 8, s + 8, n - 8) == 0)
            return x->id;
    }
}

/* A string that is likely no token (a merge candidate), hashed once: candidate() hashes it and
 * starts loading its filter word, candidate_rank() looks it up, the filter first. */
typedef struct {
    const uint8_t *s;
    size_t n;
    uint64_t head, h; /* (n >= 3) */
} Candidate;

static inline Candidate candidate(const Encoder *e, const uint8_t *s, size_t n) {
    Candidate c = {s, n, 0, 0};
    if (n >= 3) {
        c.head = load_head(s, n);
        c.h = hash_with_head(s, n, c.head);
        PREFETCH(&e->filter[filter_bit(c.h) >> 6]);
    }
    return c;
}

static inline uint32_t candidate_rank(const Encoder *e, Candidate c) {
    if (c.n <= 2)
        return c.n == 1 ? e->byte_id[c.s[0]] : e->two_byte_id[(uint32_t)c.s[0] << 8 | c.s[1]];
    uint64_t bit = filter_bit(c.h);
    if (!(e->filter[bit >> 6] >> (bit & 63) & 1)) return NO_RANK;
    return lookup_hashed(e, c.s, c.n, c.head, c.h);
}

/* The ID of the token spelled by s[0:n] (likely none: the filter first), or NO_RANK. */
static inline uint32_t lookup(const Encoder *e, const uint8_t *s, size_t n) {
    return candidate_rank(e, candidate(e, s, n));
}

/* A piece, hashed once, with the slot where its lookup begins starting to load (the next
 * piece, while the one before it encodes). */
static inline Candidate upcoming_piece(const Encoder *e, const uint8_t *s, size_t n) {
    Candidate c = {s, n, 0, 0};
    if (n >= 3) {
        c.head = load_head(s, n);
        c.h = hash_with_head(s, n, c.head);
        if (n <= e->max_len) PREFETCH(&e->slots[c.h & e->mask]);
    }
    return c;
}

#endif
