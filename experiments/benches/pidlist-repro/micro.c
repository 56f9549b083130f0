// Microbenchmarks of this machine: cache-line ping-pong between CPUs,
// pipe ping-pong (wakeup + switch) on one CPU and across two, a null
// syscall, and open/read/close of a cgroup file.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }

static _Alignas(64) atomic_long line;
static long N;
static void *pong_line(void *a) { pin(1); for (long i = 1; i < 2 * N; i += 2) { while (atomic_load(&line) != i) {} atomic_store(&line, i + 1); } return 0; }

static int p1[2], p2[2]; static int pong_cpu;
static void *pong_pipe(void *a) { pin(pong_cpu); char c; for (long i = 0; i < N; i++) { if (read(p1[0], &c, 1) != 1) exit(1); if (write(p2[1], &c, 1) != 1) exit(1); } return 0; }

static double pipe_pp(int cpu_a, int cpu_b, long n) {
    N = n; pong_cpu = cpu_b; pipe(p1); pipe(p2); pthread_t t; pin(cpu_a);
    pthread_create(&t, 0, pong_pipe, 0); char c = 'x';
    double t0 = now();
    for (long i = 0; i < n; i++) { write(p1[1], &c, 1); read(p2[0], &c, 1); }
    double dt = now() - t0; pthread_join(t, 0); close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
    return dt / n / 2 * 1e9;  // ns per one-way handoff
}

int main(int argc, char **argv) {
    const char *cgfile = argc > 1 ? argv[1] : 0;
    for (int rep = 0; rep < 3; rep++) {
        // line ping-pong across CPUs 0 and 1
        N = 2000000; atomic_store(&line, 0); pthread_t t; pin(0);
        pthread_create(&t, 0, pong_line, 0);
        double t0 = now();
        for (long i = 0; i < 2 * N; i += 2) { while (atomic_load(&line) != i) {} atomic_store(&line, i + 1); }
        double dt = now() - t0; pthread_join(t, 0);
        printf("line_transfer_ns %.1f\n", dt / (2.0 * N) * 1e9);
        printf("pipe_same_cpu_ns %.0f\n", pipe_pp(0, 0, 200000));
        printf("pipe_cross_cpu_ns %.0f\n", pipe_pp(0, 1, 200000));
        long n = 5000000; t0 = now();
        for (long i = 0; i < n; i++) syscall(SYS_getppid);
        printf("syscall_ns %.1f\n", (now() - t0) / n * 1e9);
        if (cgfile) {
            static char buf[65536]; n = 200000; t0 = now();
            for (long i = 0; i < n; i++) { int fd = open(cgfile, O_RDONLY); while (read(fd, buf, sizeof buf) > 0) {} close(fd); }
            printf("cgroup_read_ns %.0f\n", (now() - t0) / n * 1e9);
        }
    }
    return 0;
}
