/* The spawn helper: a small long-lived process that starts commands for the hook server.
 * It uses posix_spawn (glibc: clone(CLONE_VM|CLONE_VFORK), so no page-table copy) and reports
 * each command's combined stdout+stderr and exit status back over its stdout.
 *
 * Protocol, both directions: frames of  u32 length (of what follows) | u8 type | u32 id | payload,
 * little-endian as the host.
 *   in  'S' spawn: u32 argc | u32 envc | cwd\0 | path\0 | argv[0]\0 ... | env[0]\0 ...
 *                  (cwd "" = the helper's own; argv[0] may differ from path, as Go allows)
 *   in  'K' kill:  i32 signal            (sent to the command's process group)
 *   in  'Z' pause:  (none)               (stop reading the command's output: it blocks once its
 *                                         pipe is full)
 *   in  'R' resume: (none)               (read its output again)
 *   out 'P' started: u32 pid             (the command runs, in its own process group)
 *   out 'O' output: bytes                (as they arrive; combined stdout and stderr)
 *   out 'X' exit:   i32 status           (exit code >= 0, or -signal)  — after output EOF
 *   out 'F' failed: i32 errno            (posix_spawn failed; nothing ran)
 * The helper exits when its stdin closes, or when the server (its parent, pid in argv[1]) dies, and
 * then SIGKILLs every command's process group first: a command dies with its instance, so a job
 * redelivered to another instance (-queue) never runs beside an orphan. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
  uint32_t id;
  pid_t pid;
  int fd;     /* read end of the output pipe, -1 after EOF */
  int exited; /* 1 once reaped */
  int status;
  int paused; /* 1 while the reader of its output is behind */
} job_t;

#define PARENT_DIED SIGUSR1

static job_t *jobs;
/* /dev/null, opened once for every command's stdin (a dup2 in the child is cheaper than an open). */
static int devnull = -1;
static size_t njobs, capjobs;
static unsigned char *inbuf;
static size_t inlen, incap;

static void write_all(const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(1, c, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) { struct pollfd pf = {1, POLLOUT, 0}; poll(&pf, 1, -1); continue; }
      _exit(1);
    }
    c += w; n -= (size_t)w;
  }
}

/* Frames for the server wait here and go out in one write per round of the main loop (flush_frames),
   so a round that starts commands and sees others end costs one write, and the server one read. */
static unsigned char *outbuf;
static size_t outlen, outcap;

static void flush_frames(void) {
  if (outlen) write_all(outbuf, outlen);
  outlen = 0;
}

static void send_frame(char type, uint32_t id, const void *payload, uint32_t n) {
  uint32_t len = 5 + n;
  if (outcap - outlen < 9 + (size_t)n) {
    flush_frames();
    if (outcap < 9 + (size_t)n) { outcap = 9 + (size_t)n > 131072 ? 9 + (size_t)n : 131072; outbuf = realloc(outbuf, outcap); }
  }
  unsigned char *head = outbuf + outlen;
  memcpy(head, &len, 4); head[4] = (unsigned char)type; memcpy(head + 5, &id, 4);
  if (n) memcpy(head + 9, payload, n);
  outlen += 9 + (size_t)n;
}

static void maybe_finish(size_t i) {
  job_t *j = &jobs[i];
  if (j->fd >= 0 || !j->exited) return;
  int32_t st = WIFEXITED(j->status) ? WEXITSTATUS(j->status) : -WTERMSIG(j->status);
  send_frame('X', j->id, &st, 4);
  jobs[i] = jobs[--njobs];
}

static void start_job(uint32_t id, const unsigned char *p, uint32_t n) {
  uint32_t argc, envc;
  /* Every string must end inside the frame. */
  if (n < 10 || p[n - 1] != 0) { int32_t e = EINVAL; send_frame('F', id, &e, 4); return; }
  memcpy(&argc, p, 4); memcpy(&envc, p + 4, 4);
  /* Each string takes at least its NUL: counts beyond the frame are malformed. */
  if (argc == 0 || argc > n || envc > n) { int32_t e = EINVAL; send_frame('F', id, &e, 4); return; }
  const char *s = (const char *)p + 8, *end = (const char *)p + n;
  char **argv = calloc(argc + 1, sizeof *argv), **envp = calloc(envc + 1, sizeof *envp);
  const char *cwd = s; s += strlen(s) + 1;
  const char *path = s < end ? s : ""; s += strlen(path) + 1;
  for (uint32_t k = 0; k < argc && s < end; k++) { argv[k] = (char *)s; s += strlen(s) + 1; }
  for (uint32_t k = 0; k < envc && s < end; k++) { envp[k] = (char *)s; s += strlen(s) + 1; }

  int pfd[2];
  int err = pipe2(pfd, O_CLOEXEC) == 0 ? 0 : errno;
  pid_t pid = -1;
  if (!err) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    sigset_t none, dfl;
    posix_spawn_file_actions_init(&fa);
    if (devnull >= 0) posix_spawn_file_actions_adddup2(&fa, devnull, 0);
    else posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 2);
    if (cwd[0]) posix_spawn_file_actions_addchdir_np(&fa, cwd);
    posix_spawnattr_init(&at);
    sigemptyset(&none);
    sigemptyset(&dfl); sigaddset(&dfl, SIGPIPE); sigaddset(&dfl, SIGCHLD);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &dfl);
    posix_spawnattr_setpgroup(&at, 0);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    err = argc && argv[argc - 1] ? posix_spawn(&pid, path, &fa, &at, argv, envp) : EINVAL;
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    close(pfd[1]);
    if (err) close(pfd[0]);
  }
  free(argv); free(envp);
  if (err) { int32_t e = err; send_frame('F', id, &e, 4); return; }
  uint32_t upid = (uint32_t)pid;
  send_frame('P', id, &upid, 4);
  fcntl(pfd[0], F_SETFL, O_NONBLOCK);
  if (njobs == capjobs) { capjobs = capjobs ? capjobs * 2 : 64; jobs = realloc(jobs, capjobs * sizeof *jobs); }
  jobs[njobs++] = (job_t){id, pid, pfd[0], 0, 0, 0};
}

static void kill_job(uint32_t id, const unsigned char *p, uint32_t n) {
  int32_t sig;
  if (n < 4) return;
  memcpy(&sig, p, 4);
  /* Also after the command itself exited: a background child may still hold its output open. */
  for (size_t i = 0; i < njobs; i++) if (jobs[i].id == id) kill(-jobs[i].pid, sig);
}

static void pause_job(uint32_t id, int paused) {
  for (size_t i = 0; i < njobs; i++) if (jobs[i].id == id) jobs[i].paused = paused;
}

/* The server is gone: nobody will wait for, kill or report these commands any more. */
static int end_all(void) {
  for (size_t i = 0; i < njobs; i++) kill(-jobs[i].pid, SIGKILL);
  flush_frames();
  return 0;
}

static int read_requests(void) {
  if (incap - inlen < 65536) { incap = incap ? incap * 2 : 131072; inbuf = realloc(inbuf, incap); }
  ssize_t r = read(0, inbuf + inlen, incap - inlen);
  if (r == 0) return 0;
  if (r < 0) return errno == EINTR || errno == EAGAIN;
  inlen += (size_t)r;
  size_t off = 0;
  while (inlen - off >= 9) {
    uint32_t len, id;
    memcpy(&len, inbuf + off, 4);
    if (inlen - off < 4 + (size_t)len) break;
    char type = (char)inbuf[off + 4];
    memcpy(&id, inbuf + off + 5, 4);
    if (type == 'S') start_job(id, inbuf + off + 9, len - 5);
    else if (type == 'K') kill_job(id, inbuf + off + 9, len - 5);
    else if (type == 'Z' || type == 'R') pause_job(id, type == 'Z');
    off += 4 + len;
  }
  memmove(inbuf, inbuf + off, inlen - off);
  inlen -= off;
  return 1;
}

int main(int argc, char **argv) {
  /* Commands get only stdin/stdout/stderr: drop whatever non-CLOEXEC fds we inherited. */
#ifdef SYS_close_range
  syscall(SYS_close_range, 3, ~0U, 0);
#endif
  /* PARENT_DIED: the kernel's word that the server died (PR_SET_PDEATHSIG). SIGINT, SIGTERM, SIGHUP
     and SIGQUIT sent to the server's whole process group (Ctrl-C in a terminal) are read and
     ignored: the server decides when its commands end, and ends them through us. Blocked, not
     ignored, so commands start with every signal at its default. */
  sigset_t watched;
  sigemptyset(&watched);
  int caught[] = {SIGCHLD, PARENT_DIED, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
  for (size_t k = 0; k < sizeof caught / sizeof *caught; k++) sigaddset(&watched, caught[k]);
  sigprocmask(SIG_BLOCK, &watched, NULL);
  signal(SIGPIPE, SIG_IGN);
  int sfd = signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
  prctl(PR_SET_PDEATHSIG, PARENT_DIED);
  /* The server may have died before prctl: then we already have another parent. */
  if (argc > 1 && getppid() != (pid_t)atol(argv[1])) return 0;
  fcntl(0, F_SETFD, FD_CLOEXEC);
  fcntl(1, F_SETFD, FD_CLOEXEC);
  devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  struct pollfd *pf = NULL;
  size_t cappf = 0;
  static unsigned char buf[65536];
  for (;;) {
    flush_frames();
    if (cappf < njobs + 2) { cappf = (njobs + 2) * 2; pf = realloc(pf, cappf * sizeof *pf); }
    pf[0] = (struct pollfd){0, POLLIN, 0};
    pf[1] = (struct pollfd){sfd, POLLIN, 0};
    /* A negative fd is skipped by poll: paused jobs are not read. */
    for (size_t i = 0; i < njobs; i++) pf[2 + i] = (struct pollfd){jobs[i].paused ? -1 : jobs[i].fd, POLLIN, 0};
    size_t polled = njobs;
    if (poll(pf, 2 + polled, -1) < 0) { if (errno == EINTR) continue; return 1; }
    /* Output first, then exits, so a job's 'X' always follows all its 'O'. Walk backwards:
       maybe_finish moves the last job into the finished slot. */
    for (size_t i = polled; i-- > 0;) {
      if (!pf[2 + i].revents) continue;
      job_t *j = &jobs[i];
      /* A bounded number of reads per round, so a pause or another job is served soon. */
      for (int reads = 0; reads < 16; reads++) {
        ssize_t r = read(j->fd, buf, sizeof buf);
        if (r > 0) { send_frame('O', j->id, buf, (uint32_t)r); continue; }
        if (r == 0) { close(j->fd); j->fd = -1; maybe_finish(i); }
        break;
      }
    }
    if (pf[1].revents) {
      struct signalfd_siginfo si;
      int ended = 0;
      while (read(sfd, &si, sizeof si) == sizeof si) ended |= si.ssi_signo == PARENT_DIED;
      if (ended) return end_all();
      int st; pid_t pid;
      while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
        for (size_t i = 0; i < njobs; i++)
          if (jobs[i].pid == pid) { jobs[i].exited = 1; jobs[i].status = st; maybe_finish(i); break; }
    }
    if (pf[0].revents && !read_requests()) return end_all();
  }
}
