#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include "base/address.h"

void up_format_address(const struct sockaddr *addr, char *host, size_t host_size,
                       unsigned *port, int bracket_ipv6)
{
    char ip[INET6_ADDRSTRLEN] = "";
    *port = 0;
    if (addr != NULL && addr->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
        inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
        *port = ntohs(in->sin_port);
    } else if (addr != NULL && addr->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
        inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
        *port = ntohs(in6->sin6_port);
    }
    if (bracket_ipv6 && strchr(ip, ':') != NULL)
        snprintf(host, host_size, "[%s]", ip);
    else
        snprintf(host, host_size, "%s", ip);
}
