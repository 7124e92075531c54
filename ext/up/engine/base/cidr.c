#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include "base/cidr.h"

up_cidr_result_t up_cidr_parse(const char *text, up_cidr_t *out)
{
    char addr[INET6_ADDRSTRLEN + 8];
    const char *slash = strchr(text, '/');
    size_t len = slash != NULL ? (size_t)(slash - text) : strlen(text);
    if (len >= INET6_ADDRSTRLEN)
        return UP_CIDR_BAD_ADDRESS;
    memcpy(addr, text, len);
    addr[len] = '\0';
    if (inet_pton(AF_INET, addr, out->addr) == 1)
        out->family = AF_INET;
    else if (inet_pton(AF_INET6, addr, out->addr) == 1)
        out->family = AF_INET6;
    else
        return UP_CIDR_BAD_ADDRESS;
    int max_bits = out->family == AF_INET ? 32 : 128;
    out->bits = max_bits;
    if (slash != NULL) {
        char *end;
        long bits = strtol(slash + 1, &end, 10);
        if (slash[1] == '\0' || *end != '\0' || bits < 0 || bits > max_bits)
            return UP_CIDR_BAD_PREFIX;
        out->bits = (int)bits;
    }
    return UP_CIDR_OK;
}

int up_cidr_contains(const up_cidr_t *prefix, const up_cidr_t *ip)
{
    if (prefix->family != ip->family)
        return 0;
    int bytes = prefix->bits / 8, rest = prefix->bits % 8;
    if (memcmp(prefix->addr, ip->addr, (size_t)bytes) != 0)
        return 0;
    if (rest == 0)
        return 1;
    unsigned char mask = (unsigned char)(0xff << (8 - rest));
    return (prefix->addr[bytes] & mask) == (ip->addr[bytes] & mask);
}
