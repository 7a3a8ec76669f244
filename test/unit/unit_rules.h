/*
 * The default rules (rules/default.rules, compiled into the decision
 * library) parsed once, for unit tests that decide as the component does.
 */
#ifndef BUFPOOL_UNIT_RULES_H
#define BUFPOOL_UNIT_RULES_H

#include "coll_bufpool_rules.h"
#include "unit.h"

static inline const bufpool_rules_t *unit_default_rules(void)
{
    static bufpool_rules_t rules;
    static int parsed;
    if (!parsed) {
        char err[256] = "";
        bufpool_rules_init(&rules);
        int rc = bufpool_rules_parse(&rules, bufpool_default_rules_text, bufpool_default_rules_len,
                                     BUFPOOL_DEFAULT_RULES_NAME, err, sizeof(err));
        if (0 != rc) {
            fprintf(stderr, "the default rules do not parse: %s\n", err);
        }
        UNIT_REQUIRE(0 == rc);
        parsed = 1;
    }
    return &rules;
}

#endif /* BUFPOOL_UNIT_RULES_H */
