// System errors as Go's syscall.Errno prints them (libuv's table lacks some, e.g. ENOEXEC, and
// words others differently).

const TEXT: Record<string, string> = {
  ENOENT: "no such file or directory",
  ENOEXEC: "exec format error",
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  ENOTDIR: "not a directory",
  EISDIR: "is a directory",
  EROFS: "read-only file system",
  E2BIG: "argument list too long",
  ETXTBSY: "text file busy",
  ELOOP: "too many levels of symbolic links",
  ENAMETOOLONG: "file name too long",
  ENOMEM: "cannot allocate memory",
  EAGAIN: "resource temporarily unavailable",
  EMFILE: "too many open files",
  EINVAL: "invalid argument",
  EADDRINUSE: "address already in use",
  EADDRNOTAVAIL: "cannot assign requested address",
};

/** Go's text for an error code ("ENOENT" → "no such file or directory"), or undefined for one it is not known for. */
export function errnoText(code: string | undefined): string | undefined {
  return code === undefined ? undefined : TEXT[code];
}

/** Go's text for a failed system call, or Node's message when the code is not known. */
export function errorText(err: NodeJS.ErrnoException): string {
  return errnoText(err.code) ?? err.message;
}

/** Go's text for the signal that ended a process ("signal: killed"). */
export function signalText(signal: NodeJS.Signals): string {
  return SIGNAL_TEXT[signal] ?? signal;
}

const SIGNAL_TEXT: Record<string, string> = {
  SIGKILL: "killed",
  SIGTERM: "terminated",
  SIGINT: "interrupt",
  SIGSEGV: "segmentation fault",
  SIGABRT: "aborted",
  SIGHUP: "hangup",
  SIGPIPE: "broken pipe",
};
