/* Which rows a block of dot products in lanes should take (PERFORMANCE.md, "Rows of a block
 * from separate parts"; spec/padding.md, "Dot products in lanes").
 *
 * A matrix-vector product y = A x over TOTAL doubles of A, for row lengths K of 64 to 4096,
 * each cell summed in 16 lanes (vectors of 4 doubles) as the AVX variant prints it, timed in
 * three forms, best of REPS calls each, in ms:
 *   one     one row at a time;
 *   adj     two adjacent rows per block (the printed kernel before the change);
 *   parts   two rows per block from the two halves of the rows (rows b and b + M/2).
 * A is in huge pages where the kernel allows (as bench/run's harness asks), so the TLB does not
 * decide. Every form computes the same cells with the same operations.
 *
 *   cc -O3 -march=native -ffp-contract=off bench/lane_rows.c -o lane_rows
 *   ./lane_rows 16777216 8     # 128 MiB, streamed from memory
 *   ./lane_rows 4194304 20     # 32 MiB
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

typedef double v4 __attribute__((vector_size(32)));

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static v4 load(const double *p)
{
    v4 v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}

static double combine(v4 a, v4 b, v4 c, v4 d)
{
    a += b;
    c += d;
    a += c;
    return (a[0] + a[1]) + (a[2] + a[3]);
}

/* Rows r0 and r1 (r1 < 0: r0 only) of A, in lanes. */
static inline void rows(const double *restrict A, const double *restrict x, double *restrict y,
                        long K, long r0, long r1)
{
    v4 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0}, t0 = {0}, t1 = {0}, t2 = {0}, t3 = {0};
    const double *a = A + r0 * K, *b = A + (r1 < 0 ? r0 : r1) * K;
    for (long k = 0; k < K; k += 16) {
        v4 x0 = load(x + k), x1 = load(x + k + 4), x2 = load(x + k + 8), x3 = load(x + k + 12);
        s0 += load(a + k) * x0;
        s1 += load(a + k + 4) * x1;
        s2 += load(a + k + 8) * x2;
        s3 += load(a + k + 12) * x3;
        if (r1 >= 0) {
            t0 += load(b + k) * x0;
            t1 += load(b + k + 4) * x1;
            t2 += load(b + k + 8) * x2;
            t3 += load(b + k + 12) * x3;
        }
    }
    y[r0] = combine(s0, s1, s2, s3);
    if (r1 >= 0)
        y[r1] = combine(t0, t1, t2, t3);
}

__attribute__((noinline)) static void one(const double *A, const double *x, double *y, long M, long K)
{
    for (long i = 0; i < M; i++)
        rows(A, x, y, K, i, -1);
}

__attribute__((noinline)) static void adj(const double *A, const double *x, double *y, long M, long K)
{
    for (long i = 0; i < M; i += 2)
        rows(A, x, y, K, i, i + 1);
}

__attribute__((noinline)) static void parts(const double *A, const double *x, double *y, long M, long K)
{
    for (long i = 0; i < M / 2; i++)
        rows(A, x, y, K, i, i + M / 2);
}

int main(int argc, char **argv)
{
    long total = argc > 1 ? atol(argv[1]) : 1L << 24;
    int reps = argc > 2 ? atoi(argv[2]) : 8;
    if (total < 8192 || total > (1L << 30) || reps < 1) {
        fprintf(stderr, "usage: lane_rows TOTAL(8192..2^30 doubles) REPS\n");
        return 2;
    }
    size_t bytes = ((size_t)total * 8 + (1 << 21) - 1) & ~(size_t)((1 << 21) - 1);
    double *A = aligned_alloc(1 << 21, bytes), *x = aligned_alloc(64, 4096 * 8),
           *y = aligned_alloc(64, (size_t)total / 64 * 8);
    if (!A || !x || !y)
        return 1;
    (void)madvise(A, bytes, MADV_HUGEPAGE);
    for (long i = 0; i < total; i++)
        A[i] = (i % 7) * 0.25;
    for (int i = 0; i < 4096; i++)
        x[i] = (i % 5) * 0.5;
    void (*form[])(const double *, const double *, double *, long, long) = {one, adj, parts};
    const char *name[] = {"one", "adj", "parts"};
    static const long ks[] = {64, 128, 256, 512, 1024, 4096};
    printf("%ld doubles (%ld MiB), ms, best of %d\n", total, total * 8 >> 20, reps);
    for (int j = 0; j < 6; j++) {
        long K = ks[j], M = total / K;
        double best[3] = {1e30, 1e30, 1e30};
        for (int r = 0; r < reps; r++)
            for (int f = 0; f < 3; f++) {
                double t = now();
                form[f](A, x, y, M, K);
                t = now() - t;
                if (t < best[f])
                    best[f] = t;
            }
        printf("K = %4ld:", K);
        for (int f = 0; f < 3; f++)
            printf("  %s %.3f", name[f], best[f] * 1e3);
        printf("\n");
    }
    return 0;
}
