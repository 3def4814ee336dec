/* A minimal SQL runner for benches/powercut.sh: the VM that checks the flash after a
 * power cut has busybox but no sqlite3 shell. Built statically by the bench against
 * the SQLite amalgamation the project already bundles (libsqlite3-sys).
 *
 *   powercut-sql FILE SQL    prints every row, columns tab-separated
 *
 * The file is opened read-write but never created, as the collector would open it
 * (a hot rollback journal is rolled back, as at its next start). Exit 1 on any error.
 */
#include <stdio.h>
#include "sqlite3.h"

static int print_row(void *unused, int n, char **values, char **names) {
    (void)unused;
    (void)names;
    for (int i = 0; i < n; i++)
        printf("%s%s", i ? "\t" : "", values[i] ? values[i] : "NULL");
    printf("\n");
    return 0;
}

int main(int argc, char **argv) {
    sqlite3 *db = NULL;
    char *err = NULL;
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE SQL\n", argv[0]);
        return 2;
    }
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], db ? sqlite3_errmsg(db) : "out of memory");
        return 1;
    }
    sqlite3_busy_timeout(db, 10000);
    if (sqlite3_exec(db, argv[2], print_row, NULL, &err) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", argv[1], err ? err : "error");
        return 1;
    }
    return sqlite3_close(db) == SQLITE_OK ? 0 : 1;
}
