/*
 * replay.c - run a libFuzzer target over its corpus without libFuzzer, so
 * every build (any compiler, any sanitizer) replays the seeds in ctest.
 *
 *     fuzz_NAME_replay DIR_OR_FILE...
 *
 * Each argument is a corpus directory (every regular file in it, in name
 * order) or a single file. Each input is read into a buffer of exactly its
 * size and passed to LLVMFuzzerTestOneInput. Exit status 1 when an argument
 * is missing or unreadable or when no file ran at all, so a replay cannot
 * pass silently; a failed invariant aborts inside the target.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Read a whole file; *out is malloc'd (at least 1 byte). 0 on success. */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    size_t cap = 4096, n = 0;
    uint8_t *buf = malloc(cap);
    while (buf != NULL) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0 || n < cap) {
            if (ferror(f)) {
                free(buf);
                buf = NULL;
            }
            if (feof(f) || buf == NULL)
                break;
            continue;
        }
        uint8_t *bigger = realloc(buf, cap * 2);
        if (bigger == NULL) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    fclose(f);
    if (buf == NULL)
        return -1;
    /* Exact size, so an overread by the target is caught by ASan. */
    uint8_t *exact = malloc(n ? n : 1);
    if (exact == NULL) {
        free(buf);
        return -1;
    }
    memcpy(exact, buf, n);
    free(buf);
    *out = exact;
    *len = n;
    return 0;
}

static int run_file(const char *path, long *count)
{
    uint8_t *data;
    size_t len;
    if (read_file(path, &data, &len) != 0) {
        fprintf(stderr, "replay: cannot read %s: %s\n", path, strerror(errno));
        return -1;
    }
    LLVMFuzzerTestOneInput(data, len);
    free(data);
    (*count)++;
    return 0;
}

static int run_dir(const char *dir, long *count)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) {
        fprintf(stderr, "replay: cannot open corpus directory %s: %s\n", dir,
                strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        struct stat st;
        if (w > 0 && (size_t)w < sizeof path && stat(path, &st) == 0 &&
            S_ISREG(st.st_mode) && rc == 0) {
            if (run_file(path, count) != 0)
                rc = -1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
        return 1;
    }
    long count = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
            return 1;
        }
        int rc = S_ISDIR(st.st_mode) ? run_dir(argv[i], &count)
                                     : run_file(argv[i], &count);
        if (rc != 0)
            return 1;
    }
    if (count == 0) {
        fprintf(stderr, "replay: no corpus files found in %s\n", argv[1]);
        return 1;
    }
    printf("replay: %ld file(s) ran without failure\n", count);
    return 0;
}
