// One sync per device at a time on this machine: two syncs at once would switch the device under each other (the
// first to finish takes the card back while the other still uploads). A second `framefi sync` to the same device
// waits for the first. The lock is a file in the temp folder, named for the device, holding the owner's pid; a
// lock whose owner is gone is taken over.
import { createHash } from "node:crypto";
import { open, readFile, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { processExists } from "../../shared/process.js";

/** Takes the lock of the device at `url`, waiting while another live process holds it. Resolves to its release. */
export async function lockDevice(url: string, signal: AbortSignal, waiting: () => void): Promise<() => Promise<void>> {
  const path = join(tmpdir(), `framefi-sync-${createHash("sha256").update(url).digest("hex").slice(0, 16)}.lock`);
  let told = false;
  for (;;) {
    if (signal.aborted) throw signal.reason;
    try {
      const file = await open(path, "wx");
      await file.writeFile(String(process.pid));
      await file.close();
      return () => unlink(path).catch(() => undefined);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
    }
    const owner = Number(await readFile(path, "utf8").catch(() => ""));
    // An empty file is a lock being written this instant: wait for it like a live one.
    if (owner > 0 && !processExists(owner)) {
      await unlink(path).catch(() => undefined);
      continue;
    }
    if (!told) waiting();
    told = true;
    await new Promise((r) => setTimeout(r, 250));
  }
}
