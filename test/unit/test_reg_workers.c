/*
 * The registration thread pool: every task runs exactly once and reports
 * its own status, the caller takes part, stop-on-error skips what has not
 * started, a busy pool makes a second caller work alone instead of
 * blocking, binding pins workers, and destroy joins everything.
 */
#include "bufpool_config.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "regpar_workers.h"
#include "unit.h"

#define MAX_TASKS 512

typedef struct record {
    atomic_int runs[MAX_TASKS];
    pthread_t who[MAX_TASKS];
    int fail_at;         /* task index returning an error, -1 for none */
    unsigned sleep_us;   /* per task, to let several threads join       */
    atomic_bool release; /* blocking tasks wait for this                */
    atomic_int started;
    bool block;
    /* Tasks wait (up to 10 s) until two have started: proves that another
     * thread took part however slow the scheduler is on a loaded machine. */
    bool wait_for_company;
    int affinity_count[MAX_TASKS];
} record_t;

static void record_init(record_t *rec)
{
    memset(rec, 0, sizeof(*rec));
    rec->fail_at = -1;
    for (int i = 0; i < MAX_TASKS; i++) {
        atomic_init(&rec->runs[i], 0);
    }
    atomic_init(&rec->release, false);
    atomic_init(&rec->started, 0);
}

static void pause_us(unsigned us)
{
    struct timespec ts = {.tv_sec = 0, .tv_nsec = (long)us * 1000};
    nanosleep(&ts, NULL);
}

static int record_task(void *arg, size_t index)
{
    record_t *rec = arg;
    atomic_fetch_add(&rec->runs[index], 1);
    rec->who[index] = pthread_self();
    cpu_set_t set;
    CPU_ZERO(&set);
    rec->affinity_count[index] =
        0 == pthread_getaffinity_np(pthread_self(), sizeof(set), &set) ? CPU_COUNT(&set) : -1;
    atomic_fetch_add(&rec->started, 1);
    for (int waited = 0; rec->wait_for_company && atomic_load(&rec->started) < 2 && waited < 100000;
         waited++) {
        pause_us(100);
    }
    if (rec->block) {
        while (!atomic_load(&rec->release)) {
            pause_us(100);
        }
    }
    if (rec->sleep_us) {
        pause_us(rec->sleep_us);
    }
    /* A code that depends on the index, so that a status written to the
     * wrong slot is seen. */
    if ((int)index == rec->fail_at) {
        return 1000 + (int)index;
    }
    return index % 5 == 3 && rec->fail_at < 0 ? (int)index + 1 : 0;
}

static int expected_status(const record_t *rec, size_t index)
{
    if ((int)index == rec->fail_at) {
        return 1000 + (int)index;
    }
    return index % 5 == 3 && rec->fail_at < 0 ? (int)index + 1 : 0;
}

static void test_every_task_once(unsigned pool_threads, unsigned run_threads, size_t ntasks)
{
    regpar_workers_t *pool;
    char err[256];
    UNIT_REQUIRE(0 == regpar_workers_create(pool_threads, false, &pool, err, sizeof(err)));
    UNIT_CHECK_EQ_U64(regpar_workers_size(pool), pool_threads);
    static record_t rec;
    record_init(&rec);
    rec.sleep_us = 200;
    unsigned expect = run_threads < pool_threads ? run_threads : pool_threads;
    if (expect > ntasks) {
        expect = (unsigned)ntasks;
    }
    if (expect < 1) {
        expect = 1;
    }
    rec.wait_for_company = expect > 1;
    int status[MAX_TASKS];
    for (size_t i = 0; i < ntasks; i++) {
        status[i] = -12345;
    }
    unsigned used = regpar_workers_run(pool, run_threads, record_task, &rec, ntasks, status, false);
    UNIT_CHECK_EQ_U64(used, expect);
    for (size_t i = 0; i < ntasks; i++) {
        UNIT_CHECK_EQ_U64(atomic_load(&rec.runs[i]), 1);
        UNIT_CHECK_EQ_U64((uint64_t)(int64_t)status[i],
                          (uint64_t)(int64_t)expected_status(&rec, i));
    }
    if (expect > 1) {
        bool others = false;
        for (size_t i = 0; i < ntasks; i++) {
            others |= !pthread_equal(rec.who[i], pthread_self());
        }
        UNIT_CHECK(others);
    }
    regpar_workers_destroy(pool);
}

static void test_stop_on_error_sequential(void)
{
    static record_t rec;
    record_init(&rec);
    rec.fail_at = 5;
    int status[20];
    unsigned used = regpar_workers_run(NULL, 4, record_task, &rec, 20, status, true);
    UNIT_CHECK_EQ_U64(used, 1);
    for (int i = 0; i < 20; i++) {
        if (i < 5) {
            UNIT_CHECK_EQ_U64(status[i], 0);
            UNIT_CHECK_EQ_U64(atomic_load(&rec.runs[i]), 1);
        } else if (5 == i) {
            UNIT_CHECK_EQ_U64(status[i], 1005);
        } else {
            UNIT_CHECK_EQ_U64((uint64_t)(int64_t)status[i], (uint64_t)(int64_t)REGPAR_TASK_SKIPPED);
            UNIT_CHECK_EQ_U64(atomic_load(&rec.runs[i]), 0);
        }
    }
}

static void test_stop_on_error_parallel(void)
{
    regpar_workers_t *pool;
    char err[256];
    UNIT_REQUIRE(0 == regpar_workers_create(4, false, &pool, err, sizeof(err)));
    static record_t rec;
    record_init(&rec);
    rec.fail_at = 7;
    rec.sleep_us = 500;
    int status[200];
    regpar_workers_run(pool, 4, record_task, &rec, 200, status, true);
    int ran = 0, skipped = 0;
    for (int i = 0; i < 200; i++) {
        int runs = atomic_load(&rec.runs[i]);
        UNIT_CHECK(runs <= 1);
        if (REGPAR_TASK_SKIPPED == status[i]) {
            UNIT_CHECK_EQ_U64(runs, 0);
            skipped++;
        } else {
            UNIT_CHECK_EQ_U64(runs, 1);
            UNIT_CHECK_EQ_U64(status[i], expected_status(&rec, (size_t)i));
            ran++;
        }
    }
    UNIT_CHECK_EQ_U64(status[7], 1007);
    UNIT_CHECK_EQ_U64(ran + skipped, 200);
    /* Tasks are handed out in order and each takes 0.5 ms: the failure at
     * index 7 must stop most of the 200. */
    UNIT_CHECK(skipped > 100);
    regpar_workers_destroy(pool);
}

typedef struct busy_args {
    regpar_workers_t *pool;
    record_t *rec;
    int *status;
    unsigned used;
} busy_args_t;

static void *run_blocking_job(void *arg)
{
    busy_args_t *a = arg;
    a->used = regpar_workers_run(a->pool, 2, record_task, a->rec, 2, a->status, false);
    return NULL;
}

static void test_busy_pool_runs_alone(void)
{
    regpar_workers_t *pool;
    char err[256];
    UNIT_REQUIRE(0 == regpar_workers_create(2, false, &pool, err, sizeof(err)));
    static record_t blocking, second;
    record_init(&blocking);
    record_init(&second);
    blocking.block = true;
    int blocking_status[2], second_status[50];
    busy_args_t args = {.pool = pool, .rec = &blocking, .status = blocking_status};
    pthread_t thread;
    UNIT_REQUIRE(0 == pthread_create(&thread, NULL, run_blocking_job, &args));
    while (atomic_load(&blocking.started) < 2) {
        pause_us(100);
    }
    /* Both pool threads are stuck in the first job: the second caller must
     * neither wait for them nor nest. */
    unsigned used = regpar_workers_run(pool, 2, record_task, &second, 50, second_status, false);
    UNIT_CHECK_EQ_U64(used, 1);
    for (int i = 0; i < 50; i++) {
        UNIT_CHECK_EQ_U64(atomic_load(&second.runs[i]), 1);
        UNIT_CHECK(pthread_equal(second.who[i], pthread_self()));
        UNIT_CHECK_EQ_U64(second_status[i], expected_status(&second, (size_t)i));
    }
    atomic_store(&blocking.release, true);
    pthread_join(thread, NULL);
    UNIT_CHECK_EQ_U64(args.used, 2);
    UNIT_CHECK_EQ_U64(atomic_load(&blocking.runs[0]), 1);
    UNIT_CHECK_EQ_U64(atomic_load(&blocking.runs[1]), 1);
    regpar_workers_destroy(pool);
}

static void test_binding(void)
{
    cpu_set_t mine;
    CPU_ZERO(&mine);
    UNIT_REQUIRE(0 == sched_getaffinity(0, sizeof(mine), &mine));
    if (CPU_COUNT(&mine) < 2) {
        printf("binding: one core only, nothing to check\n");
        return;
    }
    regpar_workers_t *pool;
    char err[256];
    UNIT_REQUIRE(0 == regpar_workers_create(2, true, &pool, err, sizeof(err)));
    static record_t rec;
    record_init(&rec);
    rec.sleep_us = 2000;
    rec.wait_for_company = true;
    int status[64];
    regpar_workers_run(pool, 2, record_task, &rec, 64, status, false);
    int checked = 0;
    for (int i = 0; i < 64; i++) {
        if (!pthread_equal(rec.who[i], pthread_self())) {
            /* A bound worker runs on one core's PUs, fewer than the process. */
            UNIT_CHECK(rec.affinity_count[i] >= 1);
            UNIT_CHECK(rec.affinity_count[i] < CPU_COUNT(&mine));
            checked++;
        }
    }
    UNIT_CHECK(checked > 0);
    regpar_workers_destroy(pool);
}

static void test_create_destroy_cycles(void)
{
    char err[256];
    for (int i = 0; i < 50; i++) {
        regpar_workers_t *pool;
        UNIT_REQUIRE(0 ==
                     regpar_workers_create(1 + (unsigned)(i % 4), false, &pool, err, sizeof(err)));
        if (i % 2) {
            static record_t rec;
            record_init(&rec);
            int status[8];
            regpar_workers_run(pool, 4, record_task, &rec, 8, status, false);
            for (int t = 0; t < 8; t++) {
                UNIT_CHECK_EQ_U64(atomic_load(&rec.runs[t]), 1);
            }
        }
        regpar_workers_destroy(pool);
    }
    regpar_workers_destroy(NULL);
    regpar_workers_t *pool = (regpar_workers_t *)1;
    UNIT_CHECK(0 != regpar_workers_create(0, false, &pool, err, sizeof(err)));
    UNIT_CHECK(NULL == pool);
    UNIT_CHECK(NULL != strstr(err, "thread count"));
    UNIT_CHECK(0 != regpar_workers_create(REGPAR_WORKERS_MAX + 1, false, &pool, err, sizeof(err)));
}

static void test_zero_tasks(void)
{
    regpar_workers_t *pool;
    char err[256];
    UNIT_REQUIRE(0 == regpar_workers_create(3, false, &pool, err, sizeof(err)));
    static record_t rec;
    record_init(&rec);
    int status[1] = {42};
    UNIT_CHECK_EQ_U64(regpar_workers_run(pool, 3, record_task, &rec, 0, status, false), 1);
    UNIT_CHECK_EQ_U64(status[0], 42);
    regpar_workers_destroy(pool);
}

/* A forked child has no workers: its jobs must run alone, not hang. */
static void test_forked_child(void)
{
    regpar_workers_t *pool;
    char err[256];
    UNIT_REQUIRE(0 == regpar_workers_create(3, false, &pool, err, sizeof(err)));
    fflush(NULL);
    pid_t pid = fork();
    UNIT_REQUIRE(pid >= 0);
    if (0 == pid) {
        static record_t rec;
        record_init(&rec);
        int status[20];
        unsigned used = regpar_workers_run(pool, 3, record_task, &rec, 20, status, false);
        int bad = 1 != used;
        for (int i = 0; i < 20; i++) {
            bad += 1 != atomic_load(&rec.runs[i]);
        }
        _exit(bad ? 1 : 0);
    }
    int status = 0;
    UNIT_REQUIRE(pid == waitpid(pid, &status, 0));
    UNIT_CHECK(WIFEXITED(status) && 0 == WEXITSTATUS(status));
    regpar_workers_destroy(pool);
}

int main(void)
{
    cpu_set_t mine;
    CPU_ZERO(&mine);
    UNIT_REQUIRE(0 == sched_getaffinity(0, sizeof(mine), &mine));
    UNIT_CHECK_EQ_U64(regpar_workers_online_cores(), CPU_COUNT(&mine));

    test_every_task_once(1, 1, 10);
    test_every_task_once(4, 4, 100);
    test_every_task_once(4, 2, 37);
    test_every_task_once(8, 8, 3); /* more threads than tasks */
    test_every_task_once(4, 4, 1);
    test_stop_on_error_sequential();
    test_stop_on_error_parallel();
    test_busy_pool_runs_alone();
    test_binding();
    test_create_destroy_cycles();
    test_zero_tasks();
    test_forked_child();
    return unit_finish("test_reg_workers");
}
