// Case-2-style reproducer for a named v1 hierarchy: S seed cgroups of T
// sleeping tasks, R readers of random seeds' cgroup.procs, C churners
// (mkdir, read tasks, rmdir). Prints reads and churn cycles per window.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *root;
static int S, T, R, C, secs, window;
static atomic_long reads, cycles;
static atomic_int stop;

static void *reader(void *arg) {
    unsigned seed = (unsigned)(long)arg * 2654435761u + 1;
    char path[256];
    static __thread char buf[65536];
    while (!stop) {
        int i = rand_r(&seed) % S;
        snprintf(path, sizeof path, "%s/s%d/cgroup.procs", root, i);
        int fd = open(path, O_RDONLY);
        if (fd < 0) { perror(path); exit(1); }
        while (read(fd, buf, sizeof buf) > 0) {}
        close(fd);
        reads++;
    }
    return 0;
}

static void *churner(void *arg) {
    long id = (long)arg;
    char dir[256], tasks[300];
    static __thread char buf[65536];
    for (long n = 0; !stop; n++) {
        snprintf(dir, sizeof dir, "%s/c%ld_%ld", root, id, n);
        if (mkdir(dir, 0755)) { perror(dir); exit(1); }
        snprintf(tasks, sizeof tasks, "%s/tasks", dir);
        int fd = open(tasks, O_RDONLY);
        if (fd < 0) { perror(tasks); exit(1); }
        while (read(fd, buf, sizeof buf) > 0) {}
        close(fd);
        while (rmdir(dir)) { if (errno != EBUSY) { perror(dir); exit(1); } }
        cycles++;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 8) { fprintf(stderr, "usage: %s ROOT S T R C SECS WINDOW\n", argv[0]); return 2; }
    root = argv[1]; S = atoi(argv[2]); T = atoi(argv[3]); R = atoi(argv[4]); C = atoi(argv[5]);
    secs = atoi(argv[6]); window = atoi(argv[7]);
    pid_t *kids = calloc((size_t)S * T, sizeof *kids);
    char path[256];
    for (int i = 0; i < S; i++) {
        snprintf(path, sizeof path, "%s/s%d", root, i);
        mkdir(path, 0755);
        snprintf(path, sizeof path, "%s/s%d/cgroup.procs", root, i);
        for (int j = 0; j < T; j++) {
            pid_t p = fork();
            if (p == 0) { for (;;) pause(); }
            kids[i * T + j] = p;
            FILE *f = fopen(path, "w");
            fprintf(f, "%d\n", p);
            if (fclose(f)) { perror(path); return 1; }
        }
    }
    pthread_t *th = calloc(R + C, sizeof *th);
    for (long i = 0; i < R; i++) pthread_create(&th[i], 0, reader, (void *)i);
    for (long i = 0; i < C; i++) pthread_create(&th[R + i], 0, churner, (void *)i);
    long lr = 0, lc = 0;
    int mk = open("/sys/kernel/tracing/trace_marker", O_WRONLY);
    for (int w = 0; w < secs / window; w++) {
        if (mk >= 0) dprintf(mk, "window %d start\n", w);
        sleep(window);
        long r = reads, c = cycles;
        printf("window %d reads %ld cycles %ld\n", w, r - lr, c - lc);
        fflush(stdout);
        lr = r; lc = c;
    }
    if (mk >= 0) dprintf(mk, "window end\n");
    stop = 1;
    for (int i = 0; i < R + C; i++) pthread_join(th[i], 0);
    for (int i = 0; i < S * T; i++) kill(kids[i], SIGKILL);
    while (wait(0) > 0) {}
    for (int i = 0; i < S; i++) { snprintf(path, sizeof path, "%s/s%d", root, i); rmdir(path); }
    return 0;
}
