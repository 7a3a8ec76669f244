/*
 * Strict parsers for sizes, durations and switches typed into MCA
 * parameters.  Every rejection says what was wrong, quoting the input, so
 * that the adapter only has to prefix the parameter's name.
 */
#include "regpar_size.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static bool is_blank(char c)
{
    return ' ' == c || '\t' == c || '\n' == c || '\r' == c;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* [*begin, *end) becomes the text without surrounding blanks. */
static void trim_blanks(const char *text, const char **begin, const char **end)
{
    const char *b = text, *e = text + strlen(text);
    while (b < e && is_blank(*b)) {
        b++;
    }
    while (e > b && is_blank(e[-1])) {
        e--;
    }
    *begin = b;
    *end = e;
}

static int fail(char *err, size_t errlen, const char *text, const char *reason)
{
    if (err && errlen) {
        /* Open MPI hands an MCA value set to "" over as NULL: quote what the
         * user typed, not "(null)". */
        snprintf(err, errlen, "'%s': %s", text ? text : "", reason);
    }
    return -1;
}

/*
 * Reasons shared by both parsers for input that does not start with a
 * decimal digit.  Returns NULL when the text does start with one.
 */
static const char *reject_non_decimal(const char *b, const char *e)
{
    if (b == e) {
        return "empty";
    }
    if ('-' == *b) {
        return "negative";
    }
    if (!is_digit(*b)) {
        return "not a number";
    }
    if ('0' == b[0] && e - b > 1 && ('x' == b[1] || 'X' == b[1])) {
        return "not a decimal number (hexadecimal is not accepted)";
    }
    return NULL;
}

/* [*b, *e): the text without surrounding blanks, if it starts with a
 * decimal digit; else -1 with the reason in err. */
static int decimal_text(const char *text, const char **b, const char **e, char *err, size_t errlen)
{
    if (!text) {
        return fail(err, errlen, text, "empty");
    }
    trim_blanks(text, b, e);
    const char *reason = reject_non_decimal(*b, *e);
    return reason ? fail(err, errlen, text, reason) : 0;
}

/* Decimal digits at *p into *value; false on overflow. */
static bool parse_digits(const char **p, const char *e, uint64_t *value)
{
    uint64_t v = 0;
    bool ok = true;
    for (; *p < e && is_digit(**p); (*p)++) {
        unsigned d = (unsigned)(**p - '0');
        if (v > (UINT64_MAX - d) / 10) {
            ok = false;
        } else {
            v = v * 10 + d;
        }
    }
    *value = v;
    return ok;
}

/* The whole number a size or a duration starts with: its digits into
 * *value (*fits false on overflow), *p after them, *e at the end of the
 * text without blanks; -1 with the reason in err when there is none. */
static int leading_number(const char *text, const char **p, const char **e, uint64_t *value,
                          bool *fits, char *err, size_t errlen)
{
    if (0 != decimal_text(text, p, e, err, errlen)) {
        return -1;
    }
    *fits = parse_digits(p, *e, value);
    return 0;
}

int regpar_parse_size(const char *text, uint64_t *out, char *err, size_t errlen)
{
    const char *p, *e;
    uint64_t value;
    bool fits;
    if (0 != leading_number(text, &p, &e, &value, &fits, err, errlen)) {
        return -1;
    }
    if (p < e && ('.' == *p || ',' == *p)) {
        return fail(err, errlen, text, "fractions are not accepted (write 1536K instead of 1.5M)");
    }
    unsigned shift = 0;
    if (p < e) {
        if (is_blank(*p)) {
            return fail(err, errlen, text, "blank between the number and its suffix");
        }
        static const char suffixes[] = "KMGT";
        const char *s = strchr(suffixes, *p >= 'a' ? *p - ('a' - 'A') : *p);
        if (!s || '\0' == *s || e - p != 1) {
            char why[96];
            snprintf(why, sizeof(why), "unknown suffix '%.*s' (expected K, M, G or T)",
                     (int)(e - p > 16 ? 16 : e - p), p);
            return fail(err, errlen, text, why);
        }
        shift = 10 * (unsigned)(s - suffixes + 1);
    }
    if (!fits || (shift && value > (UINT64_MAX >> shift))) {
        return fail(err, errlen, text, "too large");
    }
    *out = value << shift;
    return 0;
}

int regpar_format_size(uint64_t value, char *buf, size_t len)
{
    static const char suffixes[] = "KMGT";
    int level = 0;
    while (value && level < 4 && 0 == (value & 1023)) {
        value >>= 10;
        level++;
    }
    if (level) {
        return snprintf(buf, len, "%llu%c", (unsigned long long)value, suffixes[level - 1]);
    }
    return snprintf(buf, len, "%llu", (unsigned long long)value);
}

int regpar_parse_duration(const char *text, uint64_t *out_ns, char *err, size_t errlen)
{
    static const struct {
        const char *name;
        uint64_t ns;
    } units[] = {{"ns", 1},
                 {"us", 1000},
                 {"ms", 1000000},
                 {"s", 1000000000},
                 {"m", 60ULL * 1000000000},
                 {"h", 3600ULL * 1000000000}};
    const char *p, *e;
    uint64_t whole;
    bool fits;
    if (0 != leading_number(text, &p, &e, &whole, &fits, err, errlen)) {
        return -1;
    }
    const char *frac = NULL, *frac_end = NULL;
    if (p < e && '.' == *p) {
        frac = ++p;
        while (p < e && is_digit(*p)) {
            p++;
        }
        frac_end = p;
        if (frac == frac_end) {
            return fail(err, errlen, text, "digits expected after the decimal point");
        }
    }
    uint64_t unit = units[3].ns;
    if (p < e) {
        if (is_blank(*p)) {
            return fail(err, errlen, text, "blank between the number and its unit");
        }
        size_t n = (size_t)(e - p);
        unit = 0;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
            if (strlen(units[i].name) == n && 0 == strncmp(units[i].name, p, n)) {
                unit = units[i].ns;
            }
        }
        if (!unit) {
            char why[96];
            snprintf(why, sizeof(why), "unknown unit '%.*s' (expected ns, us, ms, s, m or h)",
                     (int)(n > 16 ? 16 : n), p);
            return fail(err, errlen, text, why);
        }
    }
    if (!fits || whole > UINT64_MAX / unit) {
        return fail(err, errlen, text, "too large");
    }
    uint64_t ns = whole * unit;
    /* Every unit is a multiple of 10^k for as many fraction digits as stay
     * at or above one nanosecond, so each digit adds an exact amount; finer
     * digits are dropped (durations are whole nanoseconds). */
    uint64_t step = unit;
    for (const char *d = frac; d && d < frac_end && 0 == step % 10; d++) {
        step /= 10;
        uint64_t add = (uint64_t)(*d - '0') * step;
        if (ns > UINT64_MAX - add) {
            return fail(err, errlen, text, "too large");
        }
        ns += add;
    }
    *out_ns = ns;
    return 0;
}

int regpar_parse_bool(const char *text, bool *out)
{
    static const char *const yes[] = {"on", "yes", "true", "1", "enable"};
    static const char *const no[] = {"off", "no", "false", "0", "disable"};
    if (!text) {
        return -1;
    }
    const char *b, *e;
    trim_blanks(text, &b, &e);
    size_t n = (size_t)(e - b);
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (strlen(yes[i]) == n && 0 == strncasecmp(yes[i], b, n)) {
            *out = true;
            return 0;
        }
        if (strlen(no[i]) == n && 0 == strncasecmp(no[i], b, n)) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

int regpar_parse_int(const char *text, long min, long max, long *out, char *err, size_t errlen)
{
    if (!text) {
        return fail(err, errlen, text, "empty");
    }
    const char *b, *e;
    trim_blanks(text, &b, &e);
    bool negative = b < e && '-' == *b;
    const char *digits = negative ? b + 1 : b;
    const char *reason = reject_non_decimal(digits, e);
    if (reason) {
        return fail(err, errlen, text, reason);
    }
    const char *p = digits;
    uint64_t magnitude;
    bool fits = parse_digits(&p, e, &magnitude);
    if (p != e) {
        return fail(err, errlen, text, "not an integer");
    }
    /* Range-check the magnitude before converting so nothing wraps. */
    const uint64_t long_max = (uint64_t)LONG_MAX;
    long value = 0;
    bool in_range = fits && magnitude <= long_max + (negative ? 1u : 0u);
    if (in_range) {
        value = negative ? (magnitude > long_max ? LONG_MIN : -(long)magnitude) : (long)magnitude;
        in_range = value >= min && value <= max;
    }
    if (!in_range) {
        char why[96];
        snprintf(why, sizeof(why), "out of range (%ld to %ld)", min, max);
        return fail(err, errlen, text, why);
    }
    *out = value;
    return 0;
}

int regpar_parse_decimal(const char *text, double min, double max, double *out, char *err,
                         size_t errlen)
{
    const char *b, *e;
    if (0 != decimal_text(text, &b, &e, err, errlen)) {
        return -1;
    }
    /* Digits, an optional point and digits: no exponent, no sign, no hex. */
    const char *p = b;
    double value = 0.0, scale = 1.0;
    bool point = false;
    for (; p < e; p++) {
        if ('.' == *p && !point) {
            point = true;
        } else if (is_digit(*p)) {
            if (point) {
                scale /= 10.0;
                value += (*p - '0') * scale;
            } else {
                value = value * 10.0 + (*p - '0');
            }
        } else {
            return fail(err, errlen, text, "not a decimal number");
        }
    }
    if (!(value >= min && value <= max)) {
        char why[96];
        snprintf(why, sizeof(why), "out of range (%g to %g)", min, max);
        return fail(err, errlen, text, why);
    }
    *out = value;
    return 0;
}
