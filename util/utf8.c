/*
 * utf8.c - cutting text for messages without splitting a character: a
 * message cut in the middle of a UTF-8 sequence is not valid UTF-8, and
 * a JSON encoder then drops it; and checking that what a client sent is
 * text, since PostgreSQL refuses a parameter that is not UTF-8 with an
 * error that reads as the database failing.
 */
#include "meter_util.h"

#include <string.h>

size_t
meter_utf8_cut(char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n <= max)
        return n;
    n = max;
    /* Back over continuation bytes (10xxxxxx) to the lead byte of the
     * character that straddles the cut, and cut before it unless it is
     * whole. */
    size_t lead = n;
    while (lead > 0 && ((unsigned char)s[lead - 1] & 0xC0) == 0x80 &&
           n - lead < 3)
        lead--;
    if (lead > 0) {
        unsigned char c = (unsigned char)s[lead - 1];
        size_t len = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (c >= 0x80 && n - (lead - 1) < len)
            n = lead - 1;
    }
    s[n] = '\0';
    return n;
}

size_t
meter_text_check(const char *s, size_t len)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < len) {
        unsigned char c = p[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7F)
                return i;
            i++;
            continue;
        }
        /* The sequence's length and the range of its second byte, which
         * rules out overlong forms (C0, C1, E0 80-9F, F0 80-8F),
         * surrogates (ED A0-BF) and code points past U+10FFFF (F4 90-,
         * F5-FF) as RFC 3629's table does. */
        size_t n;
        unsigned char lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF)
            n = 2;
        else if (c >= 0xE0 && c <= 0xEF)
            n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        else if (c >= 0xF0 && c <= 0xF4)
            n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        else
            return i;
        if (len - i < n || p[i + 1] < lo || p[i + 1] > hi)
            return i;
        for (size_t k = 2; k < n; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return i;
        i += n;
    }
    return len;
}
