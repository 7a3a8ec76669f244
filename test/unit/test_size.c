/*
 * The strict parsers of regpar_size.h: accepted and rejected sizes,
 * durations and switches, with the reason given for each rejection.
 */
#include <string.h>

#include "regpar_size.h"
#include "unit.h"

static void size_ok(const char *text, uint64_t expected)
{
    uint64_t v = 12345;
    char err[128] = "";
    int rc = regpar_parse_size(text, &v, err, sizeof(err));
    if (rc != 0 || v != expected) {
        fprintf(stderr, "size '%s': rc %d value %" PRIu64 " (expected %" PRIu64 ") %s\n", text, rc,
                v, expected, err);
        unit_failures++;
    }
}

static void size_bad(const char *text, const char *reason)
{
    uint64_t v = 12345;
    char err[128] = "";
    int rc = regpar_parse_size(text, &v, err, sizeof(err));
    if (rc != -1 || v != 12345 || !strstr(err, reason)) {
        fprintf(stderr, "size '%s': rc %d, message '%s' (expected '%s')\n", text ? text : "(null)",
                rc, err, reason);
        unit_failures++;
    }
}

static void duration_ok(const char *text, uint64_t expected_ns)
{
    uint64_t v = 12345;
    char err[128] = "";
    int rc = regpar_parse_duration(text, &v, err, sizeof(err));
    if (rc != 0 || v != expected_ns) {
        fprintf(stderr, "duration '%s': rc %d value %" PRIu64 " (expected %" PRIu64 ") %s\n", text,
                rc, v, expected_ns, err);
        unit_failures++;
    }
}

static void duration_bad(const char *text, const char *reason)
{
    uint64_t v = 12345;
    char err[128] = "";
    int rc = regpar_parse_duration(text, &v, err, sizeof(err));
    if (rc != -1 || v != 12345 || !strstr(err, reason)) {
        fprintf(stderr, "duration '%s': rc %d, message '%s' (expected '%s')\n",
                text ? text : "(null)", rc, err, reason);
        unit_failures++;
    }
}

static void format_is(uint64_t value, const char *expected)
{
    char buf[32];
    int n = regpar_format_size(value, buf, sizeof(buf));
    if (n != (int)strlen(expected) || strcmp(buf, expected)) {
        fprintf(stderr, "format %" PRIu64 ": '%s' (expected '%s')\n", value, buf, expected);
        unit_failures++;
    }
}

static void test_sizes(void)
{
    size_ok("0", 0);
    size_ok("7", 7);
    size_ok("4096", 4096);
    size_ok("64K", 65536);
    size_ok("64k", 65536);
    size_ok("2M", 2097152);
    size_ok("1G", 1073741824);
    size_ok("3T", 3ULL << 40);
    size_ok(" 2M ", 2097152);
    size_ok("\t128K\n", 131072);
    size_ok("007", 7);
    size_ok("18446744073709551615", UINT64_MAX);
    size_ok("16777215T", 16777215ULL << 40);

    size_bad(NULL, "empty");
    size_bad("", "empty");
    size_bad("   ", "empty");
    size_bad("64KB", "unknown suffix 'KB'");
    size_bad("64Q", "unknown suffix 'Q'");
    size_bad("64KiB", "unknown suffix");
    size_bad("-1", "negative");
    size_bad("-0", "negative");
    size_bad("+1", "not a number");
    size_bad("K", "not a number");
    size_bad("abc", "not a number");
    size_bad("1.5M", "fractions are not accepted");
    size_bad("1,5M", "fractions are not accepted");
    size_bad("12 M", "blank between");
    size_bad("0x10", "hexadecimal");
    size_bad("0x", "hexadecimal");
    size_bad("99999999999T", "too large");
    size_bad("16777216T", "too large");
    size_bad("18446744073709551616", "too large");
    size_bad("99999999999999999999999", "too large");
    size_bad("1e6", "unknown suffix 'e6'");
    size_bad("2MM", "unknown suffix 'MM'");

    /* The message quotes the input, for the adapter to prefix the name. */
    char err[128];
    uint64_t v;
    regpar_parse_size("64KB", &v, err, sizeof(err));
    UNIT_CHECK(0 == strncmp(err, "'64KB': ", 8));
    /* A short buffer truncates, never overflows. */
    char tiny[6] = "xxxxx";
    UNIT_CHECK(-1 == regpar_parse_size("64KB", &v, tiny, sizeof(tiny)));
    UNIT_CHECK(strlen(tiny) == 5);
    UNIT_CHECK(-1 == regpar_parse_size("64KB", &v, NULL, 0));

    format_is(0, "0");
    format_is(7, "7");
    format_is(1023, "1023");
    format_is(1024, "1K");
    format_is(65536, "64K");
    format_is(1572864, "1536K");
    format_is(2097152, "2M");
    format_is(1ULL << 30, "1G");
    format_is(5ULL << 40, "5T");
    format_is(1ULL << 50, "1024T");
    format_is(4097, "4097");
    /* Round trip: format then parse gives the value back. */
    static const uint64_t values[] = {1, 4096, 12288, 3ULL << 30, (1ULL << 40) + 4096, UINT64_MAX};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        char buf[32];
        regpar_format_size(values[i], buf, sizeof(buf));
        size_ok(buf, values[i]);
    }
}

static void test_durations(void)
{
    const uint64_t S = 1000000000ULL;
    duration_ok("10", 10 * S);
    duration_ok("10s", 10 * S);
    duration_ok("500ms", 500000000ULL);
    duration_ok("250us", 250000ULL);
    duration_ok("42ns", 42);
    duration_ok("2m", 120 * S);
    duration_ok("1h", 3600 * S);
    duration_ok("1.5s", 1500000000ULL);
    duration_ok("0.25", 250000000ULL);
    duration_ok("1.5h", 5400 * S);
    duration_ok("0.001ms", 1000);
    duration_ok("1.9ns", 1); /* whole nanoseconds */
    duration_ok("0.1234567891s", 123456789);
    duration_ok(" 3s ", 3 * S);
    duration_ok("0", 0);
    duration_ok("18446744073ns", 18446744073ULL);

    duration_bad(NULL, "empty");
    duration_bad("", "empty");
    duration_bad("-1s", "negative");
    duration_bad("s", "not a number");
    duration_bad(".5s", "not a number");
    duration_bad("1.s", "digits expected");
    duration_bad("10 s", "blank between");
    duration_bad("10sec", "unknown unit 'sec'");
    duration_bad("10S", "unknown unit 'S'");
    duration_bad("10d", "unknown unit 'd'");
    duration_bad("1e3", "unknown unit");
    duration_bad("0x10", "hexadecimal");
    duration_bad("99999999999h", "too large");
    duration_bad("18446744074s", "too large");
    duration_bad("99999999999999999999999ns", "too large");
}

static void bool_is(const char *text, int expected)
{
    bool v = !expected;
    int rc = regpar_parse_bool(text, &v);
    if (expected < 0 ? rc != -1 : (rc != 0 || v != (expected == 1))) {
        fprintf(stderr, "bool '%s': rc %d value %d (expected %d)\n", text ? text : "(null)", rc, v,
                expected);
        unit_failures++;
    }
}

static void test_bools(void)
{
    static const char *const yes[] = {"on",   "ON", "yes",    "Yes", "true",
                                      "TRUE", "1",  "enable", " on "};
    static const char *const no[] = {"off", "Off", "no", "NO", "false", "False", "0", "disable"};
    static const char *const bad[] = {"", "2", "-1", "y", "n", "onn", "enabled", "tru", "o n"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        bool_is(yes[i], 1);
    }
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        bool_is(no[i], 0);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        bool_is(bad[i], -1);
    }
    bool_is(NULL, -1);
}

int main(void)
{
    test_sizes();
    test_durations();
    test_bools();
    return unit_finish("test_size");
}
