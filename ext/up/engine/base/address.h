#ifndef UP_ADDRESS_H
#define UP_ADDRESS_H

#include <stddef.h>

/* Writes addr's IP as text into host (IPv6 in brackets when bracket_ipv6, as in a URL) and its
 * port into *port; host is "" for other families. */
struct sockaddr;
void up_format_address(const struct sockaddr *addr, char *host, size_t host_size,
                       unsigned *port, int bracket_ipv6);

#endif
