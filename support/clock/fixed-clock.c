/*
 * For tests only: preloaded into a redis-server (LD_PRELOAD), sets the wall clock the server reads
 * (gettimeofday, clock_gettime(CLOCK_REALTIME)) to the time written in the file named by FIXED_CLOCK_FILE,
 * in microseconds since the epoch; the real clock where the file is empty or missing. The monotonic
 * clocks stay real, so the server's timers run as usual. libfaketime would do, but it recurses into
 * itself with the jemalloc of Debian's redis-server and never starts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

/* The time in the file, or -1 when none is set. Read at every call: a test moves the clock at will. */
static long long fixed_microseconds(void) {
  const char *path = getenv("FIXED_CLOCK_FILE");
  if (path == NULL) return -1;
  FILE *file = fopen(path, "r");
  if (file == NULL) return -1;
  long long microseconds = -1;
  if (fscanf(file, "%lld", &microseconds) != 1) microseconds = -1;
  fclose(file);
  return microseconds;
}

int gettimeofday(struct timeval *tv, void *tz) {
  static int (*real)(struct timeval *, void *);
  long long microseconds = fixed_microseconds();
  if (microseconds < 0 || tv == NULL) {
    if (real == NULL) real = (int (*)(struct timeval *, void *))dlsym(RTLD_NEXT, "gettimeofday");
    return real(tv, tz);
  }
  tv->tv_sec = microseconds / 1000000;
  tv->tv_usec = microseconds % 1000000;
  return 0;
}

int clock_gettime(clockid_t clock, struct timespec *ts) {
  static int (*real)(clockid_t, struct timespec *);
  if (real == NULL) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  long long microseconds = clock == CLOCK_REALTIME ? fixed_microseconds() : -1;
  if (microseconds < 0) return real(clock, ts);
  ts->tv_sec = microseconds / 1000000;
  ts->tv_nsec = (microseconds % 1000000) * 1000;
  return 0;
}
