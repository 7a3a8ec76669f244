/* Exit 0 when one process may read a sibling process's memory with
 * process_vm_readv (CMA), as the ranks of a job are siblings, else 1 with
 * the reason: coll_node.sh tests bcast and allgather node_cma's
 * single-copy reads only where this machine allows what they need (another user, Yama's
 * ptrace_scope 1 or above, or a container's seccomp filter forbid it). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
#if defined(__linux__)
    int to_reader[2], hold[2];
    if (0 != pipe(to_reader) || 0 != pipe(hold)) {
        perror("cma_probe: pipe");
        return 1;
    }
    static volatile uint64_t value = 0x636d6170726f6265ULL; /* "cmaprobe" */
    const pid_t owner = fork();
    if (0 == owner) {
        /* Publishes where value is, then stays until the parent lets go. */
        const uint64_t where = (uint64_t)(uintptr_t)&value;
        char c;
        close(to_reader[0]);
        close(hold[1]);
        if (sizeof(where) != write(to_reader[1], &where, sizeof(where))) {
            _exit(1);
        }
        (void)!read(hold[0], &c, 1);
        _exit(0);
    }
    close(to_reader[1]);
    close(hold[0]);
    const pid_t reader = fork();
    if (0 == reader) {
        uint64_t where = 0, seen = 0;
        if (sizeof(where) != read(to_reader[0], &where, sizeof(where))) {
            _exit(1);
        }
        struct iovec local = {.iov_base = &seen, .iov_len = sizeof(seen)};
        struct iovec remote = {.iov_base = (void *)(uintptr_t)where, .iov_len = sizeof(seen)};
        if ((ssize_t)sizeof(seen) != process_vm_readv(owner, &local, 1, &remote, 1, 0)) {
            fprintf(stderr, "cma_probe: process_vm_readv of a sibling: %s\n", strerror(errno));
            _exit(1);
        }
        _exit(seen == value ? 0 : 1);
    }
    int status = 1;
    (void)waitpid(reader, &status, 0);
    close(hold[1]);
    (void)waitpid(owner, NULL, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
#else
    fprintf(stderr, "cma_probe: no process_vm_readv on this system\n");
    return 1;
#endif
}
