// CPU caps for benchmarks: a cgroup v1 cpu group (cpu.cfs_quota_us under /sys/fs/cgroup/cpu, needs
// root) holding a process and everything it starts to a share of one core. On a shared machine
// whose speed varies, a cap makes CPU per unit of work, not the neighbours, set the rate.
import { existsSync } from "node:fs";
import { mkdir, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

export const CPU_CGROUPS = "/sys/fs/cgroup/cpu";
const PERIOD_US = 100_000;

export interface CpuCap {
  /** Moves `pid` into the group; what it starts from then on is in it too. */
  add(pid: number): Promise<void>;
  /** Removes the group (once its processes have exited). */
  remove(): Promise<void>;
}

/** A group named `name` held to `share` of one core, or undefined when the machine has no cgroup v1 cpu controller (or we may not make a group). */
export async function cpuCap(name: string, share: number): Promise<CpuCap | undefined> {
  if (!existsSync(join(CPU_CGROUPS, "cpu.cfs_quota_us"))) return undefined;
  const dir = join(CPU_CGROUPS, name);
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, "cpu.cfs_period_us"), String(PERIOD_US));
    await writeFile(join(dir, "cpu.cfs_quota_us"), String(Math.round(PERIOD_US * share)));
  } catch {
    return undefined;
  }
  return {
    add: (pid) => writeFile(join(dir, "cgroup.procs"), String(pid)),
    remove: () => rmdir(dir).catch(() => undefined),
  };
}

export const NO_CGROUP = `this machine has no cgroup v1 cpu controller at ${CPU_CGROUPS} (or this user may not make a group there)`;
