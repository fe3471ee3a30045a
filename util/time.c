/*
 * time.c - the one time parser: Unix seconds or RFC 3339 in UTC, for
 * samples, command-line ranges and generated fleets alike.
 */
#include "meter_util.h"

#include <stdio.h>
#include <string.h>

#include "pricing.h"

int
meter_time_parse_rfc3339(const char *s, int64_t *ts)
{
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
    if (strlen(s) != sizeof(shape) - 1)
        return -1;
    for (size_t i = 0; shape[i]; i++) {
        if (shape[i] == 'd' ? s[i] < '0' || s[i] > '9' : s[i] != shape[i])
            return -1;
    }
#define NUM2(i) ((s[i] - '0') * 10 + (s[(i) + 1] - '0'))
    int year = NUM2(0) * 100 + NUM2(2), month = NUM2(5), day = NUM2(8);
    int hour = NUM2(11), min = NUM2(14), sec = NUM2(17);
#undef NUM2
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    if (year < 1970 || month < 1 || month > 12 || day < 1 ||
        day > mdays[month - 1] + (month == 2 && leap) || hour > 23 ||
        min > 59 || sec > 59)
        return -1;
    *ts = pricing_days_from_civil(year, month, day) * 86400 + hour * 3600 +
          min * 60 + sec;
    return 0;
}

int
meter_time_parse(const char *s, int64_t *ts)
{
    if (meter_time_parse_rfc3339(s, ts) == 0)
        return 0;
    uint64_t v;
    if (meter_parse_uint(s, 0, METER_TS_MAX, &v) < 0)
        return -1;
    *ts = (int64_t)v;
    return 0;
}

int
meter_period_parse(const char *s, int *year, int *month)
{
    if (strlen(s) != 7 || s[4] != '-')
        return -1;
    for (int i = 0; i < 7; i++)
        if (i != 4 && (s[i] < '0' || s[i] > '9'))
            return -1;
    *year = ((s[0] - '0') * 10 + (s[1] - '0')) * 100 + (s[2] - '0') * 10 +
            (s[3] - '0');
    *month = (s[5] - '0') * 10 + (s[6] - '0');
    return *month >= 1 && *month <= 12 && *year >= 1970 ? 0 : -1;
}

int
meter_day_parse(const char *s, int64_t *ts)
{
    char t[32];
    if (strlen(s) != 10)
        return -1;
    snprintf(t, sizeof(t), "%sT00:00:00Z", s);
    return meter_time_parse_rfc3339(t, ts);
}
