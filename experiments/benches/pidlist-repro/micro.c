// Microbenchmarks of this machine: cache-line ping-pong between CPUs,
// pipe ping-pong (wakeup + switch) on one CPU and across two, a null
// syscall; given a v1 hierarchy's root, the cgroup operations of case 2:
// open/read/close of the cgroup.procs of an empty cgroup and of cgroups
// of 20 and 1000 sleeping processes (the build's cost per task is their
// difference), and one churner's mkdir, read of its empty `tasks` and
// rmdir, each timed alone (medians over the round). And what a wakeup
// costs the waker: a one-byte pipe write that wakes a reader blocked on
// the other CPU (idle there, or beside a busy loop), against one that
// wakes nobody (medians).
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

static volatile int hog_stop;
static void *hog(void *a) { pin(1); while (!hog_stop) {} return 0; }
static int cmp_long(const void *a, const void *b);
// Median wall time of a write() to a pipe: with `waiter`, one that wakes
// a thread blocked in read() on CPU 1 (it writes back; this thread on
// CPU 0 reads that before the next write, so the peer is asleep again).
static long write_ns(int waiter, long n) {
    long *w = malloc(n * sizeof *w); char c = 'x';
    N = n; pong_cpu = 1; pipe(p1); pipe(p2); pin(0); pthread_t t;
    if (waiter) pthread_create(&t, 0, pong_pipe, 0);
    for (long i = 0; i < n; i++) {
        struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
        write(p1[1], &c, 1);
        clock_gettime(CLOCK_MONOTONIC, &b);
        w[i] = (b.tv_sec - a.tv_sec) * 1000000000L + b.tv_nsec - a.tv_nsec;
        if (waiter) read(p2[0], &c, 1); else read(p1[0], &c, 1);
    }
    if (waiter) pthread_join(t, 0);
    close(p1[0]); close(p1[1]); close(p2[0]); close(p2[1]);
    qsort(w, n, sizeof *w, cmp_long); long m = w[n / 2]; free(w); return m;
}
static char path[4096];
static long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
static int cmp_long(const void *a, const void *b) { long x = *(const long *)a, y = *(const long *)b; return (x > y) - (x < y); }
static long median(long *v, long n) { qsort(v, n, sizeof *v, cmp_long); return v[n / 2]; }
static void must(int ok, const char *what) { if (!ok) { perror(what); exit(1); } }

// A cgroup under ROOT holding N sleeping processes (their pids in KIDS).
static void make_cgroup(const char *root, const char *name, int n, pid_t *kids) {
    snprintf(path, sizeof path, "%s/%s", root, name);
    must(mkdir(path, 0755) == 0, path);
    snprintf(path, sizeof path, "%s/%s/cgroup.procs", root, name);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) { for (;;) pause(); }
        must(p > 0, "fork");
        kids[i] = p;
        int fd = open(path, O_WRONLY); must(fd >= 0, path);
        char b[32]; int k = snprintf(b, sizeof b, "%d", p);
        must(write(fd, b, k) == k, path); close(fd);
    }
}
static void drop_cgroup(const char *root, const char *name, int n, pid_t *kids) {
    for (int i = 0; i < n; i++) { kill(kids[i], SIGKILL); waitpid(kids[i], 0, 0); }
    snprintf(path, sizeof path, "%s/%s", root, name);
    must(rmdir(path) == 0, path);
}
// Mean wall time of one open + read to EOF (64 KiB buffer) + close.
static double read_ns(const char *root, const char *name, long n) {
    static char buf[65536]; char f[4096];
    snprintf(f, sizeof f, "%s/%s/cgroup.procs", root, name);
    double t0 = now();
    for (long i = 0; i < n; i++) { int fd = open(f, O_RDONLY); must(fd >= 0, f); while (read(fd, buf, sizeof buf) > 0) {} close(fd); }
    return (now() - t0) / n * 1e9;
}
// One churner alone: mkdir, read the new cgroup's tasks, rmdir; medians.
static void churn(const char *root, long n) {
    static char buf[65536]; char d[4096], t[4200];
    long *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b), *c = malloc(n * sizeof *c);
    must(a && b && c, "malloc");
    for (long i = 0; i < n; i++) {
        snprintf(d, sizeof d, "%s/micro-churn-%ld", root, i % 64);
        snprintf(t, sizeof t, "%s/tasks", d);
        long t0 = ns(); must(mkdir(d, 0755) == 0, d);
        long t1 = ns(); int fd = open(t, O_RDONLY); must(fd >= 0, t); while (read(fd, buf, sizeof buf) > 0) {} close(fd);
        long t2 = ns(); must(rmdir(d) == 0, d);
        long t3 = ns();
        a[i] = t1 - t0; b[i] = t2 - t1; c[i] = t3 - t2;
    }
    printf("mkdir_ns %ld\ntasks_read_empty_ns %ld\nrmdir_ns %ld\n", median(a, n), median(b, n), median(c, n));
    free(a); free(b); free(c);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : 0;  // a v1 hierarchy's root, e.g. /tmp/cgt
    static pid_t kids20[20], kids1000[1000];
    if (root) {
        make_cgroup(root, "micro-0", 0, 0);
        make_cgroup(root, "micro-20", 20, kids20);
        make_cgroup(root, "micro-1000", 1000, kids1000);
    }
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
        long w0 = write_ns(0, 100000), w1 = write_ns(1, 100000);
        pthread_t h; hog_stop = 0; pthread_create(&h, 0, hog, 0); usleep(1000);
        long w2 = write_ns(1, 100000); hog_stop = 1; pthread_join(h, 0);
        printf("write_ns %ld; waking one on the other CPU: idle %ld, busy %ld (the waker's cost: %ld, %ld)\n",
               w0, w1, w2, w1 - w0, w2 - w0);
        if (root) {
            double r0 = read_ns(root, "micro-0", 100000), r20 = read_ns(root, "micro-20", 100000);
            double r1000 = read_ns(root, "micro-1000", 4000);
            printf("procs_read_0_ns %.0f\nprocs_read_20_ns %.0f\nprocs_read_1000_ns %.0f\n", r0, r20, r1000);
            printf("per_task_ns %.0f (20 tasks) %.0f (1000 tasks)\n", (r20 - r0) / 20, (r1000 - r0) / 1000);
            churn(root, 100000);
        }
    }
    if (root) {
        drop_cgroup(root, "micro-1000", 1000, kids1000);
        drop_cgroup(root, "micro-20", 20, kids20);
        drop_cgroup(root, "micro-0", 0, 0);
    }
    return 0;
}
