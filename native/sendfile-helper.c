/* The sendfile helper: sends a file to an FTP data connection with sendfile(2), as vsftpd does. The kernel moves
 * page-cache pages to the socket; a Node download instead reads each megabyte into a buffer and writes it out
 * again, two copies that were most of the device's CPU in a large download.
 *
 * Usage: sendfile-helper FILE OFFSET PARENT   with fd 3 the connected data socket (blocking or not: it is shared
 * with Node, whose sockets are non-blocking), PARENT the device's pid. Not fd 1: libuv makes a child's fds 0-2
 * blocking, which would change Node's own socket, the flag being shared.
 * Exit: 0 all sent; 1 the file could not be read (why on stderr); 2 the connection failed; 3 bad usage.
 * Stopped early with SIGKILL (ABOR, the session closing), and when the device dies: else it would go on holding
 * the connection and the card's file open. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <unistd.h>

enum { OUT = 3 };

/* Waits until the socket takes more bytes; 0, or -1 when the connection failed. */
static int writable(void) {
  struct pollfd p = {.fd = OUT, .events = POLLOUT};
  while (poll(&p, 1, -1) < 0)
    if (errno != EINTR) return -1;
  return (p.revents & (POLLERR | POLLHUP | POLLNVAL)) ? -1 : 0;
}

/* For a file system without sendfile: read and write. */
static int copy(int fd, off_t at) {
  static char buf[1 << 20];
  for (;;) {
    ssize_t n = pread(fd, buf, sizeof buf, at);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return perror("read"), 1;
    if (n == 0) return 0;
    at += n;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(OUT, buf + done, (size_t)(n - done));
      if (w > 0) done += w;
      else if (errno == EAGAIN) {
        if (writable() < 0) return 2;
      } else if (errno != EINTR) return 2;
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 4) return 3;
  char *end;
  long long offset = strtoll(argv[2], &end, 10);
  if (*argv[2] == '\0' || *end != '\0' || offset < 0) return 3;
  /* Dies with the device; a device that died before this line is no longer the parent. */
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != (pid_t)atol(argv[3])) return 2;
  signal(SIGPIPE, SIG_IGN); /* a closed connection is EPIPE: exit 2 */
  int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
  if (fd < 0) return perror("open"), 1;
  off_t at = (off_t)offset;
  for (;;) {
    ssize_t n = sendfile(OUT, fd, &at, 1 << 30);
    if (n > 0) continue;
    if (n == 0) return 0;
    switch (errno) {
      case EINTR:
        continue;
      case EAGAIN:
        if (writable() < 0) return 2;
        continue;
      case EINVAL:
      case ENOSYS:
        if (at == (off_t)offset) return copy(fd, at); /* nothing sent yet */
        /* fall through */
      default:
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) return 2;
        return perror("sendfile"), 1;
    }
  }
}
