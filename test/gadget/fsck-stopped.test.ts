// A fsck.vfat that does not finish (killed, or stopped by the time limit) must never pass for fsck's exit
// code 1 ("errors repaired"): the image would then be mounted unchecked. The gadget's check runs the
// fsck.vfat found on PATH; here that is a script that kills itself.
import assert from "node:assert/strict";
import { chmod, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { CardImage } from "../../src/device/gadget/image.js";
import { GadgetError } from "../../src/device/gadget/system.js";
import { removeDir, tempDir } from "../helpers.js";

let dir = "";
const savedPath = process.env.PATH;

before(async () => {
  dir = await tempDir("gadget-fsck-");
  await writeFile(join(dir, "fsck.vfat"), "#!/bin/sh\necho 'checking the card'\nkill -9 $$\n");
  await chmod(join(dir, "fsck.vfat"), 0o755);
  process.env.PATH = `${dir}:${savedPath}`;
});

after(async () => {
  process.env.PATH = savedPath;
  await removeDir(dir);
});

test("a fsck.vfat killed while checking stops the switch with a clear error", async () => {
  const logs: string[] = [];
  const image = new CardImage(join(dir, "card.img"), join(dir, "mnt"), (m) => logs.push(m));
  await assert.rejects(image.check(), (e: unknown) => {
    assert.ok(e instanceof GadgetError);
    assert.equal(e.code, "DEVICE_FSCK_STOPPED");
    assert.match(
      e.message,
      /^fsck\.vfat did not finish checking the card image .*card\.img \(killed by SIGKILL: checking the card\); check it by hand: fsck\.vfat -a /,
    );
    return true;
  });
  assert.deepEqual(logs, [], "nothing was logged as repaired");
});
