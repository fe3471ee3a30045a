/*
 * utf8.c - cutting text for messages without splitting a character: a
 * message cut in the middle of a UTF-8 sequence is not valid UTF-8, and
 * a JSON encoder then drops it.
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
