/*
 * tls.c - the certificate and key meterd serves HTTPS with, read and
 * checked once, at start.
 *
 * libmicrohttpd takes them as PEM text and, given a bad one, fails to
 * start with a message that names neither file. So each file is read
 * here and parsed with GnuTLS (what libmicrohttpd itself uses): a
 * certificate chain, a private key, then the two together, so that the
 * error names the file at fault before anything listens; the priority
 * string too, so that a GnuTLS that rejects it is named as such rather
 * than as a socket that could not listen.
 *
 * The key is read with read(2) straight into one buffer sized once
 * (from fstat), never through stdio or a growing buffer, so that the
 * one copy of its text this file makes is the one wiped when released.
 * (GnuTLS's and libmicrohttpd's own parsed copies are theirs.) A key
 * that group or others may read is served, with a warning.
 */
#include "http_int.h"

#include <errno.h>
#include <fcntl.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A certificate chain or a key is a few KiB; a bound keeps a wrong path
 * (a log, a device) from being read whole. */
#define TLS_MAX_FILE (1 << 20)
/* What is read of a key that is not a regular file (a pipe): its size
 * is unknown before, and a key is a few KiB. */
#define TLS_MAX_KEY_STREAM (64 * 1024)

static void
wipe_free(char *p, size_t n)
{
    if (!p)
        return;
    explicit_bzero(p, n);
    free(p);
}

/*
 * Reads the key file into *text (NUL-terminated, *len bytes) with no
 * other copy left in memory: one allocation, sized before reading, wiped
 * on every failure. Warns when group or others may read the file.
 */
static int
read_key(const char *path, char **text, size_t *len, struct meter_err *e)
{
    char *buf = NULL;
    size_t cap = 0, got = 0;
    int rc = -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        meter_fail(e, "cannot open '%s': %s", path, strerror(errno));
        goto out;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        meter_fail(e, "cannot read '%s': %s", path, strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        meter_fail(e, "cannot read '%s': %s", path, strerror(EISDIR));
        goto out;
    }
    if (S_ISREG(st.st_mode) && st.st_size > TLS_MAX_FILE) {
        meter_fail(e, "cannot read '%s': larger than %d bytes", path,
                   TLS_MAX_FILE);
        goto out;
    }
    if (st.st_mode & 077)
        meter_log(METER_LOG_WARN,
                  "--tls-key '%s' may be read by group or others (mode "
                  "%04o): chmod go= it",
                  path, (unsigned)(st.st_mode & 07777));
    /* One byte over the size: a file that grew is seen, not cut. */
    cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : TLS_MAX_KEY_STREAM;
    if (!(buf = malloc(cap + 1))) {
        meter_fail(e, "cannot read '%s': out of memory", path);
        goto out;
    }
    while (got < cap) {
        ssize_t n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            meter_fail(e, "cannot read '%s': %s", path, strerror(errno));
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    if (got == cap) {
        meter_fail(e, "cannot read '%s': %s", path,
                   S_ISREG(st.st_mode) ? "it changed while read"
                                       : "larger than a key");
        goto out;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    buf = NULL;
    rc = 0;
out:
    wipe_free(buf, cap + 1);
    if (fd >= 0)
        close(fd);
    return rc;
}

/* Whether GnuTLS takes HTTP_TLS_PRIORITIES; else a message in e. */
static int
check_priorities(struct meter_err *e)
{
    gnutls_priority_t prio;
    const char *at = NULL;
    int rc = gnutls_priority_init(&prio, HTTP_TLS_PRIORITIES, &at);
    if (rc < 0)
        return meter_fail(e,
                          "TLS setup failed: this GnuTLS rejects the "
                          "priorities '%s' at '%s': %s",
                          HTTP_TLS_PRIORITIES, at ? at : "?",
                          gnutls_strerror(rc));
    gnutls_priority_deinit(prio);
    return 0;
}

/* Whether text is one or more PEM certificates; else a message in e. */
static int
check_cert(const char *file, const char *text, size_t len, struct meter_err *e)
{
    gnutls_datum_t d = {(unsigned char *)(uintptr_t)text, (unsigned)len};
    gnutls_x509_crt_t *crts = NULL;
    unsigned n = 0;
    int rc =
        gnutls_x509_crt_list_import2(&crts, &n, &d, GNUTLS_X509_FMT_PEM,
                                     GNUTLS_X509_CRT_LIST_FAIL_IF_UNSORTED);
    for (unsigned i = 0; i < n; i++)
        gnutls_x509_crt_deinit(crts[i]);
    gnutls_free(crts);
    if (rc < 0 || n == 0)
        return meter_fail(e,
                          "--tls-cert '%s' is not a PEM certificate (chain): "
                          "%s",
                          file, rc < 0 ? gnutls_strerror(rc) : "none found");
    return 0;
}

/* Whether text is an unencrypted PEM private key; else a message in e. */
static int
check_key(const char *file, const char *text, size_t len, struct meter_err *e)
{
    gnutls_datum_t d = {(unsigned char *)(uintptr_t)text, (unsigned)len};
    gnutls_x509_privkey_t key;
    int rc = gnutls_x509_privkey_init(&key);
    if (rc < 0)
        return meter_fail(e, "--tls-key '%s': %s", file, gnutls_strerror(rc));
    /* No password: libmicrohttpd is given none either. */
    rc = gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
    gnutls_x509_privkey_deinit(key);
    if (rc < 0)
        return meter_fail(e,
                          "--tls-key '%s' is not an unencrypted PEM private "
                          "key: %s",
                          file, gnutls_strerror(rc));
    return 0;
}

/* Whether the key belongs to the first certificate, as libmicrohttpd
 * will load them. */
static int
check_pair(const struct meter_http_tls *tls, struct meter_err *e)
{
    gnutls_certificate_credentials_t cred;
    int rc = gnutls_certificate_allocate_credentials(&cred);
    if (rc < 0)
        return meter_fail(e, "TLS: %s", gnutls_strerror(rc));
    gnutls_datum_t c = {(unsigned char *)tls->cert, (unsigned)tls->cert_len};
    gnutls_datum_t k = {(unsigned char *)tls->key, (unsigned)tls->key_len};
    rc = gnutls_certificate_set_x509_key_mem2(cred, &c, &k, GNUTLS_X509_FMT_PEM,
                                              NULL, 0);
    gnutls_certificate_free_credentials(cred);
    if (rc == GNUTLS_E_CERTIFICATE_KEY_MISMATCH)
        return meter_fail(e,
                          "--tls-key '%s' is not the key of the certificate "
                          "'%s'",
                          tls->key_file, tls->cert_file);
    if (rc < 0)
        return meter_fail(e, "--tls-cert '%s' with --tls-key '%s': %s",
                          tls->cert_file, tls->key_file, gnutls_strerror(rc));
    return 0;
}

int
meter_http_tls_load(struct meter_http_tls *tls, const char *cert_file,
                    const char *key_file, struct meter_err *e)
{
    memset(tls, 0, sizeof(*tls));
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        return meter_fail(e, "this libmicrohttpd was built without TLS "
                             "(GnuTLS): serve plain HTTP behind a TLS proxy, "
                             "or install one built with it");
    tls->cert_file = cert_file;
    tls->key_file = key_file;
    struct meter_err fe = {{0}};
    if (meter_file_read(cert_file, TLS_MAX_FILE, &tls->cert, &tls->cert_len,
                        &fe)) {
        meter_fail(e, "--tls-cert: %s", fe.msg);
        goto fail;
    }
    if (read_key(key_file, &tls->key, &tls->key_len, &fe)) {
        meter_fail(e, "--tls-key: %s", fe.msg);
        goto fail;
    }
    if (check_cert(cert_file, tls->cert, tls->cert_len, e) < 0 ||
        check_key(key_file, tls->key, tls->key_len, e) < 0 ||
        check_pair(tls, e) < 0 || check_priorities(e) < 0)
        goto fail;
    return 0;
fail:
    meter_http_tls_release(tls);
    return -1;
}

void
meter_http_tls_release(struct meter_http_tls *tls)
{
    if (!tls)
        return;
    free(tls->cert);
    wipe_free(tls->key, tls->key_len);
    memset(tls, 0, sizeof(*tls));
}
