/* Tests for CIDR prefixes (base/cidr.h): what parses, what is refused and why, and which
 * addresses a prefix holds, at and around its boundary bits, for IPv4 and IPv6. */

#include <arpa/inet.h>
#include "base/cidr.h"
#include "test.h"

static void test_parse(void)
{
    static const struct {
        const char *text;
        up_cidr_result_t result;
        int family, bits;
    } cases[] = {
        {"10.0.0.0/8", UP_CIDR_OK, AF_INET, 8},
        {"192.0.2.1", UP_CIDR_OK, AF_INET, 32},
        {"0.0.0.0/0", UP_CIDR_OK, AF_INET, 0},
        {"192.0.2.0/32", UP_CIDR_OK, AF_INET, 32},
        {"2001:db8::/32", UP_CIDR_OK, AF_INET6, 32},
        {"::1", UP_CIDR_OK, AF_INET6, 128},
        {"::/128", UP_CIDR_OK, AF_INET6, 128},
        {"10.0.0.0/33", UP_CIDR_BAD_PREFIX, 0, 0},
        {"::/129", UP_CIDR_BAD_PREFIX, 0, 0},
        {"10.0.0.0/", UP_CIDR_BAD_PREFIX, 0, 0},
        {"10.0.0.0/-1", UP_CIDR_BAD_PREFIX, 0, 0},
        {"10.0.0.0/8x", UP_CIDR_BAD_PREFIX, 0, 0},
        {"10.0.0/8", UP_CIDR_BAD_ADDRESS, 0, 0},
        {"", UP_CIDR_BAD_ADDRESS, 0, 0},
        {"localhost", UP_CIDR_BAD_ADDRESS, 0, 0},
        {"[::1]", UP_CIDR_BAD_ADDRESS, 0, 0},
        {"1111:2222:3333:4444:5555:6666:7777:8888:9999/8", UP_CIDR_BAD_ADDRESS, 0, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        up_cidr_t c;
        up_cidr_result_t r = up_cidr_parse(cases[i].text, &c);
        CHECK(r == cases[i].result, "%s: result %d, not %d", cases[i].text, r, cases[i].result);
        if (r == UP_CIDR_OK && cases[i].result == UP_CIDR_OK)
            CHECK(c.family == cases[i].family && c.bits == cases[i].bits, "%s: family %d, %d bits",
                  cases[i].text, c.family, c.bits);
    }
}

static int contains(const char *prefix, const char *ip)
{
    up_cidr_t p, a;
    if (up_cidr_parse(prefix, &p) != UP_CIDR_OK || up_cidr_parse(ip, &a) != UP_CIDR_OK)
        return -1;
    return up_cidr_contains(&p, &a);
}

static void test_contains(void)
{
    static const struct {
        const char *prefix, *ip;
        int in;
    } cases[] = {
        {"10.0.0.0/8", "10.255.255.255", 1},
        {"10.0.0.0/8", "11.0.0.0", 0},
        {"192.0.2.0/25", "192.0.2.127", 1}, /* a boundary inside a byte */
        {"192.0.2.0/25", "192.0.2.128", 0},
        {"192.0.2.128/25", "192.0.2.128", 1},
        {"192.0.2.7", "192.0.2.7", 1},
        {"192.0.2.7", "192.0.2.6", 0},
        {"0.0.0.0/0", "203.0.113.9", 1},
        {"2001:db8::/32", "2001:db8:ffff::1", 1},
        {"2001:db8::/32", "2001:db9::1", 0},
        {"2001:db8::/33", "2001:db8:7fff::1", 1},
        {"2001:db8::/33", "2001:db8:8000::1", 0},
        {"::1", "::1", 1},
        {"::/0", "10.0.0.1", 0}, /* families never mix */
        {"0.0.0.0/0", "::ffff:10.0.0.1", 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        CHECK(contains(cases[i].prefix, cases[i].ip) == cases[i].in, "%s holds %s: %d",
              cases[i].prefix, cases[i].ip, cases[i].in);
}

int main(void)
{
    test_parse();
    test_contains();
    return test_report("cidr");
}
