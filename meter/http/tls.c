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
 * than as a socket that could not listen. The key's bytes are wiped
 * when released.
 */
#include "http_int.h"

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A certificate chain or a key is a few KiB; a bound keeps a wrong path
 * (a log, a device) from being read whole. */
#define TLS_MAX_FILE (1 << 20)

static void
wipe_free(char *p, size_t n)
{
    if (!p)
        return;
    explicit_bzero(p, n);
    free(p);
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
    if (meter_file_read(key_file, TLS_MAX_FILE, &tls->key, &tls->key_len,
                        &fe)) {
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
