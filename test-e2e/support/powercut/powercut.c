/*
 * A power cut for one directory, as an LD_PRELOAD shim (test-e2e/reliability/power-cut.e2e.ts).
 *
 * The process works on POWERCUT_LIVE as usual. Beside it, POWERCUT_DURABLE holds what a disk would still have after
 * the power went out at this instant, under the harshest ordering a journalling file system allows:
 *   - metadata is durable at once: a created file exists (empty), a rename or an unlink has happened, a directory
 *     made or removed is so;
 *   - file contents are durable only as of the last fsync or fdatasync of that file: until then a new file is empty
 *     and a rewritten one holds its old contents.
 * Killing the process with SIGKILL and starting again on POWERCUT_DURABLE is the power cut. Nothing is simulated in
 * the program under test: it makes its ordinary system calls, and only the ones that make data durable move data
 * into the durable copy.
 *
 * Build: gcc -shared -fPIC -O2 -o powercut.so powercut.c -ldl -lpthread
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

static char live[PATH_MAX], durable[PATH_MAX];
static size_t live_len;
static int enabled;
static pthread_mutex_t lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_renameat2)(int, const char *, int, const char *, unsigned int);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);
static int (*real_rmdir)(const char *);
static int (*real_mkdir)(const char *, mode_t);
static int (*real_mkdirat)(int, const char *, mode_t);

__attribute__((constructor)) static void init(void) {
  real_open = dlsym(RTLD_NEXT, "open");
  real_openat = dlsym(RTLD_NEXT, "openat");
  real_fsync = dlsym(RTLD_NEXT, "fsync");
  real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
  real_rename = dlsym(RTLD_NEXT, "rename");
  real_renameat = dlsym(RTLD_NEXT, "renameat");
  real_renameat2 = dlsym(RTLD_NEXT, "renameat2");
  real_unlink = dlsym(RTLD_NEXT, "unlink");
  real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
  real_rmdir = dlsym(RTLD_NEXT, "rmdir");
  real_mkdir = dlsym(RTLD_NEXT, "mkdir");
  real_mkdirat = dlsym(RTLD_NEXT, "mkdirat");
  const char *l = getenv("POWERCUT_LIVE"), *d = getenv("POWERCUT_DURABLE");
  if (!l || !d || !realpath(l, live) || !realpath(d, durable)) return;
  live_len = strlen(live);
  enabled = 1;
}

/* The absolute, lexically normal path of `path` as seen from `dirfd`; 0 when it cannot be had. */
static int absolute(int dirfd, const char *path, char *out) {
  char base[PATH_MAX], joined[PATH_MAX * 2];
  if (path[0] == '/') {
    snprintf(joined, sizeof joined, "%s", path);
  } else {
    if (dirfd == AT_FDCWD) {
      if (!getcwd(base, sizeof base)) return 0;
    } else {
      char link[64];
      snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
      ssize_t n = readlink(link, base, sizeof base - 1);
      if (n <= 0) return 0;
      base[n] = 0;
    }
    snprintf(joined, sizeof joined, "%s/%s", base, path);
  }
  /* Normalise . and .. and repeated slashes without touching the file system (the file may be gone already). */
  char *parts[PATH_MAX / 2];
  int count = 0;
  for (char *save, *p = strtok_r(joined, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
    if (!strcmp(p, ".")) continue;
    if (!strcmp(p, "..")) {
      if (count) count--;
      continue;
    }
    parts[count++] = p;
  }
  size_t len = 0;
  out[0] = 0;
  for (int i = 0; i < count; i++) len += snprintf(out + len, PATH_MAX - len, "/%s", parts[i]);
  if (!count) snprintf(out, PATH_MAX, "/");
  return 1;
}

/* The durable twin of a live path, or 0 when the path is not under POWERCUT_LIVE. */
static int twin(const char *abs, char *out) {
  if (!enabled || strncmp(abs, live, live_len) || (abs[live_len] != '/' && abs[live_len] != 0)) return 0;
  snprintf(out, PATH_MAX, "%s%s", durable, abs + live_len);
  return 1;
}

static void make_parents(const char *path) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    real_mkdir(tmp, 0755);
    *p = '/';
  }
}

static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st)) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[PATH_MAX];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        remove_tree(child);
      }
      closedir(d);
    }
    real_rmdir(path);
  } else {
    real_unlink(path);
  }
}

/* Copies the live file's whole contents to its twin, through a temporary name so the twin is never half written. */
static void copy_contents(const char *from, const char *to) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.powercut-tmp", to);
  int in = real_open(from, O_RDONLY | O_CLOEXEC);
  if (in < 0) return;
  make_parents(to);
  int out = real_open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out >= 0) {
    struct stat st;
    off_t offset = 0;
    if (!fstat(in, &st))
      while (offset < st.st_size && sendfile(out, in, &offset, st.st_size - offset) > 0) {
      }
    close(out);
    real_rename(tmp, to);
  }
  close(in);
}

static void synced(int fd) {
  if (!enabled) return;
  char link[64], path[PATH_MAX], to[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = readlink(link, path, sizeof path - 1);
  if (n <= 0) return;
  path[n] = 0;
  struct stat st;
  if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !twin(path, to)) return;
  pthread_mutex_lock(&lock);
  copy_contents(path, to);
  pthread_mutex_unlock(&lock);
}

/* A file that now exists in the live directory exists, empty, in the durable one (its contents come with a sync). */
static void created(int dirfd, const char *path, int flags) {
  char abs[PATH_MAX], to[PATH_MAX];
  if (!enabled || !(flags & O_CREAT) || !absolute(dirfd, path, abs) || !twin(abs, to)) return;
  pthread_mutex_lock(&lock);
  struct stat st;
  if (stat(to, &st) || (flags & O_TRUNC)) {
    make_parents(to);
    int fd = real_open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
  }
  pthread_mutex_unlock(&lock);
}

static void renamed(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  char from_abs[PATH_MAX], to_abs[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
  if (!enabled || !absolute(olddirfd, oldpath, from_abs) || !absolute(newdirfd, newpath, to_abs)) return;
  int has_from = twin(from_abs, from), has_to = twin(to_abs, to);
  if (!has_to) {
    if (has_from) {
      pthread_mutex_lock(&lock);
      remove_tree(from);
      pthread_mutex_unlock(&lock);
    }
    return;
  }
  pthread_mutex_lock(&lock);
  struct stat st;
  make_parents(to);
  if (has_from && !lstat(from, &st)) {
    real_rename(from, to);
  } else {
    /* Moved in from elsewhere: the name is durable, the contents are not. */
    remove_tree(to);
    int fd = real_open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) close(fd);
  }
  pthread_mutex_unlock(&lock);
}

static void removed(int dirfd, const char *path) {
  char abs[PATH_MAX], to[PATH_MAX];
  if (!enabled || !absolute(dirfd, path, abs) || !twin(abs, to)) return;
  pthread_mutex_lock(&lock);
  remove_tree(to);
  pthread_mutex_unlock(&lock);
}

static void made_dir(int dirfd, const char *path) {
  char abs[PATH_MAX], to[PATH_MAX];
  if (!enabled || !absolute(dirfd, path, abs) || !twin(abs, to)) return;
  pthread_mutex_lock(&lock);
  make_parents(to);
  real_mkdir(to, 0755);
  pthread_mutex_unlock(&lock);
}

#define MODE_ARG(flags)                                                                                                \
  mode_t mode = 0;                                                                                                     \
  if ((flags) & (O_CREAT | __O_TMPFILE)) {                                                                             \
    va_list ap;                                                                                                        \
    va_start(ap, flags);                                                                                               \
    mode = va_arg(ap, mode_t);                                                                                         \
    va_end(ap);                                                                                                        \
  }

int open(const char *path, int flags, ...) {
  MODE_ARG(flags);
  int fd = real_open(path, flags, mode);
  if (fd >= 0) created(AT_FDCWD, path, flags);
  return fd;
}
int open64(const char *path, int flags, ...) {
  MODE_ARG(flags);
  int fd = real_open(path, flags, mode);
  if (fd >= 0) created(AT_FDCWD, path, flags);
  return fd;
}
int openat(int dirfd, const char *path, int flags, ...) {
  MODE_ARG(flags);
  int fd = real_openat(dirfd, path, flags, mode);
  if (fd >= 0) created(dirfd, path, flags);
  return fd;
}
int openat64(int dirfd, const char *path, int flags, ...) {
  MODE_ARG(flags);
  int fd = real_openat(dirfd, path, flags, mode);
  if (fd >= 0) created(dirfd, path, flags);
  return fd;
}
int creat(const char *path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }
int creat64(const char *path, mode_t mode) { return open(path, O_WRONLY | O_CREAT | O_TRUNC, mode); }

int fsync(int fd) {
  int r = real_fsync(fd);
  if (!r) synced(fd);
  return r;
}
int fdatasync(int fd) {
  int r = real_fdatasync(fd);
  if (!r) synced(fd);
  return r;
}

int rename(const char *oldpath, const char *newpath) {
  int r = real_rename(oldpath, newpath);
  if (!r) renamed(AT_FDCWD, oldpath, AT_FDCWD, newpath);
  return r;
}
int renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath) {
  int r = real_renameat(olddirfd, oldpath, newdirfd, newpath);
  if (!r) renamed(olddirfd, oldpath, newdirfd, newpath);
  return r;
}
int renameat2(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, unsigned int flags) {
  int r = real_renameat2(olddirfd, oldpath, newdirfd, newpath, flags);
  if (!r) renamed(olddirfd, oldpath, newdirfd, newpath);
  return r;
}

int unlink(const char *path) {
  int r = real_unlink(path);
  if (!r) removed(AT_FDCWD, path);
  return r;
}
int unlinkat(int dirfd, const char *path, int flags) {
  int r = real_unlinkat(dirfd, path, flags);
  if (!r) removed(dirfd, path);
  return r;
}
int rmdir(const char *path) {
  int r = real_rmdir(path);
  if (!r) removed(AT_FDCWD, path);
  return r;
}

int mkdir(const char *path, mode_t mode) {
  int r = real_mkdir(path, mode);
  if (!r) made_dir(AT_FDCWD, path);
  return r;
}
int mkdirat(int dirfd, const char *path, mode_t mode) {
  int r = real_mkdirat(dirfd, path, mode);
  if (!r) made_dir(dirfd, path);
  return r;
}
