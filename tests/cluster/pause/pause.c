/*
 * The pod sandbox's only process, for the cluster tests' containerd (its `sandbox_image`).
 *
 * It holds the pod's namespaces open, so it does nothing but wait: for SIGINT or SIGTERM, on
 * which it exits, and for SIGCHLD, on which it reaps every child that has ended (in a pod that
 * shares its PID namespace it is PID 1, and orphans become its children). Built static, so the
 * image is this one file.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {.sa_handler = on_stop};
  struct sigaction child = {.sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &stop, NULL) || sigaction(SIGTERM, &stop, NULL) ||
      sigaction(SIGCHLD, &child, NULL)) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
