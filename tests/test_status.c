/* tests/test_status.c: cask_status_string gives every status its own readable name. */
#include <criterion/criterion.h>
#include <string.h>

#include "cask/cask.h"

Test(status, every_status_has_a_non_empty_name)
{
    for (int s = 0; s < CASK_STATUS_COUNT_; s++) {
        const char *name = cask_status_string((cask_status)s);
        cr_assert_not_null(name, "status %d has no name", s);
        cr_assert_gt(strlen(name), 0, "status %d has an empty name", s);
    }
}

Test(status, every_status_has_a_distinct_name)
{
    for (int a = 0; a < CASK_STATUS_COUNT_; a++)
        for (int b = a + 1; b < CASK_STATUS_COUNT_; b++)
            cr_assert_str_neq(cask_status_string((cask_status)a),
                              cask_status_string((cask_status)b),
                              "statuses %d and %d share the name \"%s\"", a, b,
                              cask_status_string((cask_status)a));
}

Test(status, no_known_status_is_named_unknown)
{
    for (int s = 0; s < CASK_STATUS_COUNT_; s++)
        cr_assert_str_neq(cask_status_string((cask_status)s), "unknown status",
                          "status %d is named like an unknown one", s);
}

Test(status, unknown_values_are_named_unknown_status)
{
    const int unknown[] = { CASK_STATUS_COUNT_, CASK_STATUS_COUNT_ + 1, 1000, -1, -1000 };
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        cr_assert_str_eq(cask_status_string((cask_status)unknown[i]), "unknown status",
                         "value %d", unknown[i]);
}

Test(status, ok_is_zero)
{
    cr_assert_eq(CASK_OK, 0);
}
