/*
 * libFuzzer target: the strict parsers of regpar_size.h against reference
 * implementations written here independently (a different technique: a
 * grammar check first, then 128-bit arithmetic), so that the fuzzer finds
 * wrong answers as well as crashes.
 *
 * Input: byte 0 selects the parser and byte 1 its parameters (range of
 * parse_int/parse_decimal, length of the error buffer); the rest, cut at
 * the first NUL and at 256 bytes, is the text.
 */
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzz_common.h"
#include "regpar_size.h"

#define TEXT_MAX 256

typedef unsigned __int128 u128;

/* ------------------------------------------------------------------------ */
/* Reference implementations */

static bool ref_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool ref_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The text without surrounding blanks, in buf. */
static void ref_trim(const char *text, char *buf)
{
    size_t n = strlen(text);
    size_t b = 0;
    while (b < n && ref_blank(text[b])) {
        b++;
    }
    while (n > b && ref_blank(text[n - 1])) {
        n--;
    }
    memcpy(buf, text + b, n - b);
    buf[n - b] = '\0';
}

/* Digits as a 128-bit value, saturated at 2^80: far above anything that
 * fits, and low enough that shifting by 40 or multiplying by an hour of
 * nanoseconds cannot wrap. */
static u128 ref_digits_value(const char *s, size_t n)
{
    u128 v = 0;
    for (size_t i = 0; i < n; i++) {
        v = v * 10 + (u128)(s[i] - '0');
        if (v > ((u128)1 << 80)) {
            v = (u128)1 << 80;
        }
    }
    return v;
}

static size_t ref_span_digits(const char *s)
{
    size_t n = 0;
    while (ref_digit(s[n])) {
        n++;
    }
    return n;
}

static bool ref_size(const char *text, uint64_t *out)
{
    char t[TEXT_MAX + 1];
    ref_trim(text, t);
    size_t nd = ref_span_digits(t);
    if (nd == 0 || (t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))) {
        return false;
    }
    const char *rest = t + nd;
    unsigned shift = 0;
    if (*rest) {
        const char *suffixes = "kKmMgGtT";
        const char *s = strchr(suffixes, *rest);
        if (!s || rest[1]) {
            return false;
        }
        shift = 10 * (unsigned)((s - suffixes) / 2 + 1);
    }
    u128 v = ref_digits_value(t, nd) << shift;
    if (v > UINT64_MAX) {
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

/* Fraction digits add digit * unit / 10^k while that is a whole number of
 * nanoseconds (the documented rule: finer digits are dropped). */
static bool ref_duration(const char *text, uint64_t *out)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {{"ns", 1},
                 {"us", 1000},
                 {"ms", 1000000},
                 {"s", 1000000000ULL},
                 {"m", 60000000000ULL},
                 {"h", 3600000000000ULL}};
    char t[TEXT_MAX + 1];
    ref_trim(text, t);
    size_t nd = ref_span_digits(t);
    if (nd == 0 || (t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))) {
        return false;
    }
    const char *p = t + nd, *frac = NULL;
    size_t nf = 0;
    if (*p == '.') {
        frac = p + 1;
        nf = ref_span_digits(frac);
        if (nf == 0) {
            return false;
        }
        p = frac + nf;
    }
    uint64_t unit = 1000000000ULL;
    if (*p) {
        unit = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (strcmp(p, units[i].name) == 0) {
                unit = units[i].ns;
            }
        }
        if (!unit) {
            return false;
        }
    }
    u128 ns = ref_digits_value(t, nd) * unit;
    uint64_t step = unit;
    for (size_t i = 0; i < nf && step % 10 == 0; i++) {
        step /= 10;
        ns += (u128)(frac[i] - '0') * step;
    }
    if (ns > UINT64_MAX) {
        return false;
    }
    *out = (uint64_t)ns;
    return true;
}

static bool ref_int(const char *text, long min, long max, long *out)
{
    char t[TEXT_MAX + 1];
    ref_trim(text, t);
    bool negative = t[0] == '-';
    const char *d = negative ? t + 1 : t;
    size_t nd = ref_span_digits(d);
    if (nd == 0 || d[nd] || (d[0] == '0' && (d[1] == 'x' || d[1] == 'X'))) {
        return false;
    }
    u128 m = ref_digits_value(d, nd);
    __int128 v = negative ? -(__int128)m : (__int128)m;
    if (v < min || v > max) {
        return false;
    }
    *out = (long)v;
    return true;
}

static bool ref_decimal_grammar(const char *text, char *t)
{
    ref_trim(text, t);
    size_t nd = ref_span_digits(t);
    if (nd == 0 || (t[0] == '0' && (t[1] == 'x' || t[1] == 'X'))) {
        return false;
    }
    const char *p = t + nd;
    if (*p == '.') {
        p += 1 + ref_span_digits(p + 1);
    }
    return *p == '\0';
}

static bool ref_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"on", "yes", "true", "1", "enable"};
    static const char *const no[] = {"off", "no", "false", "0", "disable"};
    char t[TEXT_MAX + 1];
    ref_trim(text, t);
    for (size_t i = 0; i < 5; i++) {
        if (strcasecmp(t, yes[i]) == 0) {
            *out = true;
            return true;
        }
        if (strcasecmp(t, no[i]) == 0) {
            *out = false;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------------ */
/* The target */

/* On failure the reason is a NUL-terminated text within errlen bytes, not
 * empty when there is room for it. */
static void check_err(const char *err, size_t errlen, bool failed)
{
    if (errlen == 0 || !failed) {
        return;
    }
    FUZZ_CHECK(memchr(err, '\0', errlen) != NULL);
    if (errlen > 1) {
        FUZZ_CHECK(err[0] != '\0');
    }
}

static void fuzz_size(const char *text, size_t errlen)
{
    char err[96];
    memset(err, 'x', sizeof(err));
    uint64_t v = 0xdeadbeef, ref = 0;
    int rc = regpar_parse_size(text, &v, errlen ? err : NULL, errlen);
    bool ok = ref_size(text, &ref);
    FUZZ_CHECK_MSG(ok == (rc == 0), "size '%s': rc %d, reference %s", text, rc,
                   ok ? "accepts" : "rejects");
    if (ok && rc == 0) {
        FUZZ_CHECK_MSG(v == ref, "size '%s': %llu, reference %llu", text, (unsigned long long)v,
                       (unsigned long long)ref);
        /* Formatting round trip. */
        char buf[32];
        int n = regpar_format_size(v, buf, sizeof(buf));
        FUZZ_CHECK(n > 0 && (size_t)n < sizeof(buf));
        uint64_t back = 0;
        FUZZ_CHECK_MSG(regpar_parse_size(buf, &back, NULL, 0) == 0 && back == v,
                       "format %llu -> '%s' does not parse back", (unsigned long long)v, buf);
    } else {
        FUZZ_CHECK(v == 0xdeadbeef);
    }
    check_err(err, errlen, rc != 0);
}

static void fuzz_duration(const char *text, size_t errlen)
{
    char err[96];
    memset(err, 'x', sizeof(err));
    uint64_t v = 0xdeadbeef, ref = 0;
    int rc = regpar_parse_duration(text, &v, errlen ? err : NULL, errlen);
    bool ok = ref_duration(text, &ref);
    FUZZ_CHECK_MSG(ok == (rc == 0), "duration '%s': rc %d, reference %s", text, rc,
                   ok ? "accepts" : "rejects");
    if (ok && rc == 0) {
        FUZZ_CHECK_MSG(v == ref, "duration '%s': %llu ns, reference %llu", text,
                       (unsigned long long)v, (unsigned long long)ref);
    }
    check_err(err, errlen, rc != 0);
}

static void fuzz_int(const char *text, uint8_t params, size_t errlen)
{
    static const long bounds[][2] = {
        {0, 9}, {-1000000, 1000000}, {0, 256}, {1, 64}, {LONG_MIN, LONG_MAX}, {-1, -1}, {5, 4},
    };
    const long *b = bounds[params % (sizeof(bounds) / sizeof(bounds[0]))];
    char err[96];
    memset(err, 'x', sizeof(err));
    long v = 77, ref = 0;
    int rc = regpar_parse_int(text, b[0], b[1], &v, errlen ? err : NULL, errlen);
    bool ok = ref_int(text, b[0], b[1], &ref);
    FUZZ_CHECK_MSG(ok == (rc == 0), "int '%s' in [%ld, %ld]: rc %d, reference %s", text, b[0], b[1],
                   rc, ok ? "accepts" : "rejects");
    if (ok && rc == 0) {
        FUZZ_CHECK_MSG(v == ref, "int '%s': %ld, reference %ld", text, v, ref);
    }
    check_err(err, errlen, rc != 0);
}

static void fuzz_decimal(const char *text, uint8_t params, size_t errlen)
{
    static const double bounds[][2] = {{0.0, 1e9}, {1.0, 16.0}, {0.5, 0.5}, {0.0, 0.0}};
    const double *b = bounds[params % (sizeof(bounds) / sizeof(bounds[0]))];
    char err[96], t[TEXT_MAX + 1];
    memset(err, 'x', sizeof(err));
    double v = -1.0;
    int rc = regpar_parse_decimal(text, b[0], b[1], &v, errlen ? err : NULL, errlen);
    bool grammar = ref_decimal_grammar(text, t);
    if (!grammar) {
        FUZZ_CHECK_MSG(rc != 0, "decimal '%s' accepted", text);
    } else {
        /* strtod rounds correctly; the parser may be a few ulps off, which
         * only matters right at a bound. */
        double ref = strtod(t, NULL);
        double tol = fabs(ref) * 1e-12;
        bool inside = ref >= b[0] - tol && ref <= b[1] + tol;
        bool clearly_inside = ref >= b[0] + tol && ref <= b[1] - tol;
        if (rc == 0) {
            FUZZ_CHECK_MSG(inside && fabs(v - ref) <= tol + 1e-300,
                           "decimal '%s': %.17g, reference %.17g, range [%g, %g]", text, v, ref,
                           b[0], b[1]);
        } else {
            FUZZ_CHECK_MSG(!clearly_inside || !isfinite(ref),
                           "decimal '%s' (%.17g) rejected within [%g, %g]", text, ref, b[0], b[1]);
        }
    }
    check_err(err, errlen, rc != 0);
}

static void fuzz_bool(const char *text)
{
    bool v = false, ref = false;
    int rc = regpar_parse_bool(text, &v);
    bool ok = ref_bool(text, &ref);
    FUZZ_CHECK_MSG(ok == (rc == 0), "switch '%s': rc %d, reference %s", text, rc,
                   ok ? "accepts" : "rejects");
    if (ok && rc == 0) {
        FUZZ_CHECK(v == ref);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    const uint8_t which = data[0], params = data[1];
    char text[TEXT_MAX + 1];
    size_t n = size - 2 > TEXT_MAX ? TEXT_MAX : size - 2;
    memcpy(text, data + 2, n);
    text[n] = '\0';
    static const size_t errlens[] = {96, 0, 1, 2, 7, 32};
    size_t errlen = errlens[(params >> 4) % (sizeof(errlens) / sizeof(errlens[0]))];

    switch (which % 6) {
        case 0:
            fuzz_size(text, errlen);
            break;
        case 1:
            fuzz_duration(text, errlen);
            break;
        case 2:
            fuzz_int(text, params, errlen);
            break;
        case 3:
            fuzz_decimal(text, params, errlen);
            break;
        case 4:
            fuzz_bool(text);
            break;
        default: {
            /* Formatting of any value: round trip through the parser. */
            uint64_t v = 0;
            for (size_t i = 0; i < n && i < 8; i++) {
                v = v << 8 | (uint8_t)text[i];
            }
            v >>= (params & 63);
            char buf[32];
            int len = regpar_format_size(v, buf, sizeof(buf));
            uint64_t back = 1;
            FUZZ_CHECK(len > 0 && (size_t)len < sizeof(buf) && (size_t)len == strlen(buf));
            FUZZ_CHECK_MSG(regpar_parse_size(buf, &back, NULL, 0) == 0 && back == v,
                           "format %llu -> '%s'", (unsigned long long)v, buf);
            /* A short buffer truncates but returns the full length. */
            char small[4];
            FUZZ_CHECK(regpar_format_size(v, small, sizeof(small)) == len);
            FUZZ_CHECK(memchr(small, '\0', sizeof(small)) != NULL);
            break;
        }
    }
    return 0;
}
