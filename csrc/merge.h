/* Growable work buffers and the merges of one piece (part of native.c, which includes it
 * once). */
#ifndef TENSORTEXT_NATIVE_MERGE_H
#define TENSORTEXT_NATIVE_MERGE_H

/* ------------------------------------------------------------------ growable buffers */

/* Real text repeats the pieces that are not one token (identifiers, rare words, numbers), so a
 * work buffer remembers the tokens of the last pieces it merged, by hash: a direct-mapped table
 * of 64-byte entries, checked byte for byte. It is allocated after CACHE_AFTER merges, so a short
 * call never pays for it. */
#define CACHE_SIZE 2048
#define CACHE_BYTES 22  /* the longest piece kept */
#define CACHE_TOKENS 8  /* the most tokens kept */
#define CACHE_AFTER 32

typedef struct CacheEntry {
    uint64_t hash;
    uint8_t len; /* 0: empty */
    uint8_t count;
    uint8_t bytes[CACHE_BYTES];
    uint32_t tokens[CACHE_TOKENS];
} CacheEntry;

typedef struct {
    uint8_t *flags;   /* [n] class flags of each codepoint */
    uint32_t *cp;     /* [n] codepoints */
    uint32_t *boff;   /* [n + 1] byte offset of each codepoint in utf8 */
    uint8_t *utf8;    /* the segment's UTF-8 */
    size_t cap_cp, cap_utf8;
    uint32_t *starts, *ranks, *next, *prev;  /* merge scratch */
    uint64_t *heap;
    uint32_t *heap_end;
    size_t cap_merge;
    struct CacheEntry *cache; /* [CACHE_SIZE] the merges of recent pieces, once worth it */
    size_t merged;    /* pieces merged so far */
    uint32_t *out;    /* the tokens of every text so far */
    size_t out_len, out_cap;
    int failed;       /* out of memory */
} Work;

static int grow(void **p, size_t *cap, size_t need, size_t size) {
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap : 64;
    while (cap2 < need) cap2 *= 2;
    if (cap2 > SIZE_MAX / size) return -1; /* (32-bit builds) */
    void *q = realloc(*p, cap2 * size);
    if (!q) return -1;
    *p = q;
    *cap = cap2;
    return 0;
}

static int reserve_text(Work *w, size_t n, size_t n_utf8) {
    size_t cap = w->cap_cp;
    if (n + 1 > cap) {
        size_t c1 = cap, c2 = cap, c3 = cap;
        if (grow((void **)&w->flags, &c1, n + 1, 1) || grow((void **)&w->cp, &c2, n + 1, 4) ||
            grow((void **)&w->boff, &c3, n + 1, 4))
            return -1;
        w->cap_cp = c1 < c2 ? (c1 < c3 ? c1 : c3) : (c2 < c3 ? c2 : c3);
    }
    return grow((void **)&w->utf8, &w->cap_utf8, n_utf8 + 8, 1); /* 8: load_partial's word */
}

static int reserve_merge(Work *w, size_t n) {
    if (n + 2 <= w->cap_merge) return 0;
    size_t need = n + 2, cap = w->cap_merge ? w->cap_merge : 64;
    while (cap < need) cap *= 2;
    if (cap > SIZE_MAX / 24) return -1; /* the heap's 3 * cap * 8 bytes (32-bit builds) */
    void *a = realloc(w->starts, cap * 4), *b = a ? realloc(w->ranks, cap * 4) : NULL;
    if (a) w->starts = a;
    if (b) w->ranks = b;
    void *c = b ? realloc(w->next, cap * 4) : NULL;
    if (c) w->next = c;
    void *d = c ? realloc(w->prev, cap * 4) : NULL;
    if (d) w->prev = d;
    /* Lazy deletion: n - 1 pairs at first, then at most two more per merge. */
    void *h = d ? realloc(w->heap, 3 * cap * 8) : NULL;
    if (h) w->heap = h;
    void *he = h ? realloc(w->heap_end, 3 * cap * 4) : NULL;
    if (he) w->heap_end = he;
    if (!he) return -1;
    w->cap_merge = cap;
    return 0;
}

static inline int emit(Work *w, uint32_t token) {
    if (w->out_len == w->out_cap && grow((void **)&w->out, &w->out_cap, w->out_len + 1, 4)) {
        w->failed = 1;
        return -1;
    }
    w->out[w->out_len++] = token;
    return 0;
}

static void work_free(Work *w) {
    free(w->flags);
    free(w->cp);
    free(w->boff);
    free(w->utf8);
    free(w->starts);
    free(w->ranks);
    free(w->next);
    free(w->prev);
    free(w->heap);
    free(w->heap_end);
    free(w->out);
    free(w->cache);
}

/* A run of the unknown token among out[first..] becomes one (Encoder.fuse_unk). */
static void fuse_unknown(const Encoder *e, Work *w, size_t first) {
    size_t kept = first;
    for (size_t k = first; k < w->out_len; k++)
        if (!(w->out[k] == e->unk_id && kept > first && w->out[kept - 1] == e->unk_id))
            w->out[kept++] = w->out[k];
    w->out_len = kept;
}

/* ------------------------------------------------------------------ merges */

/* tiktoken's byte_pair_merge for a short piece: scan the pair ranks for the lowest. Part k spans
 * st[k]..st[k+1] and is token id[k]; rk[k] is the rank of parts k and k + 1 merged. */
static void merge_short(const Encoder *e, const uint8_t *p, size_t n, Work *w) {
    uint32_t *st = w->starts, *rk = w->ranks, *id = w->next;
    size_t m = n + 1; /* part boundaries */
    for (size_t k = 0; k < m; k++) st[k] = (uint32_t)k;
    for (size_t k = 0; k < n; k++) id[k] = e->byte_id[p[k]];
    for (size_t k = 0; k + 2 < m; k++) rk[k] = lookup(e, p + k, 2);
    rk[m - 2] = rk[m - 1] = NO_RANK;
    for (;;) {
        uint32_t best = NO_RANK;
        size_t at = 0;
        for (size_t k = 0; k + 2 < m; k++)
            if (rk[k] < best) {
                best = rk[k];
                at = k;
            }
        if (best == NO_RANK) break;
        memmove(st + at + 1, st + at + 2, (m - at - 2) * 4);
        memmove(rk + at + 1, rk + at + 2, (m - at - 2) * 4);
        memmove(id + at + 1, id + at + 2, (m - at - 2) * 4);
        m--;
        id[at] = best; /* tiktoken's rule: the rank is the ID */
        /* The two new candidates are independent: hash both and start loading both before
         * either lookup. */
        int right = at + 2 < m;
        Candidate next = candidate(e, p + st[at], right ? st[at + 2] - st[at] : 0);
        Candidate before = candidate(e, p + (at ? st[at - 1] : 0), at ? st[at + 1] - st[at - 1] : 0);
        rk[at] = right ? candidate_rank(e, next) : NO_RANK;
        if (at > 0) rk[at - 1] = candidate_rank(e, before);
    }
    for (size_t k = 0; k + 1 < m; k++) emit(w, id[k]);
}

/* The heap holds (rank << 32 | start) of candidate pairs; heap_end[] the pair's end. A popped
 * entry is current if its start still begins a part and the pair still ends there (parts only
 * grow, so the same end means the same two parts). */
static inline void heap_push(Work *w, size_t *len, uint64_t key, uint32_t end) {
    size_t k = (*len)++;
    while (k > 0) {
        size_t parent = (k - 1) / 2;
        if (w->heap[parent] <= key) break;
        w->heap[k] = w->heap[parent];
        w->heap_end[k] = w->heap_end[parent];
        k = parent;
    }
    w->heap[k] = key;
    w->heap_end[k] = end;
}

static inline void heap_pop(Work *w, size_t *len) {
    uint64_t key = w->heap[--*len];
    uint32_t end = w->heap_end[*len];
    size_t k = 0;
    for (;;) {
        size_t child = 2 * k + 1;
        if (child >= *len) break;
        if (child + 1 < *len && w->heap[child + 1] < w->heap[child]) child++;
        if (key <= w->heap[child]) break;
        w->heap[k] = w->heap[child];
        w->heap_end[k] = w->heap_end[child];
        k = child;
    }
    w->heap[k] = key;
    w->heap_end[k] = end;
}

#define DEAD UINT32_MAX

/* The rank of the pair of parts from `start` (tiktoken: of its bytes; a merges list: of its two
 * IDs), or NO_RANK. */
static inline uint32_t pair_rank(const Encoder *e, const uint8_t *p, const Work *w,
                                 uint32_t start, uint32_t mid, uint32_t end) {
    if (!e->pair_keys) {
        uint32_t id = lookup(e, p + start, end - start);
        return id == NO_RANK || !e->rank_by_id ? id : e->rank_by_id[id];
    }
    int64_t slot = pair_slot(e, w->ranks[start], w->ranks[mid]);
    return slot < 0 ? NO_RANK : e->pair_values[2 * slot];
}

static inline void push_pair(const Encoder *e, const uint8_t *p, size_t n, Work *w, size_t *len,
                             uint32_t start) {
    uint32_t mid = w->next[start];
    if (mid >= n || w->ranks[start] == NO_RANK || w->ranks[mid] == NO_RANK) return;
    uint32_t end = w->next[mid]; /* (NO_RANK: a character that is no token never merges) */
    uint32_t rank = pair_rank(e, p, w, start, mid, end);
    if (rank != NO_RANK) heap_push(w, len, ((uint64_t)rank << 32) | start, end);
}

/* The bytes of the UTF-8 character that starts p[0..n) (n >= 1; the text is valid UTF-8, and
 * the count never passes n). */
static inline size_t char_length(const uint8_t *p, size_t n) {
    size_t len = p[0] < 0xC0 ? 1 : p[0] < 0xE0 ? 2 : p[0] < 0xF0 ? 3 : 4;
    return len < n ? len : n;
}

/* SentencePiece's first parts: one per character, its token or NO_RANK. */
static void char_parts(const Encoder *e, const uint8_t *p, size_t n, Work *w) {
    uint32_t *next = w->next, *prev = w->prev, *id = w->ranks, last = DEAD;
    for (size_t k = 0; k < n;) {
        size_t len = char_length(p + k, n - k);
        next[k] = (uint32_t)(k + len);
        prev[k] = last;
        id[k] = len == 1 ? e->byte_id[p[k]] : lookup(e, p + k, len);
        last = (uint32_t)k;
        k += len;
    }
}

/* The tokens of the part p[0..n) whose token is `id`: it, or for a character that is no token
 * (NO_RANK), its bytes' fallback tokens or the unknown token once. */
static void emit_part(const Encoder *e, uint32_t id, const uint8_t *p, size_t n, Work *w) {
    if (id != NO_RANK) {
        emit(w, id);
    } else if (e->unk_id != NO_RANK) {
        emit(w, e->unk_id);
    } else {
        for (size_t k = 0; k < n; k++) emit(w, e->fallback[p[k]]);
    }
}

/* The same merges for a long piece, and every merge of a merges list or from characters: a
 * heap of pairs over a linked list of parts. */
static void merge_long(const Encoder *e, const uint8_t *p, size_t n, Work *w) {
    uint32_t *next = w->next, *prev = w->prev, *id = w->ranks;
    size_t len = 0;
    if (e->char_units) {
        char_parts(e, p, n, w);
        for (uint32_t k = 0; k < n; k = next[k]) push_pair(e, p, n, w, &len, k);
    } else {
        for (size_t k = 0; k < n; k++) {
            next[k] = (uint32_t)(k + 1);
            prev[k] = k ? (uint32_t)(k - 1) : DEAD;
            id[k] = e->byte_id[p[k]];
        }
        for (size_t k = 0; k + 1 < n; k++) push_pair(e, p, n, w, &len, (uint32_t)k);
    }
    while (len) {
        uint64_t key = w->heap[0];
        uint32_t end = w->heap_end[0];
        heap_pop(w, &len);
        uint32_t start = (uint32_t)key;
        if (prev[start] == DEAD && start != 0) continue; /* absorbed by its left neighbour */
        uint32_t mid = next[start];
        if (mid >= n || next[mid] != end) continue;      /* stale */
        if (e->pair_keys)
            id[start] = e->pair_values[2 * pair_slot(e, id[start], id[mid]) + 1];
        else if (e->rank_by_id)
            id[start] = lookup(e, p + start, end - start); /* (ranks are shared) */
        else
            id[start] = (uint32_t)(key >> 32); /* tiktoken: the rank is the ID */
        next[start] = end;
        if (end < n) prev[end] = start;
        prev[mid] = DEAD;
        if (start > 0) push_pair(e, p, n, w, &len, prev[start]);
        push_pair(e, p, n, w, &len, start);
    }
    for (uint32_t k = 0; k < n; k = next[k]) emit_part(e, id[k], p + k, next[k] - k, w);
}

/* The rank of the part p[0..n) as SentencePiece's rule ranks it (rank_by_id), or NO_RANK. */
static inline uint32_t piece_rank(const Encoder *e, const uint8_t *p, size_t n) {
    uint32_t id = lookup(e, p, n);
    return id == NO_RANK ? NO_RANK : e->rank_by_id[id];
}

/* merge_short for SentencePiece's rule (rank_by_id): the parts start as characters, a merged
 * part's token is looked up (ranks are shared), and a character that is no token is emitted as
 * its fallback. */
static void merge_short_chars(const Encoder *e, const uint8_t *p, size_t n, Work *w) {
    uint32_t *st = w->starts, *rk = w->ranks, *id = w->next;
    size_t m = 0; /* part boundaries */
    for (size_t k = 0; k < n; m++) {
        size_t len = char_length(p + k, n - k);
        st[m] = (uint32_t)k;
        id[m] = len == 1 ? e->byte_id[p[k]] : lookup(e, p + k, len);
        k += len;
    }
    st[m++] = (uint32_t)n;
    for (size_t k = 0; k + 2 < m; k++) rk[k] = piece_rank(e, p + st[k], st[k + 2] - st[k]);
    rk[m - 2] = rk[m - 1] = NO_RANK;
    for (;;) {
        uint32_t best = NO_RANK;
        size_t at = 0;
        for (size_t k = 0; k + 2 < m; k++)
            if (rk[k] < best) { /* the leftmost of the lowest rank */
                best = rk[k];
                at = k;
            }
        if (best == NO_RANK) break;
        id[at] = lookup(e, p + st[at], st[at + 2] - st[at]);
        memmove(st + at + 1, st + at + 2, (m - at - 2) * 4);
        memmove(rk + at + 1, rk + at + 2, (m - at - 2) * 4);
        memmove(id + at + 1, id + at + 2, (m - at - 2) * 4);
        m--;
        rk[at] = at + 2 < m ? piece_rank(e, p + st[at], st[at + 2] - st[at]) : NO_RANK;
        if (at > 0) rk[at - 1] = piece_rank(e, p + st[at - 1], st[at + 1] - st[at - 1]);
    }
    for (size_t k = 0; k + 1 < m; k++) emit_part(e, id[k], p + st[k], st[k + 1] - st[k], w);
}

static void merge_piece(const Encoder *e, const uint8_t *p, size_t n, Work *w) {
    if (reserve_merge(w, n)) {
        w->failed = 1;
        return;
    }
    if (n <= SHORT_PIECE && !e->pair_keys)
        (e->char_units ? merge_short_chars : merge_short)(e, p, n, w);
    else
        merge_long(e, p, n, w);
}

enum { REACHES = 1, NOT_REACHED = 2 }; /* Encoder.reaches */

/* The class of a character for Encoder.cut_after: U+0020, other whitespace, number, letter,
 * mark, punctuation or symbol, anything else. */
enum { C_SPACE, C_WHITESPACE, C_NUMBER, C_LETTER, C_MARK, C_PUNCT, C_OTHER, C_COUNT };

static inline int char_class(const Encoder *e, uint32_t cp) {
    if (cp == ' ') return C_SPACE;
    uint8_t f = e->table[cp];
    return f & F_SPACE ? C_WHITESPACE
           : f & F_NUMBER ? C_NUMBER
           : f & F_LETTER ? C_LETTER
           : f & F_MARK ? C_MARK
           : f & F_PUNCT_SYMBOL ? C_PUNCT
           : C_OTHER;
}

/* The codepoint of the UTF-8 character at p (`len` bytes, from char_length; valid UTF-8). */
static inline uint32_t char_at(const uint8_t *p, size_t len) {
    switch (len) {
    case 1: return p[0];
    case 2: return (uint32_t)(p[0] & 0x1F) << 6 | (p[1] & 0x3F);
    case 3: return (uint32_t)(p[0] & 0x0F) << 12 | (uint32_t)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    default:
        return (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3F) << 12 |
               (uint32_t)(p[2] & 0x3F) << 6 | (p[3] & 0x3F);
    }
}

/* Fills e->cut_after from the tokens (build time). */
static void find_cuts(Encoder *e) {
    uint8_t seen[C_COUNT] = {0};
    for (size_t k = 0; k < e->count; k++) {
        const uint8_t *s = e->blob + e->offsets[k];
        size_t n = e->offsets[k + 1] - e->offsets[k];
        int last = -1;
        for (size_t i = 0; i < n;) {
            size_t len = char_length(s + i, n - i);
            int c = char_class(e, char_at(s + i, len));
            if (last >= 0) seen[last] |= (uint8_t)(1u << c);
            last = c;
            i += len;
        }
    }
    for (int a = 0; a < C_COUNT; a++) e->cut_after[a] = (uint8_t)~seen[a];
}

/* With Encoder.reaches: whether the piece p[0..n), which is token `whole` (or NO_RANK), is done:
 * emitted as that token if it reaches itself, or merged (and kept whether that gave the token)
 * the first time the token comes. 0: the caller merges it. */
static int reached(const Encoder *e, const uint8_t *p, size_t n, uint32_t whole, Work *w) {
    if (whole == NO_RANK) return 0;
    uint8_t state = LOAD_RELAXED(&e->reaches[whole]);
    if (state == REACHES) {
        emit(w, whole);
        return 1;
    }
    if (state == NOT_REACHED) return 0;
    size_t first = w->out_len;
    merge_piece(e, p, n, w);
    if (!w->failed) {
        int itself = w->out_len - first == 1 && w->out[first] == whole;
        STORE_RELAXED(&e->reaches[whole], itself ? REACHES : NOT_REACHED);
    }
    return 1;
}

/* The tokens of one piece (from upcoming_piece: hashed if 3 bytes or more), not cut. */
static void encode_unit(const Encoder *e, Candidate piece, Work *w) {
    const uint8_t *p = piece.s;
    size_t n = piece.n;
    if (n <= 2) {
        uint32_t whole = e->whole_piece || n == 1 ? lookup(e, p, n) : NO_RANK;
        if (e->reaches && n == 2 && reached(e, p, n, lookup(e, p, n), w)) return;
        if (whole != NO_RANK)
            emit(w, whole);
        else
            merge_piece(e, p, n, w);
        return;
    }
    uint64_t h = piece.h;
    if (e->reaches) {
        if (reached(e, p, n, lookup_hashed(e, p, n, piece.head, h), w)) return;
    } else if (e->whole_piece) {
        uint32_t whole = lookup_hashed(e, p, n, piece.head, h);
        if (whole != NO_RANK) {
            emit(w, whole);
            return;
        }
    }
    CacheEntry *entry = NULL;
    if (n <= CACHE_BYTES && w->cache) {
        entry = &w->cache[h & (CACHE_SIZE - 1)];
        if (entry->len == n && entry->hash == h && memcmp(entry->bytes, p, n) == 0) {
            for (uint8_t k = 0; k < entry->count; k++) emit(w, entry->tokens[k]);
            return;
        }
    }
    size_t first = w->out_len;
    merge_piece(e, p, n, w);
    if (entry && !w->failed && w->out_len - first <= CACHE_TOKENS) {
        entry->hash = h;
        entry->len = (uint8_t)n;
        entry->count = (uint8_t)(w->out_len - first);
        memcpy(entry->bytes, p, n);
        memcpy(entry->tokens, w->out + first, 4 * entry->count);
    } else if (!w->cache && ++w->merged == CACHE_AFTER) {
        w->cache = calloc(CACHE_SIZE, sizeof(CacheEntry)); /* NULL: go on without */
    }
}

/* The tokens of one piece (from upcoming_piece): for SentencePiece, cut first where no token
 * can cross (Encoder.cut_after). */
static void encode_piece(const Encoder *e, Candidate piece, Work *w) {
    if (!e->char_units) {
        encode_unit(e, piece, w);
        return;
    }
    const uint8_t *p = piece.s;
    size_t n = piece.n, start = 0;
    int last = -1;
    for (size_t i = 0; i < n;) {
        size_t len = char_length(p + i, n - i);
        int c = char_class(e, char_at(p + i, len));
        if (last >= 0 && (e->cut_after[last] >> c & 1)) {
            encode_unit(e, upcoming_piece(e, p + start, i - start), w);
            start = i;
        }
        last = c;
        i += len;
    }
    encode_unit(e, start == 0 ? piece : upcoming_piece(e, p + start, n - start), w);
}

#endif
