#!/bin/sh
# Embed a rules file in C (the component's default rules, rules/default.rules):
#   scripts/rules-to-c.sh FILE > coll_bufpool_default_rules.c
# The component parses the text at MPI_Init, so it never depends on finding
# the file at run time; the file itself is installed for people to read.
set -eu
in=${1:?usage: rules-to-c.sh FILE}
printf '/* Generated from %s by scripts/rules-to-c.sh: do not edit. */\n' "$(basename "$in")"
printf '#include "coll_bufpool_rules.h"\n\n'
printf 'const char bufpool_default_rules_text[] =\n'
# Every line as a string literal: backslashes and quotes escaped.
sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/    "/' -e 's/$/\\n"/' "$in"
printf '    "";\n'
printf 'const size_t bufpool_default_rules_len = sizeof(bufpool_default_rules_text) - 1;\n'
