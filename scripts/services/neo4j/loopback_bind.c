/* LD_PRELOAD shim: a bind() to the wildcard address binds to loopback instead.
 *
 * FalkorDB's Bolt listener (a Redis module) binds every interface and has no option to
 * choose one; this keeps the test server on 127.0.0.1 (IPv4) and ::ffff:127.0.0.1
 * (IPv4-mapped, for dual-stack IPv6 sockets), so it is reachable from this machine only.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real_bind;
    if (!real_bind) real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
        struct sockaddr_in in4;
        memcpy(&in4, addr, sizeof in4);
        if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
            in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            return real_bind(fd, (const struct sockaddr *)&in4, sizeof in4);
        }
    } else if (addr && addr->sa_family == AF_INET6 &&
               len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        struct sockaddr_in6 in6;
        memcpy(&in6, addr, sizeof in6);
        if (IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) {
            inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
            return real_bind(fd, (const struct sockaddr *)&in6, sizeof in6);
        }
    }
    return real_bind(fd, addr, len);
}
