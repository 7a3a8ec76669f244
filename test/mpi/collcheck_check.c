/*
 * Checking received data: the byte patterns of data movement, value-by-value
 * comparison against the reference, and the gap bytes of derived types.
 */
#include "collcheck.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Data-movement patterns. */

typedef struct {
    uint64_t base;
    uint64_t word_index;
    uint64_t word;
} pattern_stream;

static void pattern_begin(pattern_stream *ps, uint64_t salt, uint64_t tag)
{
    ps->base = cc_hash(salt, tag);
    ps->word_index = UINT64_MAX;
    ps->word = 0;
}

static unsigned char pattern_byte(pattern_stream *ps, size_t packed_offset)
{
    uint64_t w = packed_offset / 8;
    if (w != ps->word_index) {
        ps->word_index = w;
        ps->word = cc_hash(ps->base, w);
    }
    return (unsigned char)(ps->word >> (8 * (packed_offset % 8)));
}

void cc_fill_pattern(const cc_type *t, size_t count, uint64_t salt, uint64_t tag, void *buf)
{
    unsigned char *p = buf;
    pattern_stream ps;
    pattern_begin(&ps, salt, tag);
    size_t packed = 0;
    for (size_t i = 0; i < count; i++) {
        for (unsigned s = 0; s < t->nsegments; s++) {
            unsigned char *d = p + i * t->extent + t->segments[s].offset;
            for (unsigned k = 0; k < t->segments[s].length; k++) {
                d[k] = pattern_byte(&ps, packed++);
            }
        }
    }
}

static bool in_segment(const cc_type *t, size_t byte)
{
    for (unsigned s = 0; s < t->nsegments; s++) {
        if (byte >= t->segments[s].offset && byte < t->segments[s].offset + t->segments[s].length) {
            return true;
        }
    }
    return false;
}

/* Offset of the first gap byte of an element, or extent if it has none. */
size_t cc_first_gap(const cc_type *t)
{
    for (size_t b = 0; b < t->extent; b++) {
        if (!in_segment(t, b)) {
            return b;
        }
    }
    return t->extent;
}

static bool check_gaps(const cc_case *c, const cc_type *t, const unsigned char *got, size_t count,
                       const char *what)
{
    if (!t->gaps_must_stay) {
        return true;
    }
    for (size_t i = 0; i < count; i++) {
        for (size_t b = 0; b < t->extent; b++) {
            unsigned char v = got[i * t->extent + b];
            if (!in_segment(t, b) && v != CC_RECV_SENTINEL) {
                cc_fail(c,
                        "%s: gap byte %zu of element %zu was written: expected 0x%02x (untouched), "
                        "got 0x%02x%s",
                        what, b, i, CC_RECV_SENTINEL, v,
                        v == CC_SEND_FILLER ? " (the sender's gap bytes were transferred)" : "");
                return false;
            }
        }
    }
    return true;
}

bool cc_check_pattern(const cc_case *c, const cc_type *t, const void *got, size_t count,
                      uint64_t salt, uint64_t tag, const char *what)
{
    const unsigned char *p = got;
    pattern_stream ps;
    pattern_begin(&ps, salt, tag);
    size_t packed = 0, bad = 0, first_elem = 0, first_byte = 0;
    unsigned char first_expected = 0, first_got = 0;
    for (size_t i = 0; i < count; i++) {
        bool elem_bad = false;
        for (unsigned s = 0; s < t->nsegments; s++) {
            size_t off = i * t->extent + t->segments[s].offset;
            for (unsigned k = 0; k < t->segments[s].length; k++) {
                unsigned char e = pattern_byte(&ps, packed++);
                if (p[off + k] != e && !elem_bad) {
                    elem_bad = true;
                    if (bad == 0) {
                        first_elem = i;
                        first_byte = t->segments[s].offset + k;
                        first_expected = e;
                        first_got = p[off + k];
                    }
                }
            }
        }
        bad += elem_bad;
    }
    if (bad != 0) {
        cc_fail(c,
                "%s: %zu of %zu elements differ; first at element %zu, byte %zu of %s: expected "
                "0x%02x, got 0x%02x%s",
                what, bad, count, first_elem, first_byte, t->name, first_expected, first_got,
                first_got == CC_RECV_SENTINEL ? " (never written)" : "");
        return false;
    }
    return check_gaps(c, t, p, count, what);
}

/* ------------------------------------------------------------------------ */
/* Value comparison and formatting. */

static void format_element(const cc_type *t, const void *elem, char *out, size_t n)
{
    cc_value v = cc_load(t, elem);
    switch (t->kind) {
        case CC_KIND_INT:
        case CC_KIND_RAW:
            if (t->scalar.is_signed) {
                uint64_t width_mask =
                    t->scalar.size >= 8 ? UINT64_MAX : (1ull << (8 * t->scalar.size)) - 1;
                snprintf(out, n, "%lld (0x%llx)", (long long)(int64_t)v.i,
                         (unsigned long long)(v.i & width_mask));
            } else {
                snprintf(out, n, "%llu (0x%llx)", (unsigned long long)v.i, (unsigned long long)v.i);
            }
            break;
        case CC_KIND_BOOL:
            snprintf(out, n, "%u", (unsigned)v.i);
            break;
        case CC_KIND_FLOAT:
            snprintf(out, n, "%.21Lg (%La)", v.f, v.f);
            break;
        case CC_KIND_COMPLEX:
            snprintf(out, n, "(%.21Lg, %.21Lg)", v.c.re, v.c.im);
            break;
        case CC_KIND_PAIR:
            snprintf(out, n, "(value %.21Lg, index %d)", v.pair.value, v.pair.index);
            break;
        case CC_KIND_MAT2:
            snprintf(out, n, "[%u %u; %u %u]", v.m[0], v.m[1], v.m[2], v.m[3]);
            break;
        case CC_KIND_VEC3:
            snprintf(out, n, "{%u, %u, %u}", v.m[0], v.m[1], v.m[2]);
            break;
        case CC_KIND_STRUCT:
            snprintf(out, n, "{%d, %.17g, %d}", v.s.a, v.s.b, v.s.c);
            break;
    }
}

static bool element_equal(const cc_type *t, const unsigned char *a, const unsigned char *b)
{
    for (unsigned s = 0; s < t->nsegments; s++) {
        if (memcmp(a + t->segments[s].offset, b + t->segments[s].offset, t->segments[s].length) !=
            0) {
            return false;
        }
    }
    return true;
}

bool cc_check_values(const cc_case *c, const cc_type *t, const void *expected, const void *got,
                     size_t count, const char *what)
{
    const unsigned char *e = expected, *g = got;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < count; i++) {
        if (!element_equal(t, e + i * t->extent, g + i * t->extent)) {
            if (bad++ == 0) {
                first = i;
            }
        }
    }
    if (bad != 0) {
        char es[160], gs[160];
        format_element(t, e + first * t->extent, es, sizeof(es));
        format_element(t, g + first * t->extent, gs, sizeof(gs));
        cc_fail(c, "%s: %zu of %zu elements differ; first at index %zu: expected %s, got %s", what,
                bad, count, first, es, gs);
        return false;
    }
    return check_gaps(c, t, g, count, what);
}
