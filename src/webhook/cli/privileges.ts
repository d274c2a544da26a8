// -setuid / -setgid: drop root after the listening socket is open, group first (once the user
// id changes, the group can no longer be changed). Supplementary groups are cleared too, so the
// process keeps none of root's groups.

/** Throws with the system's reason when the change is refused. */
export function dropPrivileges(uid: number, gid: number): void {
  if (!process.setgid || !process.setuid) throw new Error("changing user and group is not supported on this platform");
  process.setgroups?.([gid]);
  process.setgid(gid);
  process.setuid(uid);
}
