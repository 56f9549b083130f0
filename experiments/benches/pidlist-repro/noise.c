// noise.c SECONDS: spins reading CLOCK_MONOTONIC and records every gap
// between two reads longer than 1 us (the CPU was taken away: an
// interrupt, the tick, the host). Prints the gaps' count a second and
// their quantiles. Pin it (taskset) to measure one CPU.
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static long ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1000000000L + t.tv_nsec; }
static int cmp(const void *a, const void *b) { long x = *(long *)a, y = *(long *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    double secs = atof(argv[1]); long end = ns() + (long)(secs * 1e9), prev = ns(), n = 0, cap = 1 << 20;
    long *g = malloc(sizeof(long) * cap);
    long reads = 0;
    while (1) { long t = ns(); reads++; if (t - prev > 1000 && n < cap) g[n++] = t - prev; prev = t; if (t > end) break; }
    qsort(g, n, sizeof *g, cmp);
    long sum = 0; for (long i = 0; i < n; i++) sum += g[i];
    printf("%.0f s, %ld reads (%.0f ns each), %ld gaps > 1 us: %.0f a second, %.2f%% of the time; gap p10 %ld p50 %ld p90 %ld p99 %ld max %ld ns\n",
           secs, reads, secs * 1e9 / reads, n, n / secs, 100.0 * sum / (secs * 1e9), g[n / 10], g[n / 2], g[n * 9 / 10], g[n * 99 / 100], g[n - 1]);
    return 0;
}
