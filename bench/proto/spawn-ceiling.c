/* The machine's exec ceiling: posix_spawn("/bin/true") in a loop, N in flight, no pipes, no Node.
 *   cc -O2 -o /tmp/spawn-ceiling bench/proto/spawn-ceiling.c && /tmp/spawn-ceiling 8 8000 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
extern char **environ;
int main(int c, char **v) {
  int inflight = atoi(v[1]), total = atoi(v[2]), started = 0, done = 0;
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  char *argv[] = {"/bin/true", 0};
  while (done < total) {
    while (started - done < inflight && started < total) { pid_t p; posix_spawn(&p, "/bin/true", 0, 0, argv, environ); started++; }
    int st; wait(&st); done++;
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
  printf("%d in flight: %.0f spawns/s\n", inflight, total / s);
}
