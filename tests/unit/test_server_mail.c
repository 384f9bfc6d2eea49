/*
 * test_server_mail.c - unit tests of the e-mail settings' checks
 * (src/server/mail.c; issue 22): what may be a relay's name and an
 * address, so that nothing that reaches an SMTP command or a header can
 * carry a line break, and every refusal naming its field and the limit.
 * Sending is tested over real SMTP by tests/scripts/serve_mail.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "server/mail.h"

static void relay(const char *text, int want)
{
    sb_error err;
    int rc = sb__mail_check_server("smtp_server", text, &err);
    if (want == SB_OK && rc != SB_OK)
        fail_msg("\"%s\" refused: %s", text, err.message);
    if (want != SB_OK) {
        if (rc != SB_INVALID)
            fail_msg("\"%s\" taken as a relay", text);
        assert_string_equal(err.field, "smtp_server");
    }
}

static void test_relay_names(void **state)
{
    (void)state;
    relay("smtp.example.test", SB_OK);
    relay("localhost", SB_OK);
    relay("127.0.0.1", SB_OK);
    relay("::1", SB_OK);
    relay("[::1]", SB_OK);
    relay("a-b.c9", SB_OK);
    relay("", SB_INVALID);
    relay("mail.example.test:25", SB_INVALID);
    relay("mail example", SB_INVALID);
    relay("-mail.example", SB_INVALID);
    relay("mail-.example", SB_INVALID);
    relay("mail..example", SB_INVALID);
    relay("mail.example.", SB_INVALID);
    relay("[127.0.0.1]", SB_INVALID);
    relay("mail\r\nRCPT TO:<x@y>", SB_INVALID);
    relay("smtp://mail.example", SB_INVALID);
    char label[80];
    memset(label, 'a', 63);
    label[63] = '\0';
    relay(label, SB_OK);
    memset(label, 'a', 64);
    label[64] = '\0';
    relay(label, SB_INVALID);
    char name[300];
    for (int i = 0; i < 63; i++)
        memcpy(name + 4 * i, "abc.", 4);
    memcpy(name + 252, "a", 2); /* 253 bytes */
    relay(name, SB_OK);
    memcpy(name + 253, "b", 2);
    relay(name, SB_INVALID);
}

static void addresses(const char *field, const char *text, int many, int want,
                      const char *words)
{
    sb_error err;
    int rc = sb__mail_check_addresses(field, text, many, &err);
    if (want == SB_OK && rc != SB_OK)
        fail_msg("\"%s\" refused: %s", text, err.message);
    if (want != SB_OK) {
        if (rc != SB_INVALID)
            fail_msg("\"%s\" taken as addresses", text);
        assert_string_equal(err.field, field);
        if (words != NULL && strstr(err.message, words) == NULL)
            fail_msg("\"%s\": \"%s\" does not say \"%s\"", text, err.message,
                     words);
    }
}

static void test_addresses(void **state)
{
    (void)state;
    addresses("from", "sqlbus@example.test", 0, SB_OK, NULL);
    addresses("from", "ops+sqlbus@[127.0.0.1]", 0, SB_OK, NULL);
    addresses("to", "a@example.test, b@example.test; c@example.test,", 1, SB_OK,
              NULL);
    addresses("from", "a@example.test, b@example.test", 0, SB_INVALID,
              "one e-mail address");
    addresses("from", "a@example.test,", 0, SB_INVALID, "one e-mail address");
    addresses("from", "sqlbus", 0, SB_INVALID, NULL);
    addresses("from", "@example.test", 0, SB_INVALID, NULL);
    addresses("from", "a@", 0, SB_INVALID, NULL);
    addresses("to", "", 1, SB_INVALID, "1 to 32");
    addresses("to", " , ;", 1, SB_INVALID, "1 to 32");
    addresses("to", "Ops <ops@example.test>", 1, SB_INVALID, NULL);
    addresses("to", "\"o p\"@example.test", 1, SB_INVALID, NULL);
    addresses("to", "ops@example.test\r\nBcc: spy@example.test", 1, SB_INVALID,
              NULL);
    addresses("to", "ops@example.test\nBcc: spy@example.test", 1, SB_INVALID,
              NULL);
    addresses("to", "op\xc3\xa9@example.test", 1, SB_INVALID, "ASCII");
    addresses("to", "a@b@example.test", 1, SB_INVALID, NULL);
    addresses("to", "ops@exa_mple.test", 1, SB_INVALID, NULL);
    addresses("to", "ops@[not-an-ip]", 1, SB_INVALID, NULL);
    char local[80];
    memset(local, 'l', 65);
    memcpy(local + 65, "@example.test", 14);
    addresses("to", local, 1, SB_INVALID, NULL);
    char list[2000] = "";
    for (int i = 0; i < 32; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list),
                 "r%d@example.test,", i);
    addresses("to", list, 1, SB_OK, NULL);
    snprintf(list + strlen(list), sizeof list - strlen(list),
             "r32@example.test");
    addresses("to", list, 1, SB_INVALID, "at most 32");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_relay_names),
        cmocka_unit_test(test_addresses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
