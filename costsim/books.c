/*
 * books.c - the price books costsim compares: every *.json of a folder
 * (by default the installed books), each parsed by the engine, with
 * what its file says about where its prices come from.
 */
#include "costsim_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "meter_util.h"

static int
by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
copy_string(json_t *root, const char *key, char *out, size_t n)
{
    const char *s = json_string_value(json_object_get(root, key));
    snprintf(out, n, "%s", s ? s : "");
}

/* The largest book file read. */
#define BOOK_MAX (1 << 20)

/* One book file: parsed by the engine, and its source and as_of. */
static int
load_book(const char *dir, const char *name, struct cs_book *b)
{
    char path[4096];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path)) {
        fprintf(stderr, "costsim: %s/%s: a path longer than %zu bytes\n", dir,
                name, sizeof(path) - 1);
        return -1;
    }
    snprintf(b->file, sizeof(b->file), "%s", name);
    /* The engine parses the file's own bytes (a duplicate key is its
     * error, not jansson's last value); the strings the engine does not
     * keep are read from the same bytes. */
    char *text;
    size_t len;
    struct meter_err me;
    if (meter_file_read(path, BOOK_MAX, &text, &len, &me) < 0) {
        fprintf(stderr, "costsim: %s\n", me.msg);
        return -1;
    }
    struct pricing_err e;
    b->book = pricing_book_parse(text, len, path, &e);
    json_t *root = b->book ? json_loadb(text, len, 0, NULL) : NULL;
    if (!b->book)
        fprintf(stderr, "costsim: %s\n", e.msg);
    copy_string(root, "source", b->source, sizeof(b->source));
    copy_string(root, "as_of", b->as_of, sizeof(b->as_of));
    copy_string(root, "name", b->name, sizeof(b->name));
    free(text);
    json_decref(root);
    return b->book ? 0 : -1;
}

/* Every *.json of dir (NULL: the installed books), in name order. */
int
cs_load_books(const char *dir, struct cs_book **out, size_t *n)
{
    char installed[4096];
    struct meter_err me;
    if (!dir) {
        if (meter_data_dir("books", installed, sizeof(installed), &me) < 0) {
            fprintf(stderr,
                    "costsim: cannot find the installed books (%s); "
                    "give --books DIR\n",
                    me.msg);
            return -1;
        }
        dir = installed;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "costsim: cannot open the books directory '%s': %s\n",
                dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    size_t k = 0, cap = 0;
    int rc = -1;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0)
            continue;
        if (k == cap) {
            cap = cap ? 2 * cap : 32;
            char **p = realloc(names, cap * sizeof(*p));
            if (!p)
                goto oom;
            names = p;
        }
        if (!(names[k] = strdup(de->d_name)))
            goto oom;
        k++;
    }
    if (k == 0) {
        fprintf(stderr, "costsim: no price book (*.json) in '%s'\n", dir);
        goto out;
    }
    qsort(names, k, sizeof(*names), by_name);
    if (!(*out = calloc(k, sizeof(**out))))
        goto oom;
    *n = k;
    for (size_t i = 0; i < k; i++)
        if (load_book(dir, names[i], &(*out)[i]) < 0)
            goto out;
    rc = 0;
    goto out;
oom:
    fprintf(stderr, "costsim: out of memory\n");
out:
    for (size_t i = 0; i < k; i++)
        free(names[i]);
    free(names);
    closedir(d);
    return rc;
}

void
cs_books_free(struct cs_book *b, size_t n)
{
    for (size_t i = 0; b && i < n; i++)
        pricing_book_free(b[i].book);
    free(b);
}
