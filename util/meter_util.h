/*
 * meter_util.h - what every module above pricing/ shares: the error
 * convention, one growable buffer with a cap, one string hash and string
 * table, escaping for HTML and URLs, one time parser, one capped file
 * reader, and where the installed data (migrations, price books) lives.
 *
 * No library beyond libc and pricing/; nothing here prints. Functions
 * that can fail return 0 on success and -1 on failure with a message in
 * the caller's struct meter_err (docs/architecture.md, "Errors").
 * Nothing here keeps global state: every function is thread-safe on
 * objects the calling thread owns.
 */
#ifndef METER_UTIL_H
#define METER_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- errors ------------------------------------------------------------ */

/* A message for the caller: lowercase, what failed first, values quoted,
 * no trailing period or newline, never a password. */
struct meter_err {
    char msg[1024];
};

/* Sets e->msg from a printf format, trailing newlines and spaces cut
 * (libpq's messages end in one); returns -1 so that callers can
 * `return meter_fail(e, ...)`. e may be NULL. */
int meter_fail(struct meter_err *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- growable buffer --------------------------------------------------- */

/*
 * Bytes that grow as they are appended, always NUL-terminated once
 * anything was added. max caps the length (0: no cap but memory); an
 * append past the cap or out of memory appends nothing and sets failed,
 * after which every append is ignored: check failed once, at the end.
 * Zero-initialize (struct meter_buf b = {.max = N}); release with
 * meter_buf_release, which leaves it empty and reusable.
 */
struct meter_buf {
    char *p;
    size_t len, cap, max;
    bool failed;
};

void meter_buf_add(struct meter_buf *b, const void *data, size_t n);
void meter_buf_str(struct meter_buf *b, const char *s);
void meter_buf_printf(struct meter_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Empties b, keeping its memory and its cap; clears failed. */
void meter_buf_reset(struct meter_buf *b);
void meter_buf_release(struct meter_buf *b);
/* Hands b's bytes (malloc'd, NUL-terminated) to the caller and empties
 * b; NULL, b left as it is, if b failed or memory runs out. */
char *meter_buf_detach(struct meter_buf *b, size_t *len);

/* ---- hashing and string tables ------------------------------------------ */

/* FNV-1a of a NUL-terminated string: the one hash of the modules. */
uint64_t meter_hash(const char *s);

/*
 * Interned strings: each distinct string gets a dense index 0, 1, ...
 * in the order first added; the table owns copies. Lookups are O(1).
 * Zero-initialize; release with meter_strtab_release. Not thread-safe.
 */
struct meter_strtab {
    char **str; /* str[index] */
    size_t n, cap;
    uint32_t *slots; /* open addressing: index + 1, 0 empty */
    size_t nslots;
};

/* The index of s, added if new (*added set if added may be non-NULL);
 * -1 when out of memory or past UINT32_MAX - 1 strings. */
long meter_strtab_intern(struct meter_strtab *t, const char *s, bool *added);
/* The index of s, or -1 if it was never added. */
long meter_strtab_find(const struct meter_strtab *t, const char *s);
/* Forgets every string, keeping the table usable. */
void meter_strtab_clear(struct meter_strtab *t);
void meter_strtab_release(struct meter_strtab *t);

/* ---- text -------------------------------------------------------------- */

/* Appends s HTML-escaped (& < > " ' as entities): safe in a text node
 * and in an attribute value quoted with either quote. The one HTML
 * escaper of the tree: the two below write the same to a file. */
void meter_buf_html(struct meter_buf *b, const char *s);
/* Writes s, or n bytes of s, HTML-escaped as meter_buf_html to f: for
 * documents written to a stream (reports/, costsim/). A NUL among the
 * n bytes is written as it is. Errors are f's (ferror). */
void meter_html_fputs(FILE *f, const char *s);
void meter_html_fwrite(FILE *f, const char *s, size_t n);
/* Appends s percent-encoded: every byte but RFC 3986's unreserved
 * (A-Z a-z 0-9 - . _ ~) as %XX, for a query value or a path segment. */
void meter_buf_urlencode(struct meter_buf *b, const char *s);
/* The same of len bytes, a NUL among them encoded %00: for showing a
 * client what it sent, whatever the bytes. */
void meter_buf_urlencode_n(struct meter_buf *b, const char *s, size_t len);
/* Appends v as a CSV field (RFC 4180): quoted when it holds a comma, a
 * quote, CR or LF, its quotes doubled. A field a spreadsheet would run
 * as a formula (starting = + - @, a tab or a CR) is quoted with a leading
 * apostrophe, shown and not evaluated; a plain decimal number
 * ("-?[0-9]+(.[0-9]+)?", a credit's -1.50) is a number and written as
 * it is. The one guard of every CSV of the project. */
void meter_buf_csv(struct meter_buf *b, const char *v);
/* The same field written to f: 0, or -1 if it could not be (no memory,
 * a write error). */
int meter_csv_write(FILE *f, const char *v);
/* Whether secrets a and b are equal, in time that depends on their
 * length only (not on where they differ): for tokens. */
bool meter_secret_equal(const char *a, const char *b);

/* Cuts the string s to at most max bytes, and further back to the end of
 * the last whole UTF-8 character; returns its new length. */
size_t meter_utf8_cut(char *s, size_t max);
/* Where s[0..len) stops being text: the offset of the first byte that
 * is not valid UTF-8 (an overlong form, a surrogate, a code point past
 * U+10FFFF, a sequence cut short) or that is a control character
 * (U+0000-U+001F, U+007F); len if all of it is text. For what a client
 * sends in a path or a query before it reaches a statement. */
size_t meter_text_check(const char *s, size_t len);

/* ---- time -------------------------------------------------------------- */

/* Latest second accepted anywhere: 9999-12-31T23:59:59Z. */
#define METER_TS_MAX 253402300799LL

/* Parses a time as Unix seconds ("1767225600", 0 to METER_TS_MAX) or
 * "YYYY-MM-DDTHH:MM:SSZ" (UTC, no fraction, no offset, no leap second,
 * 1970 to 9999) into *ts; -1 if it is neither. */
int meter_time_parse(const char *s, int64_t *ts);

/* Parses only the RFC 3339 form above; -1 if s is not it. */
int meter_time_parse_rfc3339(const char *s, int64_t *ts);

/* Parses a day "YYYY-MM-DD" (UTC) into the Unix second it starts; -1
 * if it is not one. */
int meter_day_parse(const char *s, int64_t *ts);

/* Parses a period "YYYY-MM" (1970-01 on); -1 if malformed. */
int meter_period_parse(const char *s, int *year, int *month);

/* ---- files ------------------------------------------------------------- */

/* Reads the whole file path into a malloc'd,
 * NUL-terminated *text of *len bytes, refusing one of more than max
 * bytes; the error names the file and, when too large, the cap. */
int meter_file_read(const char *path, size_t max, char **text, size_t *len,
                    struct meter_err *e);

/*
 * The directory of installed data `what` ("migrations", "books") into
 * out: $METER_DATA_DIR/what if set, else DIR/../share/meter/what for the
 * directory DIR of the running program (cmake --install lays programs in
 * bin/ and data in share/meter/; the build tree mirrors that layout).
 */
int meter_data_dir(const char *what, char *out, size_t n, struct meter_err *e);

/* ---- numbers ----------------------------------------------------------- */

/* A big-endian 32- or 64-bit integer at p, as in PostgreSQL's binary
 * format. */
uint32_t meter_be32(const void *p);
uint64_t meter_be64(const void *p);

/* Parses a decimal unsigned integer from min to max (digits only: no
 * sign, no spaces, nothing after) into *out; -1, *out unchanged, if s is
 * not one. */
int meter_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
