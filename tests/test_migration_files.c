/*
 * test_migration_files.c - migration file names and loading a directory
 * of them; no database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "meter_db.h"
#include "testutil.h"

static void
test_names(void)
{
    static const struct {
        const char *file;
        int version;
    } cases[] = {
        {"0001_core.sql", 1},
        {"0042_usage_blocks.sql", 42},
        {"9999_x.sql", 9999},
        {"0000_zero.sql", -1}, /* versions start at 1 */
        {"001_short.sql", -1}, /* four digits */
        {"00001_long.sql", -1},
        {"0001-dash.sql", -1},
        {"0001_Upper.sql", -1},
        {"0001_.sql", -1}, /* a name is required */
        {"0001_core.sql.bak", -1},
        {"0001_core.SQL", -1},
        {"abcd_core.sql", -1},
        {"0001_sp ace.sql", -1},
        {"", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int got = meter_migration_version(cases[i].file);
        if (got != cases[i].version) {
            fprintf(stderr, "version of '%s': got %d, want %d\n", cases[i].file,
                    got, cases[i].version);
            test_failures++;
        }
    }
}

static void
put(const char *dir, const char *file, const char *text)
{
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static void
test_load(void)
{
    char dir[] = "/tmp/meter-mig-XXXXXX";
    char cmd[600];
    struct meter_migration_set set;
    struct meter_err e = {{0}};
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(1);
    }

    /* Ordered by version whatever the directory order; others ignored. */
    put(dir, "0010_ten.sql", "SELECT 10;");
    put(dir, "0002_two.sql", "SELECT 2;");
    put(dir, "0001_one.sql", "SELECT 1;");
    put(dir, "README.md", "not a migration");
    CHECK(meter_migrations_load(dir, &set, &e) == 0);
    CHECK(set.n == 3);
    if (set.n == 3) {
        CHECK(set.items[0].version == 1 && set.items[1].version == 2 &&
              set.items[2].version == 10);
        CHECK_STR(set.items[2].file, "0010_ten.sql");
        CHECK_STR(set.items[2].sql, "SELECT 10;");
        CHECK(set.items[2].sql_len == 10);
    }
    meter_migrations_release(&set);

    /* Two files of one version: an error naming both. */
    put(dir, "0002_again.sql", "SELECT 2;");
    CHECK(meter_migrations_load(dir, &set, &e) == -1);
    CHECK(strstr(e.msg, "0002_two.sql") && strstr(e.msg, "0002_again.sql"));
    CHECK(set.n == 0 && set.items == NULL);
    snprintf(cmd, sizeof(cmd), "%s/0002_again.sql", dir);
    unlink(cmd);

    /* A .sql file with a malformed name is an error, not ignored. */
    put(dir, "2_bad.sql", "SELECT 2;");
    CHECK(meter_migrations_load(dir, &set, &e) == -1);
    CHECK(strstr(e.msg, "2_bad.sql") != NULL);
    snprintf(cmd, sizeof(cmd), "%s/2_bad.sql", dir);
    unlink(cmd);

    /* A directory that does not exist. */
    CHECK(meter_migrations_load("/nonexistent/migrations", &set, &e) == -1);
    CHECK(strstr(e.msg, "/nonexistent/migrations") != NULL);

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
}

static void
test_project_migrations(void)
{
    struct meter_migration_set set;
    struct meter_err e = {{0}};
    char dir[4096];
    CHECK(meter_migrations_default_dir(dir, sizeof(dir), &e) == 0);
    CHECK(meter_migrations_load(dir, &set, &e) == 0);
    CHECK(set.n >= 1);
    /* Versions are 1, 2, 3, ... with no gap. */
    for (size_t i = 0; i < set.n; i++)
        CHECK(set.items[i].version == (int)i + 1);
    meter_migrations_release(&set);
}

int
main(void)
{
    test_names();
    test_load();
    test_project_migrations();
    return test_result();
}
