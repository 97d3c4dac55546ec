/* LD_PRELOAD shim: an epoll_ctl(EPOLL_CTL_MOD) on an fd the kernel no longer watches adds it.
 *
 * FalkorDB 4.16.3's Bolt listener frees a client that sends GOODBYE (what every driver
 * sends when it closes a connection) and closes its socket without removing the socket's
 * READABLE event from Redis's event loop. The kernel drops a closed fd from the epoll set,
 * but the event loop still marks it as watched; when accept() hands the same fd number to
 * the next connection, the event loop asks for EPOLL_CTL_MOD, which fails with ENOENT, so
 * the new connection is never read: its handshake is never answered and its socket stays in
 * CLOSE-WAIT once the client gives up. The event loop meant "watch this fd for these
 * events", so an ENOENT from MOD is retried as ADD, which is exactly that.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sys/epoll.h>

typedef int (*epoll_ctl_fn)(int, int, int, struct epoll_event *);

int epoll_ctl(int epfd, int op, int fd, struct epoll_event *event) {
    static epoll_ctl_fn real_epoll_ctl;
    if (!real_epoll_ctl) real_epoll_ctl = (epoll_ctl_fn)dlsym(RTLD_NEXT, "epoll_ctl");
    int result = real_epoll_ctl(epfd, op, fd, event);
    if (result == -1 && op == EPOLL_CTL_MOD && errno == ENOENT) {
        return real_epoll_ctl(epfd, EPOLL_CTL_ADD, fd, event);
    }
    return result;
}
