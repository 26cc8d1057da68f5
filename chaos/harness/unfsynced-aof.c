// Loaded into redis-server / valkey-server with LD_PRELOAD by unfsynced-aof.ts: the writes to the
// incremental AOF files (`*.incr.aof`, and a single `appendonly.aof` of older servers) are held in this
// process's memory until the server fsyncs the file, and only then written. A SIGKILL so loses what a
// machine crash would (what was written but not fsynced), where it would otherwise lose nothing: the
// kernel keeps a killed process's writes.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define MAX_FDS 65536

struct held {
  int on;
  char *data;
  size_t length;
  size_t capacity;
};

static struct held files[MAX_FDS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static ssize_t (*real_write)(int, const void *, size_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_close)(int);
static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);

__attribute__((constructor)) static void resolve(void) {
  real_write = dlsym(RTLD_NEXT, "write");
  real_fsync = dlsym(RTLD_NEXT, "fsync");
  real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
  real_close = dlsym(RTLD_NEXT, "close");
  real_open = dlsym(RTLD_NEXT, "open");
  real_open64 = dlsym(RTLD_NEXT, "open64");
  real_openat = dlsym(RTLD_NEXT, "openat");
  real_openat64 = dlsym(RTLD_NEXT, "openat64");
}

static int is_aof(const char *path) {
  size_t n = strlen(path);
  if (n >= 9 && strcmp(path + n - 9, ".incr.aof") == 0) return 1;
  const char *base = strrchr(path, '/');
  return strcmp(base ? base + 1 : path, "appendonly.aof") == 0;
}

static int track(int fd, const char *path) {
  if (fd >= 0 && fd < MAX_FDS && is_aof(path)) {
    pthread_mutex_lock(&lock);
    files[fd].on = 1;
    files[fd].length = 0;
    pthread_mutex_unlock(&lock);
  }
  return fd;
}

// Writes out what the file holds back; the caller holds the lock.
static int release(int fd) {
  struct held *file = &files[fd];
  size_t done = 0;
  while (done < file->length) {
    ssize_t n = real_write(fd, file->data + done, file->length - done);
    if (n < 0) return -1;
    done += (size_t)n;
  }
  file->length = 0;
  return 0;
}

ssize_t write(int fd, const void *data, size_t length) {
  if (fd < 0 || fd >= MAX_FDS) return real_write(fd, data, length);
  pthread_mutex_lock(&lock);
  struct held *file = &files[fd];
  if (!file->on) {
    pthread_mutex_unlock(&lock);
    return real_write(fd, data, length);
  }
  if (file->length + length > file->capacity) {
    size_t capacity = file->capacity ? file->capacity : 1 << 16;
    while (capacity < file->length + length) capacity *= 2;
    char *grown = realloc(file->data, capacity);
    if (!grown) {
      pthread_mutex_unlock(&lock);
      return -1;
    }
    file->data = grown;
    file->capacity = capacity;
  }
  memcpy(file->data + file->length, data, length);
  file->length += length;
  pthread_mutex_unlock(&lock);
  return (ssize_t)length;
}

static int flushed(int fd) {
  if (fd < 0 || fd >= MAX_FDS) return 0;
  pthread_mutex_lock(&lock);
  int result = files[fd].on ? release(fd) : 0;
  pthread_mutex_unlock(&lock);
  return result;
}

int fsync(int fd) { return flushed(fd) < 0 ? -1 : real_fsync(fd); }

int fdatasync(int fd) { return flushed(fd) < 0 ? -1 : real_fdatasync(fd); }

int close(int fd) {
  if (fd >= 0 && fd < MAX_FDS) {
    pthread_mutex_lock(&lock);
    // A file closed unsynced keeps nothing it held back: so does a crashed machine's.
    files[fd].on = 0;
    files[fd].length = 0;
    pthread_mutex_unlock(&lock);
  }
  return real_close(fd);
}

#define MODE_ARG(flags, mode)                                                                               \
  mode_t mode = 0;                                                                                         \
  if ((flags) & (O_CREAT | O_TMPFILE)) {                                                                   \
    va_list args;                                                                                          \
    va_start(args, flags);                                                                                 \
    mode = va_arg(args, mode_t);                                                                           \
    va_end(args);                                                                                          \
  }

int open(const char *path, int flags, ...) {
  MODE_ARG(flags, mode);
  return track(real_open(path, flags, mode), path);
}

int open64(const char *path, int flags, ...) {
  MODE_ARG(flags, mode);
  return track(real_open64(path, flags, mode), path);
}

int openat(int dir, const char *path, int flags, ...) {
  MODE_ARG(flags, mode);
  return track(real_openat(dir, path, flags, mode), path);
}

int openat64(int dir, const char *path, int flags, ...) {
  MODE_ARG(flags, mode);
  return track(real_openat64(dir, path, flags, mode), path);
}
