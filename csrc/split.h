/* The split rules of each pattern kind, one position at a time (pretokenize/rules.py and
 * splits.py; part of native.c, which includes it twice: for ASCII text, reading its bytes, and
 * for any text, reading the codepoints and flags that prepare() computed). */
#ifndef TENSORTEXT_NATIVE_SPLIT_SHARED
#define TENSORTEXT_NATIVE_SPLIT_SHARED

typedef struct {
    const uint8_t *f;     /* flags: of each codepoint; for ASCII text, the class table */
    const uint32_t *cp;   /* codepoints (not for ASCII text) */
    const uint8_t *ascii; /* ASCII text: its bytes, which are the codepoints; else NULL */
    size_t n;
    size_t outer_end;     /* DeepSeek-V3: the end of the step-2 piece of the last piece start */
} Seg;

static inline int fold_in(uint32_t c, char lower) {
    if (c == (uint32_t)lower || c == (uint32_t)(lower - 32)) return 1;
    return lower == 's' && c == 0x17F; /* (?i) folds U+017F (long s) to s */
}
/* DeepSeek-V3's classes (a Sequence of three Isolated splits: deepseek_v3_starts in splits.py). */
static inline int is_cjk_kana(uint32_t c) {
    return (c >= 0x4E00 && c <= 0x9FA5) || (c >= 0x3040 && c <= 0x30FF);
}
static inline int is_ascii_letter(uint32_t c) {
    return (c | 32) >= 'a' && (c | 32) <= 'z';
}
static inline int is_ascii_punct(uint32_t c) {
    return (c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) ||
           (c >= 123 && c <= 126);
}

#define UPPER_SET (F_UPPER | F_OTHER | F_MARK)
#define LOWER_SET (F_LOWER | F_OTHER | F_MARK)
#define BOTH (F_OTHER | F_MARK)

#endif

/* SPLIT(name): each function's name in this copy; CP and FLAG: a position's codepoint and flags. */
#ifdef SPLIT_ASCII
#define SPLIT(name) name##_ascii
#define CP(s, i) ((uint32_t)(s)->ascii[i])
#define FLAG(s, i) ((s)->f[(s)->ascii[i]])
#else
#define SPLIT(name) name
#define CP(s, i) ((s)->cp[i])
#define FLAG(s, i) ((s)->f[i])
#endif

/* ------------------------------------------------------------------ the split rules */


static inline int SPLIT(is_newline)(const Seg *s, size_t i) {
    return CP(s, i) == '\n' || CP(s, i) == '\r';
}

static inline size_t SPLIT(run_end)(const Seg *s, size_t i, uint8_t mask) {
    while (i < s->n && (FLAG(s, i) & mask)) i++;
    return i;
}

/* End of a run of characters with none of `mask`'s flags. */
static inline size_t SPLIT(run_end_not)(const Seg *s, size_t i, uint8_t mask) {
    while (i < s->n && !(FLAG(s, i) & mask)) i++;
    return i;
}


/* Length of 's|'t|'re|'ve|'m|'ll|'d at i (0: none). */
static inline size_t SPLIT(contraction)(const Seg *s, size_t i, int ignore_case) {
    if (i + 1 >= s->n || CP(s, i) != '\'') return 0;
    uint32_t a = CP(s, i + 1);
    uint32_t b = i + 2 < s->n ? CP(s, i + 2) : 0;
#define IS(c, ch) (ignore_case ? fold_in((c), (ch)) : (c) == (uint32_t)(ch))
    if (IS(a, 's') || IS(a, 't') || IS(a, 'd') || IS(a, 'm')) return 2;
    if (i + 2 < s->n &&
        ((IS(a, 'l') && IS(b, 'l')) || (IS(a, 'v') && IS(b, 'e')) || (IS(a, 'r') && IS(b, 'e'))))
        return 3;
#undef IS
    return 0;
}

/* The whitespace alternatives at i (a space), in each pattern's order. */
static inline size_t SPLIT(whitespace_end)(const Seg *s, size_t i, int kind) {
    size_t q = SPLIT(run_end)(s, i, F_SPACE);
    int to_end_first = kind == K_R50K || kind == K_CL100K || kind == K_CL100K_HF; /* \s++$ */
    if (q == s->n && to_end_first) return q;
    if (kind != K_R50K) { /* \s*[\r\n]: up to the run's last newline */
        for (size_t j = q; j > i; j--)
            if (SPLIT(is_newline)(s, j - 1)) return j;
    }
    if (q == s->n) return q;       /* \s+(?!\S) at the end */
    return q - i >= 2 ? q - 1 : q; /* \s+(?!\S) gives back one character, else \s */
}

/* ' ?[^\s\p{L}\p{N}]++' followed by a run of `tail` (newlines, or newlines and '/'). */
static inline size_t SPLIT(punct_end)(const Seg *s, size_t i, uint8_t not_other, int slash) {
    size_t j = SPLIT(run_end_not)(s, CP(s, i) == ' ' ? i + 1 : i, not_other);
    if (slash) {
        while (j < s->n && (SPLIT(is_newline)(s, j) || CP(s, j) == '/')) j++;
        return j;
    }
    while (j < s->n && SPLIT(is_newline)(s, j)) j++;
    return j;
}

static inline int SPLIT(is_other)(const Seg *s, size_t i, uint8_t not_other) {
    return i < s->n && !(FLAG(s, i) & not_other);
}

static size_t SPLIT(end_r50k)(const Seg *s, size_t i) {
    size_t c = SPLIT(contraction)(s, i, 0);
    if (c) return i + c;
    uint8_t f = FLAG(s, i);
    const uint8_t classes[2] = {F_LETTER, F_NUMBER};
    for (int k = 0; k < 2; k++) {
        if (f & classes[k]) return SPLIT(run_end)(s, i, classes[k]);
        if (CP(s, i) == ' ' && i + 1 < s->n && (FLAG(s, i + 1) & classes[k]))
            return SPLIT(run_end)(s, i + 1, classes[k]);
    }
    uint8_t not_other = F_SPACE | F_LETTER | F_NUMBER;
    if (SPLIT(is_other)(s, i, not_other)) return SPLIT(run_end_not)(s, i, not_other);
    if (CP(s, i) == ' ' && SPLIT(is_other)(s, i + 1, not_other)) return SPLIT(run_end_not)(s, i + 1, not_other);
    return SPLIT(whitespace_end)(s, i, K_R50K);
}

/* The alternatives after the letter ones, for cl100k_base, Llama-3, Qwen, o200k and Tekken:
 * digit groups, punctuation runs (with trailing [\r\n], or [\r\n/] for o200k and Tekken),
 * whitespace, and otherwise one character. `letter`: the flags of the pattern's letter runs. */
static inline size_t SPLIT(end_after_letters)(const Seg *s, size_t i, int kind, uint8_t letter) {
    uint8_t f = FLAG(s, i);
    if (f & F_NUMBER) {
        if (kind == K_QWEN2 || kind == K_QWEN35 || kind == K_TEKKEN) return i + 1; /* \p{N} */
        if (kind == K_CL100K_HF) return SPLIT(run_end)(s, i, F_NUMBER); /* Oniguruma's (\p{N}{1,3})+ */
        size_t j = i + 1;                                        /* \p{N}{1,3} */
        while (j < s->n && j < i + 3 && (FLAG(s, j) & F_NUMBER)) j++;
        return j;
    }
    uint8_t not_other = F_SPACE | letter | F_NUMBER;
    if (SPLIT(is_other)(s, i, not_other) || (CP(s, i) == ' ' && SPLIT(is_other)(s, i + 1, not_other)))
        return SPLIT(punct_end)(s, i, not_other, kind == K_O200K || kind == K_TEKKEN);
    if (f & F_SPACE) return SPLIT(whitespace_end)(s, i, kind);
    return i + 1;
}

/* cl100k_base, Llama-3 and Qwen (see _ends_cl100k_like in rules.py). */
static size_t SPLIT(end_cl100k_like)(const Seg *s, size_t i, int kind) {
    size_t c = SPLIT(contraction)(s, i, 1);
    if (c) return i + c;
    uint8_t letter = kind == K_QWEN35 ? (F_LETTER | F_MARK) : F_LETTER;
    uint8_t f = FLAG(s, i);
    if (f & letter) return SPLIT(run_end)(s, i, letter);
    if (!SPLIT(is_newline)(s, i) && !(f & (letter | F_NUMBER)) && i + 1 < s->n && (FLAG(s, i + 1) & letter))
        return SPLIT(run_end)(s, i + 1, letter);
    return SPLIT(end_after_letters)(s, i, kind, letter);
}

/* o200k's two letter alternatives from p: [upper]*[lower]+ (first) and [upper]+[lower]*
 * (second), each with an optional contraction (o200k) or none (Tekken); 0 where it does not
 * match. */

static inline size_t SPLIT(with_contraction)(const Seg *s, size_t end, int contractions) {
    return contractions ? end + SPLIT(contraction)(s, end, 1) : end;
}

static size_t SPLIT(o200k_letters)(const Seg *s, size_t p, int second, int contractions) {
    if (p >= s->n) return 0;
    size_t ue = SPLIT(run_end)(s, p, UPPER_SET);
    if (ue < s->n && (FLAG(s, ue) & F_LOWER))
        return SPLIT(with_contraction)(s, SPLIT(run_end)(s, ue, LOWER_SET), contractions);
    if (second) return ue > p ? SPLIT(with_contraction)(s, ue, contractions) : 0;
    /* Backtrack the upper run to its last character that is in both sets. */
    for (size_t j = ue; j > p; j--)
        if (FLAG(s, j - 1) & BOTH) return SPLIT(with_contraction)(s, j, contractions);
    return 0;
}

/* o200k, and Tekken (its letter runs take no contraction; its digits are \p{N}). */
static size_t SPLIT(end_o200k)(const Seg *s, size_t i, int kind) {
    uint8_t f = FLAG(s, i);
    int prefix = !SPLIT(is_newline)(s, i) && !(f & (F_LETTER | F_NUMBER));
    int contractions = kind == K_O200K;
    for (int second = 0; second < 2; second++) {
        size_t end;
        if (prefix && (end = SPLIT(o200k_letters)(s, i + 1, second, contractions))) return end;
        if ((f & (UPPER_SET | LOWER_SET)) && (end = SPLIT(o200k_letters)(s, i, second, contractions)))
            return end;
    }
    return SPLIT(end_after_letters)(s, i, kind, F_LETTER);
}

/* SentencePiece's words (only U+0020 is a space): ` *[^ ]+| +` (sp_prefix: a word with the
 * spaces before it) and `[^ ]+ *| +` (sp_suffix: with the spaces after it); a run of spaces
 * with no word after (before) it is a piece of its own. */
static inline size_t SPLIT(spaces_end)(const Seg *s, size_t i) {
    while (i < s->n && CP(s, i) == ' ') i++;
    return i;
}

static inline size_t SPLIT(word_end)(const Seg *s, size_t i) {
    while (i < s->n && CP(s, i) != ' ') i++;
    return i;
}

static size_t SPLIT(end_sp_prefix)(const Seg *s, size_t i) {
    size_t word = SPLIT(spaces_end)(s, i);
    return word < s->n ? SPLIT(word_end)(s, word) : word;
}

static size_t SPLIT(end_sp_suffix)(const Seg *s, size_t i) {
    return SPLIT(spaces_end)(s, CP(s, i) == ' ' ? i : SPLIT(word_end)(s, i));
}




/* Where DEEPSEEK_V3_MAIN's match at i ends (0: no match there). */
static size_t SPLIT(deepseek_main)(const Seg *s, size_t i) {
    uint8_t f = FLAG(s, i), letter_mark = F_LETTER | F_MARK;
    uint32_t c = CP(s, i);
    if (is_ascii_punct(c) && i + 1 < s->n && is_ascii_letter(CP(s, i + 1))) {
        size_t j = i + 1; /* [ASCII punctuation][A-Za-z]+ */
        while (j < s->n && is_ascii_letter(CP(s, j))) j++;
        return j;
    }
    /* [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ (a mark as the prefix: the run from it is the same) */
    if (f & letter_mark) return SPLIT(run_end)(s, i, letter_mark);
    if (!SPLIT(is_newline)(s, i) && !(f & (F_LETTER | F_PUNCT_SYMBOL)) && i + 1 < s->n &&
        (FLAG(s, i + 1) & letter_mark))
        return SPLIT(run_end)(s, i + 1, letter_mark);
    if ((f & F_PUNCT_SYMBOL) || (c == ' ' && i + 1 < s->n && (FLAG(s, i + 1) & F_PUNCT_SYMBOL))) {
        size_t j = SPLIT(run_end)(s, (f & F_PUNCT_SYMBOL) ? i : i + 1, F_PUNCT_SYMBOL);
        while (j < s->n && SPLIT(is_newline)(s, j)) j++; /*  ?[\p{P}\p{S}]+[\r\n]* */
        return j;
    }
    return (f & F_SPACE) ? SPLIT(whitespace_end)(s, i, K_DEEPSEEK_V3) : 0;
}

/* The end of the step-2 piece holding i (a piece start): inside the step-1 piece (a group of
 * up to three digits, or the gap to the next digit), a run of CJK and kana or the gap to the
 * next one. Pieces come in order, so the last one's holds until i reaches its end. */
static size_t SPLIT(deepseek_outer_end)(Seg *s, size_t i) {
    if (i < s->outer_end) return s->outer_end;
    size_t end1;
    if (FLAG(s, i) & F_NUMBER) {
        end1 = i + 1;
        while (end1 < s->n && end1 < i + 3 && (FLAG(s, end1) & F_NUMBER)) end1++;
    } else {
        end1 = i + 1;
        while (end1 < s->n && !(FLAG(s, end1) & F_NUMBER)) end1++;
    }
    int cjk = is_cjk_kana(CP(s, i));
    size_t end2 = i + 1;
    while (end2 < end1 && is_cjk_kana(CP(s, end2)) == cjk) end2++;
    return s->outer_end = end2;
}

/* The piece from i (a piece start): the main pattern's match at i inside its step-2 piece, or
 * the gap to its next match there. */
static size_t SPLIT(end_deepseek_v3)(Seg *s, size_t i) {
    size_t end2 = SPLIT(deepseek_outer_end)(s, i);
    const Seg piece = {s->f, s->cp, s->ascii, end2, 0}; /* the later steps see only their piece */
    size_t end = SPLIT(deepseek_main)(&piece, i);
    if (end) return end;
    for (end = i + 1; end < end2 && !SPLIT(deepseek_main)(&piece, end); end++) {
    }
    return end;
}

static inline size_t SPLIT(piece_end)(Seg *s, size_t i, int kind) {
    switch (kind) {
    case K_R50K: return SPLIT(end_r50k)(s, i);
    case K_O200K:
    case K_TEKKEN: return SPLIT(end_o200k)(s, i, kind);
    case K_DEEPSEEK_V3: return SPLIT(end_deepseek_v3)(s, i);
    case K_SP_PREFIX: return SPLIT(end_sp_prefix)(s, i);
    case K_SP_SUFFIX: return SPLIT(end_sp_suffix)(s, i);
    case K_WHOLE: return s->n; /* [\s\S]+: the whole segment */
    default: return SPLIT(end_cl100k_like)(s, i, kind);
    }
}

#undef SPLIT
#undef CP
#undef FLAG
