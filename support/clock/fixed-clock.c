/*
 * For tests only: preloaded into a redis-server (LD_PRELOAD), sets the wall clock the server reads
 * (gettimeofday, clock_gettime(CLOCK_REALTIME)) from the file named by FIXED_CLOCK_FILE: a number of
 * microseconds since the epoch stops the clock there; one signed ("+3600000000", "-5") shifts the real
 * clock by that many microseconds, and it runs. The real clock where the file is empty or missing. The
 * monotonic clocks stay real, so the server's timers run as usual. libfaketime would do, but it recurses
 * into itself with the jemalloc of Debian's redis-server and never starts.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

/*
 * The wall clock as the file sets it, given the real one; -1 when the file sets none. Read at every call:
 * a test moves the clock at will.
 */
static long long set_microseconds(long long real) {
  const char *path = getenv("FIXED_CLOCK_FILE");
  if (path == NULL) return -1;
  FILE *file = fopen(path, "r");
  if (file == NULL) return -1;
  char text[32] = {0};
  size_t length = fread(text, 1, sizeof text - 1, file);
  fclose(file);
  if (length == 0) return -1;
  long long value = strtoll(text, NULL, 10);
  return text[0] == '+' || text[0] == '-' ? real + value : value;
}

static long long real_microseconds(void) {
  static int (*real)(clockid_t, struct timespec *);
  if (real == NULL) real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
  struct timespec now;
  real(CLOCK_REALTIME, &now);
  return (long long)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

int gettimeofday(struct timeval *tv, void *tz) {
  static int (*real)(struct timeval *, void *);
  long long microseconds = set_microseconds(real_microseconds());
  if (microseconds < 0) {
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
  long long microseconds = clock == CLOCK_REALTIME ? set_microseconds(real_microseconds()) : -1;
  if (microseconds < 0) return real(clock, ts);
  ts->tv_sec = microseconds / 1000000;
  ts->tv_nsec = (microseconds % 1000000) * 1000;
  return 0;
}
