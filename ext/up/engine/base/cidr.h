#ifndef UP_CIDR_H
#define UP_CIDR_H

/* IP address prefixes in CIDR notation (RFC 4632; RFC 4291 §2.3 for IPv6): "192.0.2.0/24",
 * "2001:db8::/32", or an address alone for all of its bits. Pure; any thread. */

/* An address and how many of its leading bits count. */
typedef struct up_cidr_t {
    int family; /* AF_INET or AF_INET6 */
    unsigned char addr[16];
    int bits;
} up_cidr_t;

typedef enum up_cidr_result_t {
    UP_CIDR_OK,
    UP_CIDR_BAD_ADDRESS, /* not a numeric IPv4 or IPv6 address */
    UP_CIDR_BAD_PREFIX   /* a length that is not digits, or past the address's bits */
} up_cidr_result_t;

/* Reads text, ADDRESS or ADDRESS/BITS, into *out (left partly written on an error). */
up_cidr_result_t up_cidr_parse(const char *text, up_cidr_t *out);
/* Whether the address of ip (all its bits: up_cidr_parse of an address alone) is within
 * prefix: of the same family, its leading prefix->bits bits the same. */
int up_cidr_contains(const up_cidr_t *prefix, const up_cidr_t *ip);

#endif
